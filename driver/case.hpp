// A case: one problem plus the knobs that say how to run it (backend, mode).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/enum_table.hpp"
#include "core/problem.hpp"

namespace sdpa {

/// What to do with a case. C: check correctness; L: list (print the repro, run nothing);
/// P: performance only (time the vendor run, no check); CP: check, then time.
/// B: determinism: check correctness, run the vendor a second time on the same inputs and
/// require bitwise-equal outputs (driver/determinism.hpp).
enum class Mode { C, L, P, CP, B };
inline constexpr std::array<EnumName<Mode>, 5> kModeNames{
    {{Mode::C, "C"}, {Mode::L, "L"}, {Mode::P, "P"}, {Mode::CP, "CP"}, {Mode::B, "B"}}};
inline std::string_view format_as(Mode v) { return enum_name(kModeNames, v); }

/// Default backend of the case language.
inline constexpr std::string_view kDefaultBackend = "onednn";

/// One expanded case of a batch. `where` is "file:line" (or "command line") of the
/// descriptor that produced it.
struct Case {
    Problem prb;
    std::string backend{kDefaultBackend};
    Mode mode = Mode::C;
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
    /// --dropout given for an imported graph: the values of its Dropout ops (nullopt: the
    /// importer's defaults, graph/json_import.hpp).
    std::optional<Dropout> graph_dropout;
    /// --seq-len-q=random / --seq-len-kv=random: the parser draws the per-batch lengths from the
    /// seed once the problem's B is known, then stores them in prb (so the repro lists them).
    bool random_seq_len_q = false, random_seq_len_kv = false;
};

/// The complete, runnable repro of a case: non-default run knobs (--mode=L is left out, so a
/// listed repro runs the case), problem knobs, descriptor; for an imported graph, the
/// rewrite knobs, --fill/--seed and --case=FILE.
/// E.g. "--backend=ref --dir=bwd --dt=bf16 b2hq8hkv2sq128skv256d64".
inline std::string repro(const Case& c) {
    std::string s;
    if (c.backend != kDefaultBackend) s += fmt::format("--backend={} ", c.backend);
    // L only lists: its repro is the line that runs the case.
    if (c.mode != Mode::C && c.mode != Mode::L) s += fmt::format("--mode={} ", c.mode);
    if (!c.graph_file.empty()) {  // imported graph: the rewrites and fill knobs, then the file
        if (c.graph_dt) s += fmt::format("--dt={} ", *c.graph_dt);
        if (const std::string f = fp8_descales_name(c.prb.fp8); !f.empty()) s += fmt::format("--fp8-descale={} ", f);
        if (!c.dt_ids.empty()) s += fmt::format("--dt={} ", c.dt_ids);
        if (!c.op_kinds.empty()) s += fmt::format("--op-kind={} ", c.op_kinds);
        if (!c.op_attrs.empty()) s += fmt::format("--op-attrs={} ", c.op_attrs);
        if (!c.properties.empty()) s += fmt::format("--tensor-property={} ", c.properties);
        if (c.mb > 0) s += fmt::format("--mb={} ", c.mb);
        if (!c.in_shapes.empty()) s += fmt::format("--in-shapes={} ", c.in_shapes);
        if (c.graph_dropout) s += fmt::format("--dropout={} ", dropout_name(*c.graph_dropout));
        if (c.prb.fill != Problem{}.fill) s += fmt::format("--fill={} ", c.prb.fill);
        if (c.prb.seed != Problem{}.seed) s += fmt::format("--seed={} ", c.prb.seed);
        return s + fmt::format("--case={}", c.graph_file);
    }
    const std::string k = knobs(c.prb);
    if (!k.empty()) s += k + ' ';
    s += descriptor(c.prb.dims, c.prb.name);
    return s;
}

}  // namespace sdpa
