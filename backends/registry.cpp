// The only place that knows which backends exist and which are compiled in (registry.hpp).
#include "backends/registry.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/faulty/faulty_backend.hpp"
#ifdef SDPABENCH_HAVE_ONEDNN
#include "backends/onednn/onednn_backend.hpp"
#endif
#include "backends/ref/ref_backend.hpp"
#ifdef SDPABENCH_HAVE_CUDNN
#include "backends/cudnn/cudnn_backend.hpp"
#endif
#include "backends/test/test_backends.hpp"
#include "backends/torch/torch_backend.hpp"

namespace sdpa {

namespace {

/// A backend this build lacks: every case SKIPPED with the registry's reason.
class MissingBackend final : public Backend {
public:
    MissingBackend(std::string name, std::string why) : name_(std::move(name)), why_(std::move(why)) {}
    std::string_view name() const override { return name_; }
    std::string version() const override { return fmt::format("{}: not in this build ({})", name_, why_); }
    std::optional<Unsupported> support(const Problem&) const override {
        return Unsupported{Status::skipped, fmt::format("backend {} is not compiled into this build: {}", name_, why_)};
    }
    std::unique_ptr<Plan> prepare(const Problem&, const SdpaInputs&) override {
        throw BackendError(Status::skipped, fmt::format("backend {} is not compiled into this build", name_));
    }

private:
    std::string name_, why_;
};

using Factory = std::unique_ptr<Backend> (*)(std::string_view);

/// A row; `family` and `listed` as in BackendRow.
BackendRow row(std::string name, Engine engine, Factory make, bool family = false, bool listed = true) {
    BackendRow r;
    r.name = std::move(name);
    r.engine = engine;
    r.make = make;
    r.family = family;
    r.listed = listed;
    return r;
}

/// The torch rows' `what`: "PyTorch's fused SDPA variants; math, flash on the CPU; ... on a CUDA
/// GPU" (kTorchVariants's names by device).
std::string torch_what() {
    std::vector<std::string_view> cpu, cuda;
    for (const TorchVariantInfo& v : kTorchVariants) (v.device == TorchDevice::cpu ? cpu : cuda).push_back(v.name);
    return fmt::format("PyTorch's fused SDPA variants; {} on the CPU; {} on a CUDA GPU", fmt::join(cpu, ", "),
            fmt::join(cuda, ", "));
}

std::vector<BackendRow> make_table() {
    std::vector<BackendRow> t;
    {
        BackendRow r = row(std::string(kDefaultBackend), Engine::cpu, nullptr);  // "onednn"
        r.library = "onednn";
        r.what = "CPU";
#ifdef SDPABENCH_HAVE_ONEDNN
        r.make = make_onednn_backend;
#else
        r.missing = "configured with -DSDPABENCH_ONEDNN=OFF or without oneDNN >= 3.9 (run scripts/setup.sh; "
                    "cmake/onednn.cmake)";
#endif
        t.push_back(std::move(r));
    }
    {
        BackendRow r = row("cudnn", Engine::gpu, nullptr);
        r.library = "cudnn";
        r.what = "NVIDIA GPU";
#ifdef SDPABENCH_HAVE_CUDNN
        r.make = make_cudnn_backend;
#else
        r.missing = "configured without the CUDA Toolkit, cuDNN 9 and the cuDNN frontend, or with "
                    "-DSDPABENCH_CUDNN=OFF (cmake/cudnn.cmake)";
#endif
        t.push_back(std::move(r));
    }
    for (const TorchVariantInfo& v : kTorchVariants) {
        BackendRow r = row(torch_backend_name(v), v.device == TorchDevice::cpu ? Engine::cpu : Engine::gpu, nullptr);
        r.prefix = kTorchPrefix;
        r.library = "torch";
        r.what = torch_what();
#ifdef SDPABENCH_HAVE_TORCH
        r.make = make_torch_backend;  // a CUDA row without a device is SKIPPED by the backend, with why
#else
        r.missing = "configured without libtorch (scripts/setup.sh installs it unless SDPABENCH_NO_TORCH=1; "
                    "cmake/torch.cmake)";
#endif
        t.push_back(std::move(r));
    }
    BackendRow reference = row(std::string(kRefBackend), Engine::cpu, [](std::string_view) -> std::unique_ptr<Backend> {
        return std::make_unique<RefBackend>();
    });
    reference.what = "the reference as a backend: the harness against itself";
    t.push_back(std::move(reference));
    BackendRow faulty = row(std::string(kFaultyPrefix), Engine::cpu, make_faulty_backend, true, false);
    faulty.prefix = kFaultyPrefix;
    faulty.kinds = fault_kind_names;
    faulty.what = "fault injection, docs/trust.md";
    t.push_back(std::move(faulty));
    BackendRow test = row(std::string(kTestPrefix), Engine::cpu, make_test_backend, true, false);
    test.prefix = kTestPrefix;
    test.kinds = test_backend_kinds;
    test.what = fmt::format("sdpabench's own tests: {}", test_backends_help());
    t.push_back(std::move(test));
    return t;
}

}  // namespace

const std::vector<BackendRow>& backend_table() {
    static const std::vector<BackendRow> table = make_table();
    return table;
}

std::string_view backend_knob_help() {
    static const std::string text = [] {
        std::vector<std::string> rows;
        std::string_view described;  // the prefix whose rows were described
        for (const BackendRow& r : backend_table()) {
            if (!r.prefix.empty() && r.prefix == described) continue;
            described = r.prefix;
            const std::string name = r.prefix.empty() ? r.name : fmt::format("{}{}", r.prefix, r.family ? "KIND" : "VARIANT");
            rows.push_back(fmt::format("{} ({})", name, r.what));
        }
        return fmt::format("vendor backend that runs the case: {}; a backend this build lacks runs its cases SKIPPED "
                           "with the reason (docs/knobs_run.md)", fmt::join(rows, ", "));
    }();
    return text;
}

std::vector<std::string> backends_needing_isolate() { return test_backends_needing_isolate(); }

std::string backend_list(const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t k = 0; k < names.size(); ++k)
        s += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + names[k];
    return s;
}

const BackendRow* find_backend_row(std::string_view name) {
    for (const BackendRow& r : backend_table())
        if (r.family ? name.starts_with(r.name) : name == r.name) return &r;
    return nullptr;
}

std::vector<std::string> backend_names() {
    std::vector<std::string> names;
    for (const BackendRow& r : backend_table())
        if (r.listed && r.compiled_in()) names.push_back(r.name);
    return names;
}

std::vector<std::string> missing_backend_names() {
    std::vector<std::string> names;
    for (const BackendRow& r : backend_table())
        if (r.listed && !r.compiled_in()) names.push_back(fmt::format("{} ({})", r.name, r.missing));
    return names;
}

std::unique_ptr<Backend> make_missing_backend(std::string name, std::string why) {
    return std::make_unique<MissingBackend>(std::move(name), std::move(why));
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
    const BackendRow* r = find_backend_row(name);
    if (!r) return nullptr;
    if (!r->compiled_in()) return make_missing_backend(std::string(name), r->missing);
    return r->make(name.substr(r->prefix.size()));
}

Engine engine_of(std::string_view name) {
    const BackendRow* r = find_backend_row(name);
    return r ? r->engine : Engine::cpu;
}

std::vector<std::string> family_names(std::string_view prefix) {
    std::vector<std::string> names;
    for (const BackendRow& r : backend_table())
        if (r.family && r.name == prefix && r.kinds)
            for (const std::string& k : r.kinds()) names.push_back(r.name + k);
    return names;
}

std::vector<std::string> library_keys() {
    std::vector<std::string> keys;
    for (const BackendRow& r : backend_table())
        if (!r.library.empty() && std::find(keys.begin(), keys.end(), r.library) == keys.end())
            keys.emplace_back(r.library);
    return keys;
}

std::string library_version_of(std::string_view key) {
    for (const BackendRow& r : backend_table())
        if (r.library == key && r.compiled_in())
            if (const auto be = make_backend(r.name)) return be->library_version();
    return "";
}

namespace {

/// The compiled-in listed backends whose CPU dispatch --cpu-isa caps (Backend::caps_cpu_isa).
std::vector<std::unique_ptr<Backend>> isa_backends() {
    std::vector<std::unique_ptr<Backend>> out;
    for (const BackendRow& r : backend_table())
        if (r.listed && !r.family && r.compiled_in())
            if (auto be = make_backend(r.name); be && be->caps_cpu_isa()) out.push_back(std::move(be));
    return out;
}

}  // namespace

std::optional<CpuIsa> best_cpu_isa() {
    for (const auto& be : isa_backends())
        if (const auto isa = be->cpu_isa()) return isa;
    return std::nullopt;
}

std::string cap_cpu_isa(CpuIsa level) {
    std::string why;
    for (const auto& be : isa_backends())
        if (std::string w = be->cap_cpu_isa(level); !w.empty()) why += (why.empty() ? "" : "; ") + w;
    return why;
}

}  // namespace sdpa
