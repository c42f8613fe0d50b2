// Per-case statuses, benchdnn-compatible (docs/output.md#statuses).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "core/enum_table.hpp"

namespace sdpa {

/// Outcome of one case. Exactly one per case, on every path. PASSED only ever means "checked
/// and right"; a case that ran without a check (--mode=P) is EXECUTED (benchdnn's name for it).
/// The order is benchdnn's summary line's (passed, skipped, mistrusted, unimplemented,
/// invalid_arguments, failed, listed), EXECUTED last: the summary prints the table in order.
enum class Status { passed, skipped, mistrusted, unimplemented, invalid_arguments, failed, listed, executed };

/// One status: its spelling ("PASSED") and what it means, for --help and --list-statuses.
using StatusRow = DescribedName<Status>;

/// Every status, in Status order: the one list of them. --help, --list-statuses, --fail-on, the
/// summary's counts and the reports derive theirs from it (docs/output.md#statuses says more).
inline constexpr auto kStatuses = std::to_array<StatusRow>({
    {Status::passed, "PASSED", "checked and right"},
    {Status::skipped, "SKIPPED", "the platform cannot run it (the reason says why)"},
    {Status::mistrusted, "MISTRUSTED", "matches, but too little signal to trust (a mostly-zero reference, a saturated "
        "fp8 value)"},
    {Status::unimplemented, "UNIMPLEMENTED", "no kernel, or a graph sdpabench does not model"},
    {Status::invalid_arguments, "INVALID_ARGUMENTS", "the case breaks a rule"},
    {Status::failed, "FAILED", "mismatch (output, worst element (b,h,i,j), got, expected, |err|, bound), crash or "
        "timeout"},
    {Status::listed, "LISTED", "listed, not run (--mode=L)"},
    {Status::executed, "EXECUTED", "ran without a check (--mode=P)"},
});

/// kStatuses's spellings as an enum table (core/enum_table.hpp): parsing and printing.
inline constexpr auto kStatusNames = described_names(kStatuses);

inline std::string_view format_as(Status v) { return enum_name(kStatusNames, v); }

/// True for the statuses of a case that is wrong or was not tested as asked (FAILED, UNIMPLEMENTED,
/// INVALID_ARGUMENTS): CP times no such case. The run's exit code is exit_code()'s table
/// (driver/exit_code.hpp).
constexpr bool is_error(Status s) {
    return s == Status::failed || s == Status::unimplemented || s == Status::invalid_arguments;
}

}  // namespace sdpa
