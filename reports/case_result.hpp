// Plain data handed from the driver to the reporters: one record per case, one summary.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "core/status.hpp"

namespace sdpa {

/// The one result of one case, on every path (parse error, validation, skip, run, compare).
struct CaseResult {
    std::size_t index = 0;      ///< 0-based position in the batch
    Status status = Status::passed;
    std::string reason;         ///< for any status but PASSED/LISTED: why
    double ms = 0;              ///< wall time of the whole case (fill, run, reference, compare)
    std::string repro;          ///< complete runnable repro ("" for a parse error)
    std::vector<OutputCheck> checks;   ///< per-output verdicts (C mode)
    std::vector<std::string> notes;    ///< backend notes shown with -v
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
