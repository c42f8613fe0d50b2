// A case: one problem plus the knobs that say how to run it (backend, mode).
#pragma once

#include <array>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/enum_table.hpp"
#include "core/problem.hpp"

namespace sdpa {

/// What to do with a case. C: check correctness; L: list (print the repro, run nothing).
enum class Mode { C, L };
inline constexpr std::array<EnumName<Mode>, 2> kModeNames{{{Mode::C, "C"}, {Mode::L, "L"}}};
inline std::string_view format_as(Mode v) { return enum_name(kModeNames, v); }

/// Default backend of the case language.
inline constexpr std::string_view kDefaultBackend = "onednn";

/// One expanded case of a batch. `where` is "file:line" (or "command line") of the
/// descriptor that produced it.
struct Case {
    Problem prb;
    std::string backend{kDefaultBackend};
    Mode mode = Mode::C;
    std::string where;
    /// --seq-len-q=random / --seq-len-kv=random: the parser draws the per-batch lengths from the
    /// seed once the problem's B is known, then stores them in prb (so the repro lists them).
    bool random_seq_len_q = false, random_seq_len_kv = false;
};

/// The complete, runnable repro of a case: non-default run knobs (--mode=L is left out, so a
/// listed repro runs the case), problem knobs, descriptor.
/// E.g. "--backend=ref --dir=bwd --dt=bf16 b2hq8hkv2sq128skv256d64".
inline std::string repro(const Case& c) {
    std::string s;
    if (c.backend != kDefaultBackend) s += fmt::format("--backend={} ", c.backend);
    // L only lists: its repro is the line that runs the case.
    if (c.mode != Mode::C && c.mode != Mode::L) s += fmt::format("--mode={} ", c.mode);
    const std::string k = knobs(c.prb);
    if (!k.empty()) s += k + ' ';
    s += descriptor(c.prb.dims, c.prb.name);
    return s;
}

}  // namespace sdpa
