// Expected results (--expect=FILE): known vendor bugs as data, so that CI stays green while a
// bug is open, says XPASS when it is fixed, and says NOT_APPLICABLE where it cannot reproduce.
// docs/ci.md#expected-results---expectfile describes the file; cases/known/expected.jsonl is the project's own.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

class Backend;

/// One entry of an --expect file: one JSON object per line, e.g.
///   {"match": "*n=amx_bf16_bcast_*", "backend": "onednn", "status": "FAILED", "reason": "oneDNN 3.13.2 AMX bug",
///    "requires": {"cpu_flags": "amx_bf16", "onednn": "3.13.2"}, "allow_xpass": false}
/// '#' lines and blank lines are skipped.
struct Expectation {
    std::string match;   ///< fnmatch(3) glob over case ids (CaseResult::id); no metacharacter: the exact id
    Status status = Status::failed;  ///< the expected status: FAILED, MISTRUSTED, SKIPPED, UNIMPLEMENTED or INVALID_ARGUMENTS
    std::string reason;  ///< why (a vendor bug number, ...); required
    /// "requires": the platform the entry applies to, every item required: "cpu_flags": space-separated
    /// /proc/cpuinfo flags; a library key of the backend registry ("onednn", "cudnn", "torch":
    /// backends/registry.hpp library_keys): a prefix, by components, of its
    /// library_version() ("3.13" covers "3.13.2").
    std::vector<std::pair<std::string, std::string>> needs;
    bool allow_xpass = false;  ///< an XPASS does not fail the run (a bug that does not always show)
    std::string where;         ///< "FILE:LINE" of the entry
    std::string backend{};     ///< "backend": fnmatch(3) glob over the case's backend name ("" = any)
    /// "failure": fnmatch(3) glob over the failure keys "OUTPUT:CHECK" (driver/minimize.hpp
    /// failure_keys, e.g. "stats:bound"); a FAILED case is XFAIL only when every one of its failures
    /// matches, so an entry for one known bug cannot hide another failure of the same case ("" = any;
    /// only with status FAILED, else load_expectations throws).
    std::string failure{};
};

/// Reads an --expect file (a regular file). Throws std::runtime_error "FILE:LINE: error: ..."
/// naming the rule for a line that is not one JSON object, an unknown key or a value of the
/// wrong type, an empty match/status/reason, a status that cannot be expected (PASSED,
/// EXECUTED, LISTED), an unknown requirement key or a malformed requirement value (cpu_flags:
/// flag names; a library: a version "3", "3.13", "3.13.2").
std::vector<Expectation> load_expectations(const std::string& path);

/// The platform facts "requires" is checked against: the CPU's flags and the library version of
/// each backend (made on first use, so a run that needs no fact loads no library).
class Platform {
public:
    Platform();
    ~Platform();
    /// nullopt when requirement `key` = `value` holds here, else what this platform has instead.
    std::optional<std::string> unmet(const std::string& key, const std::string& value);

private:
    std::vector<std::string> cpu_flags_;
    std::map<std::string, std::string> versions_;  ///< backend name -> library_version()
};

/// True when entry `x` covers the case with `id` (or `id` without its " #N" repeat suffix) on
/// `backend` (when the entry names one).
bool expectation_matches(const Expectation& x, const std::string& id, const std::string& backend);

/// Decides r.expect from the entries whose glob matches r.id (or r.id without its " #N" repeat
/// suffix) and whose "backend" glob, when given, matches r.info.backend: the first of them whose requirements hold decides: the expected status -> XFAIL;
/// PASSED (or MISTRUSTED where FAILED was expected: it no longer fails) -> XPASS; another status -> no outcome, a note saying what was expected. When none
/// holds: PASSED -> NOT_APPLICABLE (naming what the platform lacks), else no outcome and a note.
/// A timeout or a crash (r.timed_out, r.crashed) is never XFAIL: it is not the failure an
/// entry describes. Marks the entries used in `used` (same size as `entries`). r.id must be set.
void apply_expectations(const std::vector<Expectation>& entries, Platform& platform, CaseResult& r,
        std::vector<bool>& used);

}  // namespace sdpa
