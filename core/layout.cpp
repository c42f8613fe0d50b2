#include "core/layout.hpp"
#include "core/keyed_list.hpp"
#include "core/parse_number.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

constexpr std::string_view kDimLetters = "bhsd";

}  // namespace

std::optional<TensorLayout> order_layout(std::string_view tag) {
    if (tag.size() != 4) return std::nullopt;
    TensorLayout l;
    std::array<bool, 4> seen{};
    for (std::size_t k = 0; k < 4; ++k) {
        const std::size_t dim = kDimLetters.find(tag[k]);
        if (dim == std::string_view::npos || seen[dim]) return std::nullopt;
        seen[dim] = true;
        l.order[k] = static_cast<std::uint8_t>(dim);
    }
    return l;
}

std::optional<TensorLayout> parse_tensor_layout(std::string_view text) {
    if (text == "qkv") return TensorLayout{TensorLayout::Kind::qkv, {0, 1, 2, 3}, {}};
    if (auto l = order_layout(text)) return l;
    TensorLayout l{TensorLayout::Kind::strides, {0, 1, 2, 3}, {}};
    std::size_t pos = 0;
    for (std::size_t k = 0; k < 4; ++k) {
        const std::size_t x = text.find('x', pos);
        if ((k < 3) != (x != std::string_view::npos)) return std::nullopt;
        const auto v = parse_number<std::int64_t>(text.substr(pos, k < 3 ? x - pos : std::string_view::npos));
        if (!v) return std::nullopt;
        l.strides[k] = *v;
        pos = x + 1;
    }
    return l;
}

std::string layout_name(const TensorLayout& l) {
    switch (l.kind) {
        case TensorLayout::Kind::qkv: return "qkv";
        case TensorLayout::Kind::strides: return fmt::format("{}", fmt::join(l.strides, "x"));
        case TensorLayout::Kind::order: break;
    }
    std::string s;
    for (const auto dim : l.order) s += kDimLetters[dim];
    return s;
}

std::optional<RoleLayouts> parse_role_layouts(std::string_view text, std::string* why) {
    auto fail = [&](std::string msg) -> std::optional<RoleLayouts> {
        if (why) *why = std::move(msg);
        return std::nullopt;
    };
    RoleLayouts out;
    if (text == "none") return out;
    for (const KeyedItem& item : split_keyed_list(text)) {
        if (item.whole.empty()) return fail("an empty item (a '+' or ',' with nothing on one side)");
        if (!item.keyed) return fail(fmt::format("'{}' is not ROLE:LAYOUT", item.whole));
        const auto role = enum_parse(kRoleNames, item.key);
        if (!role || std::find(kStridedRoles.begin(), kStridedRoles.end(), *role) == kStridedRoles.end())
            return fail(fmt::format("'{}': unknown tensor '{}' (accepted: Q, K, V, O, dO, stats, bias, dQ, dK, dV)",
                    item.whole, item.key));
        const auto layout = parse_tensor_layout(item.value);
        if (!layout)
            return fail(fmt::format("'{}': '{}' is neither a dimension order (a permutation of bhsd), qkv, nor four "
                                    "64-bit integer strides AxBxCxD", item.whole, item.value));
        if (layout->kind == TensorLayout::Kind::qkv && !packable(*role))
            return fail(fmt::format("'{}': qkv is the view of a packed Q/K/V projection buffer, for Q, K, V, dQ, dK "
                                    "and dV only", item.whole));
        if (!out.emplace(*role, *layout).second) return fail(fmt::format("'{}': {} is given twice", text, *role));
    }
    return out;
}

std::string role_layouts_name(const RoleLayouts& l) {
    if (l.empty()) return "none";
    std::string s;
    for (const auto& [role, layout] : l) s += fmt::format("{}{}:{}", s.empty() ? "" : "+", role, layout_name(layout));
    return s;
}

}  // namespace sdpa
