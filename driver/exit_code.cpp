#include "driver/exit_code.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

FailOn::FailOn() {
    for (const auto& s : kStatuses) status[static_cast<std::size_t>(s.value)] = is_error(s.value);
    expected[static_cast<std::size_t>(Expected::xpass)] = true;
}

std::string fail_on_spelling(const FailOn& f) {
    std::vector<std::string> names;
    for (const auto& e : kStatusNames)
        if (f.status[static_cast<std::size_t>(e.value)]) names.push_back(lower_name(e.name));
    for (const auto& e : kExpectedNames)
        if (e.value != Expected::none && f.expected[static_cast<std::size_t>(e.value)]) names.push_back(lower_name(e.name));
    if (f.empty) names.emplace_back("empty");
    return fmt::format("{}", fmt::join(names, ","));
}

std::string untested_statuses() {
    std::vector<std::string_view> names;
    for (const auto& s : kStatuses)
        if (is_error(s.value) && s.value != Status::failed) names.push_back(s.name);
    return fmt::format("{}", fmt::join(names, ", "));
}

std::string fail_on_names() {
    std::vector<std::string> names{"default", "empty"};
    for (const auto& e : kStatusNames) names.push_back(lower_name(e.name));
    for (const auto& e : kExpectedNames)
        if (e.value != Expected::none) names.push_back(lower_name(e.name));
    return fmt::format("{}", fmt::join(names, ", "));
}

std::optional<FailOn> parse_fail_on(std::string_view list, std::string* err) {
    FailOn f;
    f.status.fill(false);
    f.expected.fill(false);
    f.empty = false;
    std::size_t b = 0;
    while (b <= list.size()) {
        const std::size_t e = std::min(list.find(',', b), list.size());
        const std::string item(list.substr(b, e - b));
        bool known = false;
        if (item == "default") {
            const FailOn d;
            for (std::size_t i = 0; i < f.status.size(); ++i) f.status[i] = f.status[i] || d.status[i];
            for (std::size_t i = 0; i < f.expected.size(); ++i) f.expected[i] = f.expected[i] || d.expected[i];
            f.empty = f.empty || d.empty;
            known = true;
        }
        if (item == "empty") f.empty = known = true;
        for (const auto& s : kStatusNames)
            if (item == lower_name(s.name)) f.status[static_cast<std::size_t>(s.value)] = known = true;
        for (const auto& s : kExpectedNames)
            if (s.value != Expected::none && item == lower_name(s.name))
                f.expected[static_cast<std::size_t>(s.value)] = known = true;
        if (!known) {
            if (err) *err = fmt::format("--fail-on: '{}' is not a status (accepted, comma-separated: {})", item,
                                 fail_on_names());
            return std::nullopt;
        }
        b = e + 1;
    }
    f.status[static_cast<std::size_t>(Status::failed)] = true;  // a wrong kernel always fails the run
    return f;
}

int exit_code(const Summary& s, const FailOn& fail_on) {
    const auto on = [&](Status st) { return fail_on.status[static_cast<std::size_t>(st)] && s[st] > 0; };
    if (s[Status::failed] > s.timeouts) return kExitFailed;
    if (s.timeouts > 0 || s.write_errors > 0 || on(Status::invalid_arguments) || on(Status::unimplemented))
        return kExitUntested;
    if (fail_on.expected[static_cast<std::size_t>(Expected::xpass)] && s[Expected::xpass] > s.allowed_xpass)
        return kExitXpass;
    for (const auto& e : kStatusNames)
        if (on(e.value)) return kExitFailOn;
    for (const auto& e : kExpectedNames)
        if (e.value != Expected::none && e.value != Expected::xpass &&
                fail_on.expected[static_cast<std::size_t>(e.value)] && s[e.value] > 0)
            return kExitFailOn;
    return kExitOk;
}

}  // namespace sdpa
