// One table per enum drives parsing, printing and fmt's format_as.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace sdpa {

/// One (value, spelling) row of an enum's table.
template <class E>
struct EnumName {
    E value;
    std::string_view name;
};

/// One row of an enum's table that also says what the value means (statuses, modes): the table
/// for --help and the --list-* options; described_names() makes its EnumName table.
template <class E>
struct DescribedName {
    E value;
    std::string_view name;
    std::string_view what;  ///< its meaning, one short phrase
};

/// The EnumName table of a described table, in its order (parsing and printing read it).
template <class E, std::size_t N>
constexpr std::array<EnumName<E>, N> described_names(const std::array<DescribedName<E>, N>& rows) {
    std::array<EnumName<E>, N> names{};
    for (std::size_t i = 0; i < N; ++i) names[i] = {rows[i].value, rows[i].name};
    return names;
}

/// `name` in lower case: the spelling of a status (or --expect outcome) in benchdnn's summary line
/// and in --fail-on's list.
inline std::string lower_name(std::string_view name) {
    std::string out(name);
    for (char& ch : out)
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    return out;
}

/// Spelling of `v` in `table`; "?" when the table lacks it (a programming error).
template <class E, std::size_t N>
constexpr std::string_view enum_name(const std::array<EnumName<E>, N>& table, E v) {
    for (const auto& row : table)
        if (row.value == v) return row.name;
    return "?";
}

/// Value spelled `s` in `table`, or nullopt when no row matches (case-sensitive).
template <class E, std::size_t N>
constexpr std::optional<E> enum_parse(const std::array<EnumName<E>, N>& table, std::string_view s) {
    for (const auto& row : table)
        if (row.name == s) return row.value;
    return std::nullopt;
}

/// "a|b|c": the accepted spellings, for error messages and --help.
template <class E, std::size_t N>
std::string enum_choices(const std::array<EnumName<E>, N>& table) {
    std::string out;
    for (const auto& row : table) {
        if (!out.empty()) out += '|';
        out += row.name;
    }
    return out;
}

}  // namespace sdpa

#if FMT_VERSION < 100000
// fmt 9 (Debian 12's libfmt-dev) uses format_as only when it returns an integer: give every
// enum whose format_as returns a spelling a formatter that prints it (fmt >= 10 does this itself).
template <class E>
    requires std::is_enum_v<E> && requires(E e) {
        { format_as(e) } -> std::convertible_to<std::string_view>;
    }
struct fmt::formatter<E> : fmt::formatter<std::string_view> {
    auto format(E e, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(format_as(e), ctx);
    }
};
#endif
