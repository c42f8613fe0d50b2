#include "driver/expect.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "backends/backend.hpp"

namespace sdpa {

namespace {

/// Backends whose library_version() a "requires" may name (known even to builds without them,
/// so that one file serves every build: there the entry does not apply).
constexpr std::array<std::string_view, 2> kLibraries{"onednn", "cudnn"};

std::vector<std::string> words(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

/// "3.13" covers "3.13.2" and "3.13": `want`'s dot-separated components are a prefix of `have`'s.
bool version_covers(const std::string& want, const std::string& have) {
    if (want.empty() || have.empty()) return false;
    if (have.rfind(want, 0) != 0) return false;
    return have.size() == want.size() || have[want.size()] == '.';
}

}  // namespace

std::vector<Expectation> load_expectations(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(fmt::format("--expect: cannot read '{}'", path));
    std::vector<Expectation> out;
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        const std::string where = fmt::format("{}:{}", path, n);
        const auto fail = [&](const std::string& msg) {
            throw std::runtime_error(fmt::format("{}: error: {}", where, msg));
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
        for (const auto& [key, v] : j.items()) {
            if (key == "match" && v.is_string()) x.match = v.get<std::string>();
            else if (key == "reason" && v.is_string()) x.reason = v.get<std::string>();
            else if (key == "allow_xpass" && v.is_boolean()) x.allow_xpass = v.get<bool>();
            else if (key == "status" && v.is_string()) {
                const std::string name = v.get<std::string>();
                bool found = false;
                for (const auto& e : kStatusNames)
                    if (e.name == name) {
                        x.status = e.value;
                        found = true;
                    }
                if (!found || x.status == Status::passed || x.status == Status::executed || x.status == Status::listed)
                    fail(fmt::format("\"status\": \"{}\" cannot be expected (use FAILED, MISTRUSTED, SKIPPED, "
                                     "UNIMPLEMENTED or INVALID_ARGUMENTS)", name));
            } else if (key == "requires" && v.is_object()) {
                for (const auto& [rk, rv] : v.items()) {
                    if (!rv.is_string()) fail(fmt::format("\"requires\": \"{}\" must be a string", rk));
                    if (rk != "cpu_flags" && std::find(kLibraries.begin(), kLibraries.end(), rk) == kLibraries.end())
                        fail(fmt::format("\"requires\": unknown key \"{}\" (accepted: cpu_flags, {})", rk,
                                fmt::join(kLibraries, ", ")));
                    x.needs.emplace_back(rk, rv.get<std::string>());
                }
            } else {
                fail(fmt::format("unknown key \"{}\" or wrong type (accepted: \"match\": string, \"status\": string, "
                                 "\"reason\": string, \"requires\": object of strings, \"allow_xpass\": bool)", key));
            }
        }
        if (x.match.empty()) fail("\"match\" (a case id or glob) is missing");
        if (!j.contains("status")) fail("\"status\" (the expected status) is missing");
        if (x.reason.empty()) fail("\"reason\" (why it is expected: a vendor bug, ...) is missing");
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
        const std::unique_ptr<Backend> be = make_backend(key);
        it = versions_.emplace(key, be ? be->library_version() : std::string()).first;
    }
    if (version_covers(value, it->second)) return std::nullopt;
    return fmt::format("{} is {}, not {}", key, it->second.empty() ? "not available" : it->second, value);
}

void apply_expectations(const std::vector<Expectation>& entries, Platform& platform, CaseResult& r) {
    for (const Expectation& x : entries) {
        if (::fnmatch(x.match.c_str(), r.id.c_str(), 0) != 0) continue;
        std::vector<std::string> unmet;
        for (const auto& [k, v] : x.needs)
            if (auto why = platform.unmet(k, v)) unmet.push_back(*why);
        const std::string expected = fmt::format("expected {} ({}, {})", x.status, x.reason, x.where);
        if (!unmet.empty()) {
            const std::string lacks = fmt::format("{}; does not apply here: {}", expected, fmt::join(unmet, "; "));
            if (r.status == Status::passed) r.expect = ExpectOutcome{Expected::not_applicable, lacks, false};
            else r.notes.push_back(lacks);
        } else if (r.status == x.status) {
            r.expect = ExpectOutcome{Expected::xfail, expected, x.allow_xpass};
        } else if (r.status == Status::passed) {
            r.expect = ExpectOutcome{Expected::xpass, expected + "; it PASSED: update the expectation", x.allow_xpass};
        } else {
            r.notes.push_back(fmt::format("{}; got {}", expected, r.status));
        }
        return;
    }
}

}  // namespace sdpa
