#include "driver/expect.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "driver/case_parser.hpp"
#include "core/host_cpu.hpp"
#include "core/parse_number.hpp"
#include "driver/knobs.hpp"
#include "driver/minimize.hpp"
#include "driver/suggest.hpp"
#include "reports/escape.hpp"
#include "reports/result_fields.hpp"

namespace sdpa {

namespace {

std::vector<std::string> words(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

/// "3", "3.13", "3.13.2": numbers separated by dots.
bool is_version(const std::string& v) {
    if (v.empty() || v.front() == '.' || v.back() == '.' || v.find("..") != std::string::npos) return false;
    return std::all_of(v.begin(), v.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) || ch == '.'; });
}

/// "3.13" covers "3.13.2" and "3.13": `want`'s dot-separated components are a prefix of `have`'s.
bool version_covers(const std::string& want, const std::string& have) {
    if (want.empty() || have.empty()) return false;
    if (have.rfind(want, 0) != 0) return false;
    return have.size() == want.size() || have[want.size()] == '.';
}

/// Every key a condition may name: the result fields' columns, then the knobs' names.
std::vector<std::string> condition_keys() {
    std::vector<std::string> keys;
    for (const ResultField& f : result_fields())
        if (f.column_field) keys.push_back(f.column);
    for (const Knob& k : knob_table()) keys.emplace_back(k.name);
    return keys;
}

/// The knob spelled `key` ('_' read as '-'), or nullptr.
const Knob* condition_knob(const std::string& key) {
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', '-');
    for (const Knob& k : knob_table())
        if (k.name == name) return &k;
    return nullptr;
}

/// What values a condition's field holds, as far as its tests can be checked when the file is read:
/// a number (B, S_q, ...), a flag (timed_out, ...), text (dt, isa, ...), or any (a knob's spelling,
/// which may be a number or a word; a field absent until a case runs, such as a timing).
enum class FieldKind { number, flag, text, any };

/// The kind of field `key` (a result field's column, else a knob): by the value an empty result gives.
FieldKind field_kind(const std::string& key) {
    const ResultField* f = find_result_field(key);
    if (!f) return FieldKind::any;
    const FieldValue v = f->get(CaseResult{});
    if (std::holds_alternative<std::int64_t>(v) || std::holds_alternative<double>(v)) return FieldKind::number;
    if (std::holds_alternative<bool>(v)) return FieldKind::flag;
    if (std::holds_alternative<std::monostate>(v)) return FieldKind::any;
    return FieldKind::text;
}

/// One test from a JSON value: a string (a comparison "OP N", a range "A..B", else a glob), a
/// number (== it) or a flag, checked against the kind of its field. Throws std::runtime_error
/// naming what is wrong: a test no value of the field could meet is an error, not an entry that
/// silently never matches.
FieldTest parse_test(const std::string& key, const nlohmann::json& v) {
    const FieldKind kind = field_kind(key);
    const auto refuse = [&](std::string_view why) {
        return std::runtime_error(fmt::format("\"when\": \"{}\": {} ({} is {})", key, why, key,
                kind == FieldKind::number ? "a number" : kind == FieldKind::flag ? "true or false" : "text"));
    };
    FieldTest t;
    if (v.is_boolean()) {
        if (kind == FieldKind::number || kind == FieldKind::text) throw refuse(fmt::format("{} is a flag test", v.dump()));
        t.kind = FieldTest::Kind::flag;
        t.flag = v.get<bool>();
        return t;
    }
    if (v.is_number()) {
        if (kind == FieldKind::text || kind == FieldKind::flag) throw refuse(fmt::format("{} is a number test", v.dump()));
        t.kind = FieldTest::Kind::compare;
        t.op = "==";
        t.a = v.get<double>();
        return t;
    }
    if (!v.is_string())
        throw std::runtime_error(fmt::format("\"when\": \"{}\": a test is a string, a number, true or false (got {})", key,
                v.dump()));
    const std::string text = v.get<std::string>();
    std::string_view rest = text;  // blanks around a test are not part of it
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
    if (rest.empty()) throw std::runtime_error(fmt::format("\"when\": \"{}\": an empty test", key));
    for (const char* op : {">=", "<=", "==", "!=", ">", "<"})
        if (rest.starts_with(op)) {
            std::string_view num = rest.substr(std::strlen(op));
            while (!num.empty() && num.front() == ' ') num.remove_prefix(1);
            const auto x = parse_number<double>(num);
            if (!x)
                throw std::runtime_error(fmt::format("\"when\": \"{}\": \"{}\" compares with '{}', which is not a number",
                        key, text, num));
            if (kind == FieldKind::text || kind == FieldKind::flag) throw refuse(fmt::format("\"{}\" is a comparison", text));
            t.kind = FieldTest::Kind::compare;
            t.op = op;
            t.a = *x;
            return t;
        }
    if (const auto dots = rest.find(".."); dots != std::string_view::npos && kind != FieldKind::text) {
        const auto lo = parse_number<double>(rest.substr(0, dots));
        const auto hi = parse_number<double>(rest.substr(dots + 2));
        if (!lo || !hi)
            throw std::runtime_error(fmt::format("\"when\": \"{}\": \"{}\" is not a range A..B of two numbers", key, text));
        if (*hi < *lo)
            throw std::runtime_error(fmt::format("\"when\": \"{}\": the range \"{}\" is empty ({} > {})", key, text,
                    *lo, *hi));
        if (kind == FieldKind::flag) throw refuse(fmt::format("\"{}\" is a range", text));
        t.kind = FieldTest::Kind::range;
        t.a = *lo;
        t.b = *hi;
        return t;
    }
    // A glob over a number's text can only hold digits, a sign, a point, an exponent and glob signs.
    if (kind == FieldKind::number && rest.find_first_not_of("0123456789.+-eE*?[]!") != std::string_view::npos)
        throw refuse(fmt::format("\"{}\" is neither a number, a comparison (>= 2), a range (2..8) nor a glob of a "
                                 "number", text));
    t.glob = std::string(rest);
    return t;
}

/// A condition from a JSON object (the value of "when", or an element of "any_of"). Throws
/// std::runtime_error naming an unknown field (with the nearest names) or a bad test.
Condition parse_condition(const nlohmann::json& j) {
    if (!j.is_object() || j.empty())
        throw std::runtime_error(fmt::format("\"when\" is an object of FIELD: TEST (or [TEST, ...]) pairs (got {})",
                j.dump()));
    Condition c;
    for (const auto& [key, v] : j.items()) {
        if (key == "any_of") {
            if (!v.is_array() || v.empty())
                throw std::runtime_error(fmt::format("\"when\": \"any_of\" is a non-empty list of conditions (got {})",
                        v.dump()));
            for (const auto& alt : v) c.any_of.push_back(parse_condition(alt));
            continue;
        }
        FieldCondition f;
        f.key = key;
        f.field = find_result_field(key);
        if (!f.field) {
            if (const Knob* k = condition_knob(key)) {
                f.knob = true;
                f.key = std::string(k->name);
            } else {
                const auto near = did_you_mean(key, condition_keys());
                throw std::runtime_error(fmt::format("\"when\": unknown field \"{}\"{} (a condition reads a result "
                        "field, reports/result_fields.hpp, or a knob by its name)", key,
                        near.empty() ? std::string() : fmt::format(" (did you mean {}?)", fmt::join(near, ", "))));
            }
        }
        if (v.is_array()) {
            if (v.empty()) throw std::runtime_error(fmt::format("\"when\": \"{}\": an empty list of tests", key));
            for (const auto& x : v) f.any.push_back(parse_test(key, x));
        } else {
            f.any.push_back(parse_test(key, v));
        }
        c.all.push_back(std::move(f));
    }
    return c;
}

/// The value of field `f` in `r`: a result field's, or the knob's spelling from r.info.knobs
/// (monostate when absent).
FieldValue field_value(const FieldCondition& f, const CaseResult& r) {
    if (f.field) return f.field->get(r);
    const std::string prefix = f.key + "=";
    for (const std::string& kv : r.info.knobs)
        if (kv.starts_with(prefix)) return kv.substr(prefix.size());
    return std::monostate{};
}

/// True when test `t` holds for value `v`.
bool test_holds(const FieldTest& t, const FieldValue& v) {
    if (std::holds_alternative<std::monostate>(v))  // no value: it matches no glob, and meets no other test
        return t.kind == FieldTest::Kind::glob && t.glob.size() > 1 && t.glob.front() == '!';
    if (t.kind == FieldTest::Kind::glob) {  // "!GLOB": the value does not match GLOB
        const bool negated = t.glob.size() > 1 && t.glob.front() == '!';
        return (::fnmatch(t.glob.c_str() + (negated ? 1 : 0), csv_text(v).c_str(), 0) == 0) != negated;
    }
    if (t.kind == FieldTest::Kind::flag) {
        const auto* b = std::get_if<bool>(&v);
        const auto* s = std::get_if<std::string>(&v);  // a knob's "true"/"false"
        return b ? *b == t.flag : s && *s == (t.flag ? "true" : "false");
    }
    std::optional<double> x;
    if (const auto* d = std::get_if<double>(&v)) x = *d;
    else if (const auto* i = std::get_if<std::int64_t>(&v)) x = static_cast<double>(*i);
    else if (const auto* s = std::get_if<std::string>(&v)) x = parse_number<double>(*s);
    if (!x) return false;
    if (t.kind == FieldTest::Kind::range) return *x >= t.a && *x <= t.b;
    if (t.op == ">=") return *x >= t.a;
    if (t.op == ">") return *x > t.a;
    if (t.op == "<=") return *x <= t.a;
    if (t.op == "<") return *x < t.a;
    if (t.op == "!=") return *x != t.a;
    return *x == t.a;
}

/// condition_holds; with `absent_holds`, a field without a value meets every test (what only a
/// run tells is not known yet).
bool holds(const Condition& c, const CaseResult& r, bool absent_holds) {
    for (const FieldCondition& f : c.all) {
        const FieldValue v = field_value(f, r);
        if (absent_holds && std::holds_alternative<std::monostate>(v)) continue;
        if (absent_holds && !f.knob && std::holds_alternative<std::string>(v) && std::get<std::string>(v).empty())
            continue;
        if (std::none_of(f.any.begin(), f.any.end(), [&](const FieldTest& t) { return test_holds(t, v); })) return false;
    }
    return c.any_of.empty() ||
           std::any_of(c.any_of.begin(), c.any_of.end(), [&](const Condition& a) { return holds(a, r, absent_holds); });
}

/// True when `id` (or `id` without its " #N" repeat suffix) matches the glob.
bool id_matches(const std::string& glob, const std::string& id) {
    std::string base = id;  // a repeat "ID #2" is covered by an entry for ID
    if (const auto hash = base.rfind(" #"); hash != std::string::npos &&
            base.find_first_not_of("0123456789", hash + 2) == std::string::npos && hash + 2 < base.size())
        base.resize(hash);
    return ::fnmatch(glob.c_str(), id.c_str(), 0) == 0 || ::fnmatch(glob.c_str(), base.c_str(), 0) == 0;
}

/// Throws the error of the --expect entry at `where` ("FILE:LINE"): "FILE:LINE: error: MSG",
/// with MSG escaped and cut after 300 characters.
[[noreturn]] void refuse_entry(const std::string& where, const std::string& msg) {
    std::string m = escape_for_message(msg);
    if (m.size() > 300) m = m.substr(0, 300) + "...";
    throw std::runtime_error(fmt::format("{}: error: {}", escape_for_message(where), m));
}

/// One line of an --expect file as JSON; refuses (refuse_entry) a line that does not parse, a key
/// given twice in one object (JSON would keep only the last), and anything but an object.
nlohmann::json parse_entry_json(const std::string& line, const std::string& where) {
    nlohmann::json j;
    std::vector<std::set<std::string>> keys;  // per open object: its keys so far
    std::string twice;
    const nlohmann::json::parser_callback_t dup = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& k) {
        if (ev == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
        else if (ev == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        else if (ev == nlohmann::json::parse_event_t::key && !keys.empty() && !keys.back().insert(k.get<std::string>()).second &&
                twice.empty())
            twice = k.get<std::string>();
        return true;
    };
    try {
        j = nlohmann::json::parse(line, dup);
    } catch (const nlohmann::json::exception& e) {
        refuse_entry(where, fmt::format("not a JSON object ({})", e.what()));
    }
    if (!twice.empty()) refuse_entry(where, fmt::format("the key \"{}\" is given twice in one object (JSON keeps only the last)", twice));
    if (!j.is_object()) refuse_entry(where, "an entry is one JSON object per line");
    return j;
}

/// The string value `v` of `key`; refuses another JSON type and a blank string.
std::string entry_text(const std::string& where, const std::string& key, const nlohmann::json& v) {
    if (!v.is_string()) refuse_entry(where, fmt::format("\"{}\" must be a string (got {})", key, v.dump()));
    std::string t = v.get<std::string>();
    if (t.find_first_not_of(" \t") == std::string::npos) refuse_entry(where, fmt::format("\"{}\" is empty", key));
    return t;
}

/// True for a status an --expect entry may name: not PASSED, EXECUTED or LISTED, which tell of
/// no bug.
bool expectable(Status s) { return s != Status::passed && s != Status::executed && s != Status::listed; }

/// The status an entry's "status" names; refuses a name in other letters than capitals, an
/// unknown one, and a status no entry can expect (PASSED, EXECUTED, LISTED).
Status entry_status(const std::string& where, const std::string& name) {
    const auto e = std::find_if(kStatusNames.begin(), kStatusNames.end(), [&](const auto& s) {
        return s.name == name;
    });
    const auto upper = std::find_if(kStatusNames.begin(), kStatusNames.end(), [&](const auto& s) {
        return s.name.size() == name.size() &&
               std::equal(name.begin(), name.end(), s.name.begin(),
                       [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; });
    });
    if (e == kStatusNames.end() && upper != kStatusNames.end())
        refuse_entry(where, fmt::format("\"status\": \"{}\": statuses are written in capitals here: \"{}\"", name,
                upper->name));
    if (e == kStatusNames.end() || !expectable(e->value)) {
        std::vector<std::string_view> names;  // the table's, in its order
        for (const StatusRow& s : kStatuses)
            if (expectable(s.value)) names.push_back(s.name);
        refuse_entry(where, fmt::format("\"status\": \"{}\" cannot be expected (use {} or {})", name,
                fmt::join(names.begin(), names.end() - 1, ", "), names.back()));
    }
    return e->value;
}

/// The (key, value) pairs of an entry's "requires" object; refuses a key that is neither cpu_flags
/// nor a library the registry knows, and a value that is not flag names (cpu_flags) or a version.
std::vector<std::pair<std::string, std::string>> entry_requires(const std::string& where, const nlohmann::json& v) {
    if (!v.is_object()) refuse_entry(where, fmt::format("\"requires\" must be an object of strings (got {})", v.dump()));
    std::vector<std::pair<std::string, std::string>> needs;
    for (const auto& [rk, rv] : v.items()) {
        // The libraries the registry knows, even those this build lacks: one file serves
        // every build (there the entry does not apply).
        const std::vector<std::string> libraries = library_keys();
        if (rk != "cpu_flags" && std::find(libraries.begin(), libraries.end(), rk) == libraries.end())
            refuse_entry(where, fmt::format("\"requires\": unknown key \"{}\" (accepted: cpu_flags, {})", rk,
                    fmt::join(libraries, ", ")));
        const std::string val = entry_text(where, "requires\": {\"" + rk, rv);
        const bool ok = rk == "cpu_flags"
                ? std::all_of(val.begin(), val.end(), [](char ch) {
                      return std::islower(static_cast<unsigned char>(ch)) ||
                             std::isdigit(static_cast<unsigned char>(ch)) || ch == '_' || ch == ' ';
                  })
                : is_version(val);
        if (!ok)
            refuse_entry(where, rk == "cpu_flags"
                    ? fmt::format("\"requires\": \"cpu_flags\": \"{}\" must be /proc/cpuinfo flag names "
                                  "separated by spaces (e.g. \"amx_bf16 amx_tile\")", val)
                    : fmt::format("\"requires\": \"{}\": \"{}\" must be a version: numbers separated by "
                                  "dots (\"3\", \"3.13\", \"3.13.2\")", rk, val));
        needs.emplace_back(rk, val);
    }
    return needs;
}

/// The entry an --expect line's object `j` gives, each key checked on its own (known keys, the
/// type and form of each value); validate_entry checks the entry as a whole.
Expectation parse_entry(const nlohmann::json& j, const std::string& where) {
    Expectation x;
    x.where = where;
    for (const auto& [key, v] : j.items()) {
        if (key == "match") x.match = entry_text(where, key, v);
        else if (key == "when") {
            try {
                x.when = parse_condition(v);
            } catch (const std::runtime_error& e) {
                refuse_entry(where, e.what());
            }
        }
        else if (key == "backend") x.backend = entry_text(where, key, v);
        else if (key == "failure") {
            if (v.is_array() && !v.empty())
                for (const auto& g : v) x.failure.push_back(entry_text(where, key, g));
            else
                x.failure.push_back(entry_text(where, key, v));
        }
        else if (key == "reason") x.reason = escape_for_message(entry_text(where, key, v));
        else if (key == "allow_xpass") {
            if (!v.is_boolean()) refuse_entry(where, fmt::format("\"allow_xpass\" must be true or false (got {})", v.dump()));
            x.allow_xpass = v.get<bool>();
        } else if (key == "status") {
            x.status = entry_status(where, entry_text(where, key, v));
        } else if (key == "requires") {
            x.needs = entry_requires(where, v);
        } else {
            refuse_entry(where, fmt::format("unknown key \"{}\" (accepted: \"match\", \"when\", \"backend\", \"status\", "
                                            "\"reason\", \"failure\", \"requires\", \"allow_xpass\")", key));
        }
    }
    return x;
}

/// Refuses an entry `x` (read from `j`) that lacks what every entry needs (a "match" or a "when",
/// a "status", a "reason"), or names failures of a status other than FAILED.
void validate_entry(const Expectation& x, const nlohmann::json& j) {
    if (x.match.empty() && !j.contains("when"))
        refuse_entry(x.where, "\"match\" (a case id or glob) or \"when\" (the conditions under which the bug shows) is missing");
    if (!j.contains("status")) refuse_entry(x.where, "\"status\" (the expected status) is missing");
    if (x.reason.empty()) refuse_entry(x.where, "\"reason\" (why it is expected: a vendor bug, ...) is missing");
    if (!x.failure.empty() && x.status != Status::failed)
        refuse_entry(x.where, fmt::format("\"failure\" names the failures of a FAILED case; \"status\" is {}", x.status));
}

}  // namespace

bool condition_holds(const Condition& c, const CaseResult& r) { return holds(c, r, false); }

std::vector<Expectation> load_expectations(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw std::runtime_error(fmt::format("--expect: '{}' is not a regular file", escape_for_message(path)));
    std::ifstream in(path);
    if (!in) throw std::runtime_error(fmt::format("--expect: cannot read '{}'", escape_for_message(path)));
    std::vector<Expectation> out;
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        const std::string where = fmt::format("{}:{}", path, n);
        const nlohmann::json j = parse_entry_json(line, where);
        Expectation x = parse_entry(j, where);
        validate_entry(x, j);
        out.push_back(std::move(x));
    }
    return out;
}

Platform::Platform() : cpu_flags_(cpu_flags()) {}

Platform::~Platform() = default;

std::optional<std::string> Platform::unmet(const std::string& key, const std::string& value) {
    if (key == "cpu_flags") {
        std::vector<std::string> missing;
        for (const auto& f : words(value))
            if (std::find(cpu_flags_.begin(), cpu_flags_.end(), f) == cpu_flags_.end()) missing.push_back(f);
        if (missing.empty()) return std::nullopt;
        return fmt::format("the CPU lacks {}", fmt::join(missing, " "));
    }
    auto it = versions_.find(key);
    if (it == versions_.end()) {
        it = versions_.emplace(key, library_version_of(key)).first;
    }
    if (version_covers(value, it->second)) return std::nullopt;
    return fmt::format("{} is {}, not {}", key, it->second.empty() ? "not available" : it->second, value);
}

bool expectation_may_match(const Expectation& x, const std::string& id, const std::string& backend) {
    return (x.match.empty() || id_matches(x.match, id)) &&
           (x.backend.empty() || ::fnmatch(x.backend.c_str(), backend.c_str(), 0) == 0);
}

bool expectation_matches(const Expectation& x, const CaseResult& r) {
    return expectation_may_match(x, r.id, r.info.backend) && holds(x.when, r, false);
}

bool expectation_may_match(const Expectation& x, const CaseResult& before_run) {
    return expectation_may_match(x, before_run.id, before_run.info.backend) && holds(x.when, before_run, true);
}

void apply_expectations(const std::vector<Expectation>& entries, Platform& platform, CaseResult& r,
        std::vector<bool>& used) {
    const Expectation* first_match = nullptr;
    std::vector<std::string> first_unmet;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const Expectation& x = entries[i];
        if (!expectation_matches(x, r)) continue;
        used[i] = true;
        std::vector<std::string> unmet;
        for (const auto& [k, v] : x.needs)
            if (auto why = platform.unmet(k, v)) unmet.push_back(*why);
        if (!unmet.empty()) {  // a later entry may describe this platform
            if (!first_match) {
                first_match = &x;
                first_unmet = std::move(unmet);
            }
            continue;
        }
        const std::string expected = fmt::format("expected {} ({}, {})", x.status, x.reason, x.where);
        const std::vector<std::string> keys = failure_keys(r);
        if (r.timed_out || r.crashed)
            r.notes.push_back(fmt::format("{}; a {} is not that failure", expected, r.timed_out ? "timeout" : "crash"));
        else if (r.status == Status::failed && x.status == Status::failed && !x.failure.empty() &&
                 !std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
                     return std::any_of(x.failure.begin(), x.failure.end(),
                             [&](const std::string& g) { return ::fnmatch(g.c_str(), k.c_str(), 0) == 0; });
                 }))  // another failure than the known one: it stays FAILED
            r.notes.push_back(fmt::format("{}, as {}; this case also fails as {}", expected, fmt::join(x.failure, " or "),
                    fmt::join(keys, ", ")));
        else if (r.status == x.status)
            r.expect = ExpectOutcome{Expected::xfail, expected, x.allow_xpass};
        else if (r.status == Status::passed)
            r.expect = ExpectOutcome{Expected::xpass,
                expected + (x.allow_xpass ? "; it PASSED, which the entry allows (a flaky bug)" : "; it PASSED: update the expectation"),
                x.allow_xpass};
        else if (r.status == Status::mistrusted && x.status == Status::failed)  // it no longer fails
            r.expect = ExpectOutcome{Expected::xpass,
                expected + "; it is MISTRUSTED, no longer FAILED: update the expectation", x.allow_xpass};
        else
            r.notes.push_back(fmt::format("{}; got {}", expected, r.status));
        return;
    }
    if (!first_match) return;
    const std::string lacks = fmt::format("expected {} ({}, {}); does not apply here: {}", first_match->status,
            first_match->reason, first_match->where, fmt::join(first_unmet, "; "));
    if (r.status == Status::passed) r.expect = ExpectOutcome{Expected::not_applicable, lacks, false};
    else r.notes.push_back(lacks);
}

}  // namespace sdpa
