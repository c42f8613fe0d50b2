#include "driver/ranges.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "core/parse_number.hpp"

namespace sdpa {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<std::vector<std::string>> expand_range(std::string_view text, bool integer, std::string* why) {
    auto fail = [&](std::string msg) -> std::optional<std::vector<std::string>> {
        if (why) *why = fmt::format("range '{}': {}", text, msg);
        return std::nullopt;
    };
    const std::size_t c1 = text.find(':');
    if (c1 == text.npos) return fail("not START:END[:STEP]");
    const std::size_t c2 = text.find(':', c1 + 1);
    const std::string_view a = text.substr(0, c1), b = text.substr(c1 + 1, c2 == text.npos ? text.npos : c2 - c1 - 1);
    std::string_view step = c2 == text.npos ? std::string_view("+1") : text.substr(c2 + 1);
    const bool mul = !step.empty() && step[0] == 'x';
    if (!step.empty() && (step[0] == 'x' || step[0] == '+')) step.remove_prefix(1);
    const char* kind = integer ? "whole numbers" : "numbers";
    std::vector<std::string> out;
    if (integer) {  // unsigned: every ranged whole number (sizes, seeds, batches) is non-negative
        using U = unsigned long long;
        const auto s = parse_number<U>(a), e = parse_number<U>(b), n = parse_number<U>(step);
        if (!s || !e || !n)
            return fail(fmt::format("START, END and STEP must be {} from 0 to {} (STEP N, +N or xN)", kind,
                    std::numeric_limits<U>::max()));
        if (*e < *s) return fail(fmt::format("END {} is before START {}", *e, *s));
        if (mul ? *n < 2 || *s < 1 : *n < 1) return fail(mul ? "a multiplicative step needs START >= 1 and xN with N >= 2"
                                                              : "the step must be at least 1");
        for (U v = *s; v <= *e;) {
            if (out.size() == kMaxRangeValues) return fail(fmt::format("more than {} values", kMaxRangeValues));
            out.push_back(fmt::format("{}", v));
            if (mul ? __builtin_mul_overflow(v, *n, &v) : __builtin_add_overflow(v, *n, &v)) break;
        }
        return out;
    }
    const auto s = parse_number<double>(a), e = parse_number<double>(b), n = parse_number<double>(step);
    if (!s || !e || !n || !std::isfinite(*s) || !std::isfinite(*e) || !std::isfinite(*n))
        return fail(fmt::format("START, END and STEP must be finite {} (STEP N, +N or xN)", kind));
    if (*e < *s) return fail(fmt::format("END {} is before START {}", *e, *s));
    if (mul ? *n <= 1 || *s <= 0 : *n <= 0)
        return fail(mul ? "a multiplicative step needs START > 0 and xN with N > 1" : "the step must be positive");
    for (std::size_t i = 0;; ++i) {
        const double v = mul ? *s * std::pow(*n, static_cast<double>(i)) : *s + *n * static_cast<double>(i);
        if (v > *e * (1 + 1e-12)) break;  // END reached up to the rounding of START + i STEP
        if (out.size() == kMaxRangeValues) return fail(fmt::format("more than {} values", kMaxRangeValues));
        out.push_back(fmt::format("{}", static_cast<float>(v)));
    }
    return out;
}

std::optional<std::vector<std::string>> expand_descriptor(std::string_view text, std::string* why) {
    // Pieces of the descriptor: literal text, or a range's values; a malformed descriptor stays
    // as it is (parse_descriptor says what is wrong with it).
    std::vector<std::vector<std::string>> pieces;
    std::size_t i = 0, literal = 0;
    bool any = false;
    while (i < text.size() && !text.substr(i).starts_with("n=")) {
        while (i < text.size() && !is_digit(text[i]) && text[i] != '-' && text[i] != ':') ++i;  // the key
        const std::size_t v0 = i;
        while (i < text.size() && (is_digit(text[i]) || text[i] == '-')) ++i;
        if (i >= text.size() || text[i] != ':') continue;  // a plain value
        // START:END[:STEP]: END digits, then an optional ':' with x, + or nothing before digits.
        std::size_t j = i + 1;
        while (j < text.size() && is_digit(text[j])) ++j;
        if (j < text.size() && text[j] == ':') {
            ++j;
            if (j < text.size() && (text[j] == 'x' || text[j] == '+')) ++j;
            while (j < text.size() && is_digit(text[j])) ++j;
            if (j < text.size() && text[j] == ':') {  // a fourth part: name the whole piece
                std::size_t k = j;
                while (k < text.size() && (is_digit(text[k]) || text[k] == ':' || text[k] == 'x' || text[k] == '+')) ++k;
                if (why) *why = fmt::format("range '{}': more parts than START:END[:STEP]", text.substr(v0, k - v0));
                return std::nullopt;
            }
        }
        auto values = expand_range(text.substr(v0, j - v0), true, why);
        if (!values) return std::nullopt;
        pieces.push_back({std::string(text.substr(literal, v0 - literal))});
        pieces.push_back(std::move(*values));
        literal = i = j;
        any = true;
    }
    if (!any) return std::vector<std::string>{std::string(text)};
    pieces.push_back({std::string(text.substr(literal))});
    std::vector<std::string> out{""};
    for (const auto& p : pieces) {
        std::vector<std::string> next;
        for (const std::string& head : out)
            for (const std::string& v : p) {
                if (next.size() == kMaxRangeValues) {
                    if (why) *why = fmt::format("'{}' stands for more than {} descriptors", text, kMaxRangeValues);
                    return std::nullopt;
                }
                next.push_back(head + v);
            }
        out = std::move(next);
    }
    return out;
}

}  // namespace sdpa
