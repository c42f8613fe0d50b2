// Plain data handed from the driver to the reporters: one record per case, one summary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "core/status.hpp"
#include "core/timing_stats.hpp"

namespace sdpa {

/// What a case was, as text for reports and perf templates (empty for a parse error).
struct CaseInfo {
    std::string backend, engine;  ///< e.g. "onednn", "cpu"
    std::string mode;             ///< C, P, CP, L
    std::string dir, dt, mask;    ///< knob spellings, e.g. "bwd", "bf16", "causal_tl"
    std::string prb;              ///< descriptor without the name, e.g. "b1hq32hkv8sq4096d128"
    std::string name;             ///< n=NAME or ""
    std::string dropout;          ///< --dropout spelling "P:SEED:OFFSET", "" without dropout
};

/// What the dropout checks saw (cases with --dropout, C mode): the mask the reference was fed,
/// the generator-free statistics on it, and every failed dropout rule (README: Dropout).
struct DropoutReport {
    std::string mask;                   ///< DropoutMask::describe() of that mask
    MaskStatistics stats;               ///< core/dropout.hpp mask_statistics
    std::vector<std::string> failures;  ///< failed rules (statistics, fwd/bwd mask, p = 0, seed)
};

/// The one result of one case, on every path (parse error, validation, skip, run, compare).
struct CaseResult {
    std::size_t index = 0;      ///< 0-based position in the batch
    Status status = Status::passed;
    std::string reason;         ///< for any status but PASSED/LISTED: why
    double ms = 0;              ///< wall time of the whole case (fill, run, reference, compare)
    std::string repro;          ///< complete runnable repro ("" for a parse error)
    std::vector<OutputCheck> checks;   ///< per-output verdicts (C mode)
    std::vector<std::string> notes;    ///< backend notes shown with -v
    CaseInfo info;                     ///< backend, dir, dt, ... as text
    bool checked = false;              ///< outputs were compared (C and CP modes)
    std::int64_t flops = 0;            ///< core/flops.hpp flops() (0 for an invalid case)
    std::int64_t bytes = 0;            ///< core/flops.hpp bytes_moved()
    std::optional<PerfResult> perf;    ///< timings and rates (P and CP modes, when it ran)
    std::optional<DropoutReport> dropout;  ///< cases with --dropout that were checked
};

/// Counts per status over a run.
struct Summary {
    std::array<std::size_t, 7> counts{};  ///< indexed by Status
    std::size_t tests = 0;
    void add(Status s) {
        ++counts[static_cast<std::size_t>(s)];
        ++tests;
    }
    std::size_t operator[](Status s) const { return counts[static_cast<std::size_t>(s)]; }
    /// Exit status: 1 when any case FAILED, UNIMPLEMENTED or INVALID_ARGUMENTS, else 0.
    int exit_code() const {
        return ((*this)[Status::failed] + (*this)[Status::unimplemented] + (*this)[Status::invalid_arguments]) > 0 ? 1 : 0;
    }
};

}  // namespace sdpa
