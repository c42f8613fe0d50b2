#include "driver/expect.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "driver/case_parser.hpp"
#include "driver/minimize.hpp"
#include "reports/escape.hpp"

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

}  // namespace

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
        const auto fail = [&](const std::string& msg) {
            std::string m = escape_for_message(msg);
            if (m.size() > 300) m = m.substr(0, 300) + "...";
            throw std::runtime_error(fmt::format("{}: error: {}", escape_for_message(where), m));
        };
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            fail(fmt::format("not a JSON object ({})", e.what()));
        }
        if (!j.is_object()) fail("an entry is one JSON object per line");
        Expectation x;
        x.where = where;
        const auto text = [&](const std::string& key, const nlohmann::json& v) {
            if (!v.is_string()) fail(fmt::format("\"{}\" must be a string (got {})", key, v.dump()));
            std::string t = v.get<std::string>();
            if (t.find_first_not_of(" \t") == std::string::npos) fail(fmt::format("\"{}\" is empty", key));
            return t;
        };
        for (const auto& [key, v] : j.items()) {
            if (key == "match") x.match = text(key, v);
            else if (key == "backend") x.backend = text(key, v);
            else if (key == "failure") x.failure = text(key, v);
            else if (key == "reason") x.reason = escape_for_message(text(key, v));
            else if (key == "allow_xpass") {
                if (!v.is_boolean()) fail(fmt::format("\"allow_xpass\" must be true or false (got {})", v.dump()));
                x.allow_xpass = v.get<bool>();
            } else if (key == "status") {
                const std::string name = text(key, v);
                const auto e = std::find_if(kStatusNames.begin(), kStatusNames.end(), [&](const auto& s) {
                    return s.name == name;
                });
                const auto upper = std::find_if(kStatusNames.begin(), kStatusNames.end(), [&](const auto& s) {
                    return s.name.size() == name.size() &&
                           std::equal(name.begin(), name.end(), s.name.begin(),
                                   [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; });
                });
                if (e == kStatusNames.end() && upper != kStatusNames.end())
                    fail(fmt::format("\"status\": \"{}\": statuses are written in capitals here: \"{}\"", name,
                            upper->name));
                if (e == kStatusNames.end() || e->value == Status::passed || e->value == Status::executed ||
                        e->value == Status::listed)
                    fail(fmt::format("\"status\": \"{}\" cannot be expected (use FAILED, MISTRUSTED, SKIPPED, "
                                     "UNIMPLEMENTED or INVALID_ARGUMENTS)", name));
                x.status = e->value;
            } else if (key == "requires") {
                if (!v.is_object()) fail(fmt::format("\"requires\" must be an object of strings (got {})", v.dump()));
                for (const auto& [rk, rv] : v.items()) {
                    // The libraries the registry knows, even those this build lacks: one file serves
                    // every build (there the entry does not apply).
                    const std::vector<std::string> libraries = library_keys();
                    if (rk != "cpu_flags" && std::find(libraries.begin(), libraries.end(), rk) == libraries.end())
                        fail(fmt::format("\"requires\": unknown key \"{}\" (accepted: cpu_flags, {})", rk,
                                fmt::join(libraries, ", ")));
                    const std::string val = text("requires\": {\"" + rk, rv);
                    const bool ok = rk == "cpu_flags"
                            ? std::all_of(val.begin(), val.end(), [](char ch) {
                                  return std::islower(static_cast<unsigned char>(ch)) ||
                                         std::isdigit(static_cast<unsigned char>(ch)) || ch == '_' || ch == ' ';
                              })
                            : is_version(val);
                    if (!ok)
                        fail(rk == "cpu_flags"
                                ? fmt::format("\"requires\": \"cpu_flags\": \"{}\" must be /proc/cpuinfo flag names "
                                              "separated by spaces (e.g. \"amx_bf16 amx_tile\")", val)
                                : fmt::format("\"requires\": \"{}\": \"{}\" must be a version: numbers separated by "
                                              "dots (\"3\", \"3.13\", \"3.13.2\")", rk, val));
                    x.needs.emplace_back(rk, val);
                }
            } else {
                fail(fmt::format("unknown key \"{}\" (accepted: \"match\", \"backend\", \"status\", \"reason\", "
                                 "\"failure\", \"requires\", \"allow_xpass\")", key));
            }
        }
        if (x.match.empty()) fail("\"match\" (a case id or glob) is missing");
        if (!j.contains("status")) fail("\"status\" (the expected status) is missing");
        if (x.reason.empty()) fail("\"reason\" (why it is expected: a vendor bug, ...) is missing");
        if (!x.failure.empty() && x.status != Status::failed)
            fail(fmt::format("\"failure\" names the failures of a FAILED case; \"status\" is {}", x.status));
        out.push_back(std::move(x));
    }
    return out;
}

Platform::Platform() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("flags", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) cpu_flags_ = words(line.substr(colon + 1));
            break;
        }
}

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

bool expectation_matches(const Expectation& x, const std::string& id, const std::string& backend) {
    std::string base = id;  // a repeat "ID #2" is covered by an entry for ID
    if (const auto hash = base.rfind(" #"); hash != std::string::npos &&
            base.find_first_not_of("0123456789", hash + 2) == std::string::npos && hash + 2 < base.size())
        base.resize(hash);
    if (::fnmatch(x.match.c_str(), id.c_str(), 0) != 0 && ::fnmatch(x.match.c_str(), base.c_str(), 0) != 0) return false;
    return x.backend.empty() || ::fnmatch(x.backend.c_str(), backend.c_str(), 0) == 0;
}

void apply_expectations(const std::vector<Expectation>& entries, Platform& platform, CaseResult& r,
        std::vector<bool>& used) {
    const Expectation* first_match = nullptr;
    std::vector<std::string> first_unmet;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const Expectation& x = entries[i];
        if (!expectation_matches(x, r.id, r.info.backend)) continue;
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
                     return ::fnmatch(x.failure.c_str(), k.c_str(), 0) == 0;
                 }))  // another failure than the known one: it stays FAILED
            r.notes.push_back(fmt::format("{}, as {}; this case also fails as {}", expected, x.failure,
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
