// Tensor roles of an SDPA training graph and the per-role layout a case asks for (--layout,
// --strides). Plain vocabulary types: core/geometry.hpp turns them into dims and strides.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_table.hpp"

namespace sdpa {

/// Every tensor of an SDPA training graph that a vendor binds (the field's names), plus the
/// score-shaped intermediates (S, P, dP, dS) that some vendors materialise.
/// dMask is the gradient of the bias (Problem::dmask); amax the absolute maxima an fp8 graph
/// outputs (core/fp8.hpp).
enum class Role { Q, K, V, O, dO, stats, bias, dQ, dK, dV, seq_len_q, seq_len_kv, dropout_mask, scores, dMask, amax };
inline constexpr std::size_t kRoleCount = 16;
inline constexpr std::array<EnumName<Role>, kRoleCount> kRoleNames{{{Role::Q, "Q"}, {Role::K, "K"},
    {Role::V, "V"}, {Role::O, "O"}, {Role::dO, "dO"}, {Role::stats, "stats"}, {Role::bias, "bias"},
    {Role::dQ, "dQ"}, {Role::dK, "dK"}, {Role::dV, "dV"}, {Role::seq_len_q, "seq_len_q"},
    {Role::seq_len_kv, "seq_len_kv"}, {Role::dropout_mask, "dropout_mask"}, {Role::scores, "scores"},
    {Role::dMask, "dMask"}, {Role::amax, "amax"}}};
inline std::string_view format_as(Role v) { return enum_name(kRoleNames, v); }

/// The roles --strides can set (the floating-point tensors a vendor reads or writes).
inline constexpr std::array<Role, 10> kStridedRoles{
    Role::Q, Role::K, Role::V, Role::O, Role::dO, Role::stats, Role::bias, Role::dQ, Role::dK, Role::dV};
/// The io roles --layout sets (all but stats and bias).
inline constexpr std::array<Role, 8> kIoRoles{Role::Q, Role::K, Role::V, Role::O, Role::dO, Role::dQ, Role::dK, Role::dV};
/// True for the roles that are views of one packed [B,S,H_q+2*H_kv,D] projection buffer (tag qkv).
constexpr bool packable(Role r) {
    return r == Role::Q || r == Role::K || r == Role::V || r == Role::dQ || r == Role::dK || r == Role::dV;
}

/// How one role is laid out in the vendor's memory. Every tensor is 4-D in the logical order
/// [B, H, S, D] (stats: [B, H_q, S_q, 1]; bias: [1|B, 1|H_q, 1|S_q, S_kv]); its layout is one of
/// - order: a dimension order, outermost first, spelled as a permutation of "bhsd" (benchdnn's
///   format tags with a=b, b=h, c=s, d=d: "bshd" is benchdnn's acbd), dense in that order;
/// - qkv: the view of Q, K or V (or their gradients) into one packed projection buffer
///   [B, S, H_q*D_qk + H_kv*D_qk + H_kv*D_v] (flash-attn's qkvpacked [B,S,3,H,D] for MHA): the
///   strides of bshd with that row pitch;
/// - strides: explicit strides in elements, in [B, H, S, D] order (0 where a dimension is
///   broadcast, e.g. an expanded K shared by every batch).
struct TensorLayout {
    enum class Kind : std::uint8_t { order, qkv, strides };
    Kind kind = Kind::order;
    std::array<std::uint8_t, 4> order{0, 1, 2, 3};  ///< Kind::order: logical dims outermost first (0=b 1=h 2=s 3=d)
    std::array<std::int64_t, 4> strides{};          ///< Kind::strides: elements, [B, H, S, D] order
    friend bool operator==(const TensorLayout&, const TensorLayout&) = default;
};

/// The layout spelled `text`: a permutation of "bhsd", "qkv", or four integers "AxBxCxD" (each
/// a signed 64-bit integer; validation rejects negative ones naming the tensor). nullopt otherwise.
std::optional<TensorLayout> parse_tensor_layout(std::string_view text);

/// The spelling parse_tensor_layout() reads back ("bshd", "qkv", "0x1024x32x1").
std::string layout_name(const TensorLayout& l);

/// The order layout of a bhsd-style tag ("bhsd", "bshd", ...); nullopt when `tag` is not a
/// permutation of those four letters.
std::optional<TensorLayout> order_layout(std::string_view tag);

/// Per-role layouts that override the defaults (--strides=ROLE:LAYOUT[+ROLE:LAYOUT...]).
using RoleLayouts = std::map<Role, TensorLayout>;

/// Parses "none" (no overrides) or "ROLE:LAYOUT[+ROLE:LAYOUT...]" with ROLE in kStridedRoles, each
/// at most once, and qkv only for packable roles. On failure returns nullopt and, when `why` is
/// given, sets it to a sentence naming the offending item.
std::optional<RoleLayouts> parse_role_layouts(std::string_view text, std::string* why = nullptr);

/// "Q:bshd+dO:bhsd" in role order; "none" when empty. Round-trips with parse_role_layouts().
std::string role_layouts_name(const RoleLayouts& l);

}  // namespace sdpa
