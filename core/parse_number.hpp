// One number read from a whole string: the one way the case language, the graph rewrites and the
// run options read numbers (std::from_chars: decimal, no leading '+' or spaces, any locale).
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace sdpa {

/// Why parse_number gave nothing: not a number of T at all, a number T cannot hold (an integer
/// past its range, a float past the type's range; std::from_chars' result_out_of_range), or a
/// floating-point infinity or NaN ("inf", "nan").
enum class NumberError { none, malformed, out_of_range, not_finite };

/// The whole of `text` as a T, or nullopt (with `error`, when given, saying why): integers in
/// decimal; floating point in decimal or scientific notation and finite (no "inf", "nan").
template <class T>
std::optional<T> parse_number(std::string_view text, NumberError* error = nullptr) {
    T v{};
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    NumberError e = NumberError::none;
    if (text.empty() || ptr != text.data() + text.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
        e = NumberError::malformed;
    else if (ec == std::errc::result_out_of_range)
        e = NumberError::out_of_range;
    else if constexpr (std::is_floating_point_v<T>)
        if (!std::isfinite(v)) e = NumberError::not_finite;
    if (error) *error = e;
    if (e != NumberError::none) return std::nullopt;
    return v;
}

}  // namespace sdpa
