// The run's exit code and what decides it (--fail-on): the driver's, from the run's Summary
// (docs/output.md#exit-codes; one table, here).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// Exit codes of a run (docs/output.md#exit-codes; one table, here).
enum ExitCode : int {
    kExitOk = 0,        ///< nothing in --fail-on happened
    kExitFailed = 1,    ///< a kernel is wrong: a case FAILED that no --expect entry expected
    kExitUsage = 2,     ///< bad command line (nothing ran)
    kExitUntested = 3,  ///< the run could not test what was asked: INVALID_ARGUMENTS, UNIMPLEMENTED, a
                        ///< --timeout-per-case kill, a file that could not be written
    kExitXpass = 4,     ///< an expected failure PASSED (XPASS) and its entry does not allow it
    kExitFailOn = 5,    ///< a status named by --fail-on beyond the default (e.g. SKIPPED, MISTRUSTED)
    kExitReportIncomplete = 6,  ///< every case ran, but a report does not hold them all (a file that could
                                ///< not be written, a results store that stayed away: cases in its spool)
};

/// Each exit code with its meaning for --help (docs/output.md#exit-codes says the same at length);
/// "{untested}" stands for untested_statuses().
inline constexpr std::array<std::pair<ExitCode, std::string_view>, 7> kExitCodeMeanings{{
    {kExitOk, "nothing in --fail-on happened"},
    {kExitFailed, "a case FAILED (a kernel is wrong)"},
    {kExitUsage, "bad usage"},
    {kExitUntested, "the run could not test what was asked ({untested}, a timeout, an unwritable file)"},
    {kExitXpass, "XPASS"},
    {kExitFailOn, "another status named by --fail-on"},
    {kExitReportIncomplete, "a report is incomplete (the summary's 'incomplete' lines; a store's cases in its spool)"},
}};

/// What fails the run (--fail-on). FAILED always does; the default adds the other is_error()
/// statuses, XPASS and "empty".
struct FailOn {
    std::array<bool, kStatusNames.size()> status{};
    std::array<bool, kExpectedNames.size()> expected{};
    /// "empty": --start or --match selecting no case fails the run (kExitUntested); in the default,
    /// so that a nightly job whose filter matches nothing is not green.
    bool empty = true;
    FailOn();  ///< the default
};

/// Parses --fail-on's comma list of lowercase status names (passed, mistrusted, skipped,
/// unimplemented, invalid_arguments, failed, listed, executed, xfail, xpass, not_applicable),
/// "empty" (a selection of no case) and "default"; the list replaces the default except that
/// FAILED always fails. nullopt with `err`
/// naming the bad item and the accepted names.
std::optional<FailOn> parse_fail_on(std::string_view list, std::string* err);

/// The accepted --fail-on names, for --help.
std::string fail_on_names();

/// `f` in --fail-on's spelling ("failed,invalid_arguments,unimplemented,xpass,empty" for FailOn{}).
std::string fail_on_spelling(const FailOn& f);

/// The statuses of a case not tested as asked (is_error() but FAILED), "A, B": exit 3's.
std::string untested_statuses();

/// The run's exit code under `fail_on`: the lowest applicable code of kExitFailed (unexpected
/// FAILED, not a timeout), kExitUntested, kExitXpass, kExitFailOn; kExitOk when none applies.
int exit_code(const Summary& s, const FailOn& fail_on);

}  // namespace sdpa
