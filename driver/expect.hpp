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
#include "reports/result_fields.hpp"

namespace sdpa {

class Backend;

/// One test of a condition on one field (Condition): a glob (fnmatch(3)) over the field's text
/// form ("!GLOB": it does not match), a comparison of its number with a number (">= 2", "< 8", "== 1", "!= 1", or a bare
/// number), an inclusive range ("2..8"), or a flag (true/false).
struct FieldTest {
    enum class Kind { glob, compare, range, flag };
    Kind kind = Kind::glob;
    std::string glob;
    std::string op;         ///< compare: ">=", ">", "<=", "<", "==", "!="
    double a = 0, b = 0;    ///< compare: a; range: [a, b]
    bool flag = false;
};

/// A field and the tests any one of which must hold: "B": ">= 2" is one test, "dt": ["bf16",
/// "f16"] two. The field is a result field's column (reports/result_fields.hpp: backend, dt, B,
/// H_q, isa, impls, mask_tensor, ...) or a knob (driver/knobs.hpp, by its name, '_' or '-':
/// "mask-shape", "layout", "strides", "dmask", ...). A field with no value for a case (a knob that
/// does not apply, impls of a case that never reached its vendor, dropout without dropout) meets
/// no test but a negated glob ("!GLOB": no value matches no glob).
struct FieldCondition {
    std::string key;
    bool knob = false;  ///< a knob, read from CaseInfo::knobs
    const ResultField* field = nullptr;  ///< the result field (reports/result_fields.hpp), when not a knob
    std::vector<FieldTest> any;
};

/// "when": every field condition holds, and when `any_of` is not empty one of its conditions does.
struct Condition {
    std::vector<FieldCondition> all;
    std::vector<Condition> any_of;
};

/// True when `c` holds for the result `r` (Condition; an empty condition holds for every result).
bool condition_holds(const Condition& c, const CaseResult& r);

/// One entry of an --expect file: one JSON object per line, e.g.
///   {"match": "*n=amx_bf16_bcast_*", "backend": "onednn", "status": "FAILED", "reason": "oneDNN 3.13.2 AMX bug",
///    "requires": {"cpu_flags": "amx_bf16", "onednn": "3.13.2"}, "allow_xpass": false}
///   {"when": {"backend": "onednn", "dt": "bf16", "B": ">= 2", "isa": "*amx*"}, "status": "FAILED", "reason": "..."}
/// '#' lines and blank lines are skipped.
struct Expectation {
    /// fnmatch(3) glob over case ids (CaseResult::id); no metacharacter: the exact id; "" when the
    /// entry has a condition only.
    std::string match;
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
    /// "failure": fnmatch(3) globs (a string, or a list of them) over the failure keys
    /// "OUTPUT:CHECK" (driver/minimize.hpp failure_keys, e.g. "stats:bound"); a FAILED case is
    /// XFAIL only when every one of its failures matches one of them, so an entry for one known bug
    /// cannot hide another failure of the same case (empty = any; only with status FAILED, else
    /// load_expectations throws).
    std::vector<std::string> failure{};
    /// "when": the conditions under which the bug shows, over the fields the result has
    /// (docs/ci.md#expected-results---expectfile). An entry applies when its match (if any) and its
    /// condition (if any) both hold; at least one of the two is given.
    Condition when{};
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

/// True when entry `x` covers result `r`: its glob matches r.id (or r.id without its " #N" repeat
/// suffix), its "backend" glob r.info.backend, and its condition holds (each where given).
bool expectation_matches(const Expectation& x, const CaseResult& r);

/// True when entry `x` can cover a case with `id` on `backend` before it ran: its glob and backend
/// match; its condition is not judged (what it reads may come only from the run). The unused-entry
/// count of a sharded run asks this of the other shards' cases.
bool expectation_may_match(const Expectation& x, const std::string& id, const std::string& backend);

/// True when entry `x` can cover the case whose result before its run is `before_run` (its id and
/// CaseInfo from driver/case_info.hpp case_info): as expectation_matches, with every field the run
/// has not set yet (isa, impls, mask_tensor, ...) meeting every test.
bool expectation_may_match(const Expectation& x, const CaseResult& before_run);

/// Decides r.expect from the entries whose glob matches r.id (or r.id without its " #N" repeat
/// suffix) and whose "backend" glob, when given, matches r.info.backend: the first of them whose requirements hold decides: the expected status -> XFAIL;
/// PASSED (or MISTRUSTED where FAILED was expected: it no longer fails) -> XPASS; another status -> no outcome, a note saying what was expected. When none
/// holds: PASSED -> NOT_APPLICABLE (naming what the platform lacks), else no outcome and a note.
/// A timeout or a crash (r.timed_out, r.crashed) is never XFAIL: it is not the failure an
/// entry describes. Marks the entries used in `used` (same size as `entries`). r.id must be set.
void apply_expectations(const std::vector<Expectation>& entries, Platform& platform, CaseResult& r,
        std::vector<bool>& used);

}  // namespace sdpa
