// A case: one problem plus the knobs that say how to run it (backend, mode).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backends/registry.hpp"  // kDefaultBackend
#include "core/cpu_isa.hpp"
#include "core/enum_table.hpp"
#include "core/problem.hpp"

namespace sdpa {

/// What to do with a case. C: check correctness; L: list (print the repro, run nothing);
/// P: performance only (time the vendor run, no check); CP: check, then time.
/// B: determinism: check correctness, run the vendor a second time on the same inputs and
/// require bitwise-equal outputs (driver/determinism.hpp).
enum class Mode { C, L, P, CP, B };
/// Every mode with what it does (--mode's help is built from it).
inline constexpr auto kModes = std::to_array<DescribedName<Mode>>({
    {Mode::C, "C", "check correctness"},
    {Mode::L, "L", "list the repro lines, run nothing"},
    {Mode::P, "P", "time only"},
    {Mode::CP, "CP", "check, then time"},
    {Mode::B, "B", "C, then a second run that must be bitwise equal"},
});
inline constexpr auto kModeNames = described_names(kModes);
inline std::string_view format_as(Mode v) { return enum_name(kModeNames, v); }

/// One expanded case of a batch. `where` is "file:line" (or "command line") of the
/// descriptor that produced it.
struct Case {
    Problem prb;
    std::string backend{kDefaultBackend};
    Mode mode = Mode::C;
    /// --cpu-isa: the level the vendor's CPU dispatch is capped at for this case (CpuIsa::none:
    /// no cap). A process caps its vendor once, so the driver runs each level's cases in a
    /// process of that level (driver/worker.hpp).
    CpuIsa cpu_isa = CpuIsa::none;
    /// --check=sample:N: the reference computes and compares N query rows and N key rows of every
    /// head (ref/row_sample.hpp, docs/trust.md#sampled-checks); 0: --check=full, every row.
    std::int64_t sample_rows = 0;
    /// --mode=L given on the command line: the run lists every case whatever mode its batch file
    /// set; `mode` keeps the mode the case would run in, which its repro names.
    bool list_only = false;
    std::string where;  ///< "FILE:LINE:COL" of the token that made it, "" from the command line
    /// Imported graph (--case=FILE.json, graph/json_import.hpp): the file as given
    /// (relative to the current directory), empty for descriptor cases. prb was derived from it.
    std::string graph_file;
    std::optional<DType> graph_dt;  ///< --dt given explicitly: rewrites an imported graph's types
    std::string in_shapes;          ///< --in-shapes rewrite of an imported graph (benchdnn syntax)
    std::string dt_ids;             ///< --dt=ID:DT+... per-tensor rewrite of an imported graph (benchdnn)
    std::string op_kinds;           ///< --op-kind=ID:KIND+... rewrite of an imported graph (benchdnn)
    std::string op_attrs;           ///< --op-attrs=ID:ATTR:VALUE+... rewrite of an imported graph (benchdnn)
    std::string properties;         ///< --tensor-property=ID:PROP+... rewrite of an imported graph (benchdnn)
    std::int64_t mb = 0;            ///< --mb rewrite of an imported graph (0: keep)
    /// --expected-n-partitions: the partition count the vendor's plan must have (0: unchecked).
    std::int64_t expected_partitions = 0;
    /// --dropout given for an imported graph: the values of its Dropout ops (nullopt: the
    /// importer's defaults, graph/json_import.hpp).
    std::optional<Dropout> graph_dropout;
    /// --seq-len-q=random / --seq-len-kv=random: the parser draws the per-batch lengths from the
    /// seed once the problem's B is known, then stores them in prb (so the repro lists them).
    bool random_seq_len_q = false, random_seq_len_kv = false;
};

/// True when `c` is only listed: --mode=L, or --mode=L on the command line (Case::list_only).
inline bool listing(const Case& c) { return c.mode == Mode::L || c.list_only; }

/// True when `c` is timed (--mode=P or CP, not only listed): a run with such a case samples the
/// machine's noise (driver/run_context.hpp).
inline bool timed(const Case& c) { return (c.mode == Mode::P || c.mode == Mode::CP) && !listing(c); }

/// The complete, runnable repro of a case: the run knobs (--backend, --mode; --mode=L is left out,
/// so a listed repro runs the case) and the problem knobs that differ from their defaults, in
/// knob-table order (driver/knobs.cpp prints them), then the descriptor; for an imported graph
/// the knobs of the graph scope (rewrites, --dt, --fill, --seed, --dropout) and --case=FILE.
/// E.g. "--backend=ref --dir=bwd --dt=bf16 b2hq8hkv2sq128skv256d64".
std::string repro(const Case& c);

}  // namespace sdpa
