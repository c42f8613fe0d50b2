// The backend registry: one table of every backend sdpabench knows, compiled into this build or
// not. It is the only place that knows which backends exist, which engine each runs on, and why a
// backend is missing from a build; parsing, --help, --version, the run context, the reports'
// engine column and the isolated child all ask it.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "core/enum_table.hpp"

namespace sdpa {

/// Where a backend's kernels run: the host CPU or a GPU.
enum class Engine { cpu, gpu };
inline constexpr std::array<EnumName<Engine>, 2> kEngineNames{{{Engine::cpu, "cpu"}, {Engine::gpu, "gpu"}}};
inline std::string_view format_as(Engine v) { return enum_name(kEngineNames, v); }

/// The prefixes of the backends whose names are PREFIX + KIND: the fault-injection kinds
/// (backends/faulty/), the test-only kinds (backends/test/) and PyTorch's variants
/// (backends/torch/). The registry alone spells them; each backend's factory is given the KIND.
inline constexpr std::string_view kFaultyPrefix = "faulty:", kTestPrefix = "test:", kTorchPrefix = "torch:";

/// The backend a case runs on when it names none (--backend's default): the name of the
/// registry's oneDNN row, spelled here only.
inline constexpr std::string_view kDefaultBackend = "onednn";

/// One row of the registry. A row names one backend ("onednn", "torch:flash") or, with `family`,
/// every name that starts with it ("faulty:" for faulty:KIND, "test:" for test:KIND).
struct BackendRow {
    std::string name;     ///< --backend spelling, or the family prefix (ends with ':')
    Engine engine = Engine::cpu;
    bool family = false;  ///< `name` is a prefix: the factory decides which kinds exist
    /// A vendor backend (--help's list, --version, the run context), not a harness-only kind.
    bool listed = true;
    /// The prefix of the row's name that its factory does not see ("torch:" for torch:flash, the
    /// family's prefix for a family, "" for a plain backend).
    std::string_view prefix;
    /// Makes the backend for `kind`, the name without `prefix` (nullptr: no such kind in a family).
    /// Null when the backend is not compiled into this build. Construction is cheap and never
    /// touches a device.
    std::unique_ptr<Backend> (*make)(std::string_view kind) = nullptr;
    /// A family's kinds, in --help order (null for a single backend).
    std::vector<std::string> (*kinds)() = nullptr;
    /// The key a --expect "requires" names this backend's library version by (its
    /// Backend::library_version(); "onednn", "cudnn", "torch"), "" when it has none.
    std::string_view library;
    /// Why the backend is not in this build and how to get it (set when `make` is null).
    std::string missing;
    /// What it is, for the --backend knob's help ("CPU"); the rows of one prefix (torch:) share it.
    std::string what;
    bool compiled_in() const { return make != nullptr; }
};

/// Every row, in --help order: the vendor backends (compiled in or not), ref, then the families.
const std::vector<BackendRow>& backend_table();

/// The --backend knob's description: every row's name (a prefix's rows as PREFIX + VARIANT, a
/// family as PREFIX + KIND) with its `what`, and what a backend this build lacks does. Built
/// once; it lives as long as the process.
std::string_view backend_knob_help();

/// The backends that hang or crash a run without --isolate (the test family's
/// test_backends_needing_isolate), for --help.
std::vector<std::string> backends_needing_isolate();

/// "a", "a and b", "a, b and c": backend names in a sentence (messages, --help).
std::string backend_list(const std::vector<std::string>& names);

/// The row of `name` (an exact row, or the family whose prefix it starts with), or nullptr when
/// sdpabench has no such backend in any build.
const BackendRow* find_backend_row(std::string_view name);

/// Names of the listed backends compiled into this build, in --help order.
std::vector<std::string> backend_names();

/// Names of the listed backends sdpabench has but this build lacks, each with why
/// ("cudnn (no CUDA Toolkit at configure time: ...)"), for --help and --version.
std::vector<std::string> missing_backend_names();

/// A new backend for `name`, or nullptr when sdpabench has no such backend (an unknown name, or a
/// family kind its factory does not know). A listed backend that this build lacks is a backend
/// whose support() is SKIPPED with the row's `missing` reason, so that the case gets the same
/// status in-process and in an isolated child.
std::unique_ptr<Backend> make_backend(std::string_view name);

/// The engine of `name` ("cpu" for an unknown name, which never reaches a report as a case).
Engine engine_of(std::string_view name);

/// Every name of the family whose prefix is `prefix` (kFaultyPrefix, kTestPrefix), PREFIX + KIND
/// in its kinds' order; empty for a prefix that is no family's.
std::vector<std::string> family_names(std::string_view prefix);

/// The library keys a --expect "requires" may name (BackendRow::library), in table order, each
/// once; the rows this build lacks included, so that one file serves every build.
std::vector<std::string> library_keys();

/// The version of library `key` (Backend::library_version() of the first compiled-in row with
/// that key), "" when this build has none or it cannot be loaded.
std::string library_version_of(std::string_view key);

/// The best ISA level the backends whose CPU dispatch --cpu-isa caps (Backend::caps_cpu_isa:
/// oneDNN) dispatch to in this process; nullopt when the build has none. Asking fixes their ISA
/// for the process (cap_cpu_isa fails after it).
std::optional<CpuIsa> best_cpu_isa();

/// Caps every backend with ISA control at `level` for this process (Backend::cap_cpu_isa);
/// "" when all took it (or there is none), else why not.
std::string cap_cpu_isa(CpuIsa level);

/// The backend make_backend() gives for a row this build lacks: support() SKIPPED with "backend
/// NAME is not compiled into this build: WHY" for every problem, prepare() throws SKIPPED.
std::unique_ptr<Backend> make_missing_backend(std::string name, std::string why);

}  // namespace sdpa
