#include "driver/random_cases.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "core/flops.hpp"
#include "core/geometry.hpp"
#include "core/layout.hpp"
#include "core/splitmix.hpp"
#include "driver/knobs.hpp"

namespace sdpa {

namespace {

using u64 = std::uint64_t;
using i64 = std::int64_t;

/// Head sizes drawn for D_qk (and D_v): powers of two, multiples of 8 and tails (17, 72, 80).
constexpr std::array<i64, 16> kHeadSizes{1, 8, 16, 17, 24, 32, 40, 48, 64, 72, 80, 96, 112, 128, 160, 256};
constexpr std::array<i64, 5> kGroups{1, 2, 4, 7, 8};   ///< H_q / H_kv (7: a group that is no power of two)
constexpr std::array<i64, 5> kBlockLengths{16, 32, 64, 128, 256};

/// One round of a bijection of [0, 2^bits): multiply by an odd key, xor-shift right, add a key.
u64 permute_round(u64 x, u64 key, unsigned bits, u64 mask) {
    x = (x * (key | 1)) & mask;
    if (bits > 1) x ^= x >> ((bits + 1) / 2);
    return (x + (key >> 17)) & mask;
}

}  // namespace

u64 RandomDraws::stratum(u64 i, u64 dim, u64 k) const {
    if (k <= 1) return 0;
    const unsigned bits = static_cast<unsigned>(std::bit_width(count_ - 1));
    u64 x = i % count_;
    if (bits > 0) {
        const u64 mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
        const u64 k1 = splitmix64(seed_ ^ splitmix64(dim)), k2 = splitmix64(k1), k3 = splitmix64(k2);
        // A bijection of [0, 2^bits), walked until it lands in [0, count): a bijection of [0, count).
        do x = permute_round(permute_round(permute_round(x, k1, bits, mask), k2, bits, mask), k3, bits, mask);
        while (x >= count_);
    }
    return x % k;
}

i64 RandomDraws::uniform(u64 i, u64 dim, i64 lo, i64 hi) const {
    const u64 span = static_cast<u64>(hi - lo) + 1;
    const u64 r = splitmix64(seed_ ^ splitmix64(i * 0x100 + dim));
    return lo + static_cast<i64>(span == 0 ? r : r % span);
}

namespace {

/// A sequence length from the strata 1, 2-15, a power of two 16-256, a tail 17-300 (never a
/// multiple of 16).
i64 draw_length(const RandomDraws& r, u64 i, u64 dim, u64 value_dim) {
    switch (r.stratum(i, dim, 4)) {
        case 0: return 1;
        case 1: return r.uniform(i, value_dim, 2, 15);
        case 2: return kBlockLengths[static_cast<std::size_t>(r.uniform(i, value_dim, 0, kBlockLengths.size() - 1))];
        default: {
            const i64 s = r.uniform(i, value_dim, 17, 300);
            return s % 16 == 0 ? s + 1 : s;
        }
    }
}

/// A window bound: 0, 1, any up to S_kv, or beyond every key.
i64 draw_window_bound(const RandomDraws& r, u64 i, u64 dim, u64 value_dim, i64 skv) {
    switch (r.stratum(i, dim, 4)) {
        case 0: return 0;
        case 1: return 1;
        case 2: return r.uniform(i, value_dim, 0, skv);
        default: return skv + 1000;
    }
}

/// Every dimension order of --strides (the permutations of "bhsd"), "bhsd" first, in the order
/// std::next_permutation walks them with b < h < s < d.
std::vector<std::string> dimension_orders() {
    static constexpr std::string_view kDims = "bhsd";
    std::string o(kDims);
    std::vector<std::string> out;
    const auto rank = [](char a, char b) { return kDims.find(a) < kDims.find(b); };
    do out.push_back(o);
    while (std::next_permutation(o.begin(), o.end(), rank));
    return out;
}

/// The number of terms a typical output element sums: the median over the query rows that see a
/// key of the keys they see (O's sum over P V, dQ's over dS K) and, with a backward, the median
/// over the keys some query sees of the queries of the head group that see them (dK's and dV's sums).
i64 median_terms(const Problem& p) {
    const Dims& d = p.dims;
    std::vector<i64> rows, keys;
    for (i64 b = 0; b < d.B; ++b) {
        std::vector<i64> seen(static_cast<std::size_t>(d.S_kv) + 1, 0);  // difference array of the viewers
        for (i64 i = 0; i < d.S_q; ++i) {
            const auto [lo, hi] = visible_keys(p, b, i);
            if (hi <= lo) continue;
            rows.push_back(hi - lo);
            ++seen[static_cast<std::size_t>(lo)];
            --seen[static_cast<std::size_t>(hi)];
        }
        i64 viewers = 0;
        for (i64 j = 0; j < d.S_kv; ++j)
            if ((viewers += seen[static_cast<std::size_t>(j)]) > 0) keys.push_back(viewers * (d.H_q / d.H_kv));
    }
    const auto median = [](std::vector<i64>& v) {
        if (v.empty()) return i64{0};
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        return v[v.size() / 2];
    };
    const i64 m = median(rows);
    return has_backward(p.dir) && !keys.empty() ? std::min(m, median(keys)) : m;
}

/// Terms an output element must sum before a fill that zeroes most inputs (sparse: 80% zeros) or
/// makes each softmax row one-hot (tile_spikes: one dominant key) leaves most of it nonzero.
constexpr i64 kMinTermsForSparseFills = 8;

/// Keeps a drawn case's outputs mostly nonzero, so that the draw is not spent on a MISTRUSTED
/// case (docs/knobs_run.md#random-cases---randomn): with fewer than kMinTermsForSparseFills terms
/// per output element, a sparse or tile_spikes fill becomes exact; and a drawn dropout p is
/// lowered to the largest of kDrawnDropoutPs whose chance p^k of dropping every one of k terms is
/// below 1/4. Every form stays in the draw: both fills and every p are kept where the terms allow.
void keep_signal(Problem& p) {
    const i64 k = median_terms(p);
    if ((p.fill == Fill::sparse || p.fill == Fill::tile_spikes) && k < kMinTermsForSparseFills) p.fill = Fill::exact;
    if (!p.dropout || p.dropout->p == 0.f) return;
    while (p.dropout->p > kDrawnDropoutPs.front() && std::pow(static_cast<double>(p.dropout->p), static_cast<double>(k)) >= 0.25) {
        const auto it = std::find(kDrawnDropoutPs.begin(), kDrawnDropoutPs.end(), p.dropout->p);
        p.dropout->p = it == kDrawnDropoutPs.begin() || it == kDrawnDropoutPs.end() ? kDrawnDropoutPs.front() : *(it - 1);
    }
}

}  // namespace

void cap_cost(Problem& p) {
    Dims& d = p.dims;
    while (flops(p) > kRandomMaxFlops) {
        if (std::max(d.S_q, d.S_kv) > 16) {  // equal lengths stay equal
            const i64 q = d.S_q, kv = d.S_kv;
            if (q >= kv) d.S_q = (q + 1) / 2;
            if (kv >= q) d.S_kv = (kv + 1) / 2;
        } else if (d.B > 1) {
            d.B = (d.B + 1) / 2;
        } else if (d.H_q / d.H_kv > 1) {
            d.H_q = d.H_kv;
        } else if (d.H_kv > 1) {
            d.H_q = d.H_kv = 1;
        } else {
            d.D_qk = std::max<i64>(1, d.D_qk / 2);
            d.D_v = std::max<i64>(1, d.D_v / 2);
        }
    }
}

std::string draw_strides(const RandomDraws& r, u64 i, const Problem& p) {
    static constexpr Role kRoles[] = {Role::Q, Role::K, Role::V, Role::O, Role::dO, Role::dQ, Role::dK, Role::dV,
        Role::stats};
    static const std::vector<std::string> kOrders = dimension_orders();
    auto role = [&](u64 dim) { return kRoles[r.uniform(i, dim, 0, std::size(kRoles) - 1)]; };
    auto order = [&](u64 dim) { return kOrders[r.uniform(i, dim, 1, std::size(kOrders) - 1)]; };
    const bool bwd = has_backward(p.dir);
    switch (r.stratum(i, draw_stream::strides, 6)) {
        case 0: return "none";
        case 1: return fmt::format("{}:{}", role(draw_stream::stride_role), order(draw_stream::stride_order));
        case 2: {
            const Role a = role(draw_stream::stride_role), b = role(draw_stream::stride_role2);
            if (a == b) return fmt::format("{}:{}", a, order(draw_stream::stride_order));
            return fmt::format("{}:{}+{}:{}", a, order(draw_stream::stride_order), b, order(draw_stream::stride_order2));
        }
        case 3: return "Q:qkv+K:qkv+V:qkv";
        case 4: return bwd ? "dQ:qkv+dK:qkv+dV:qkv" : "Q:qkv+K:qkv+V:qkv";
        default: {  // bhsd with a row pitch of D + gap
            const Role ro = role(draw_stream::stride_role);
            const Geometry geo = geometry(p);
            const TensorGeom* t = geo.find(ro);
            if (!t) return "none";
            const auto [B, H, S, D] = t->dims;
            const i64 pitch = D + r.uniform(i, draw_stream::stride_gap, 1, 8);
            (void)B;
            return fmt::format("{}:{}x{}x{}x1", ro, H * S * pitch, S * pitch, pitch);
        }
    }
}

std::vector<i64> draw_lengths(const RandomDraws& r, u64 i, u64 salt, i64 B, i64 full) {
    std::vector<i64> out;
    for (i64 b = 0; b < B; ++b) out.push_back(r.uniform(i, draw_stream::pad_value + 0x40 * (salt + 2 * static_cast<u64>(b)), 1, full));
    return out;
}

bool KnobNeeds::has(KnobId k) const { return std::find(given.begin(), given.end(), k) != given.end(); }

Problem random_problem(u64 seed, u64 count, u64 i) {
    const RandomDraws r(seed, count);
    Problem p;
    auto pick = [&](u64 dim, u64 k) { return static_cast<std::size_t>(r.stratum(i, dim, k)); };
    Dims& d = p.dims;
    d.B = 1 + static_cast<i64>(pick(draw_stream::B, 4));
    d.H_kv = 1 + static_cast<i64>(pick(draw_stream::H_kv, 3));
    d.H_q = d.H_kv * kGroups[pick(draw_stream::group, kGroups.size())];
    d.S_q = draw_length(r, i, draw_stream::S_q, draw_stream::S_q_value);
    d.S_kv = pick(draw_stream::S_kv, 5) == 0 ? d.S_q : draw_length(r, i, draw_stream::S_kv, draw_stream::S_kv_value);
    d.D_qk = kHeadSizes[pick(draw_stream::D_qk, kHeadSizes.size())];
    d.D_v = pick(draw_stream::D_v, 2) == 0 ? d.D_qk : kHeadSizes[static_cast<std::size_t>(r.uniform(i, draw_stream::D_v_value, 0, kHeadSizes.size() - 1))];
    for (const Knob& k : knob_table())  // each knob's draw (driver/knobs.cpp), in table order
        if (k.hooks.draw) k.hooks.draw(p, KnobDraw{r, i, k.id});
    p.seed = static_cast<u64>(r.uniform(i, draw_stream::fill_seed, 1, 0x7fffffff));
    canonicalize_layouts(p);
    make_valid(p, {});
    if (flops(p) > kRandomMaxFlops) {  // a dropped feature (padding, a causal bias fill) showed more scores
        cap_cost(p);
        for (auto* lens : {&p.seq_len_q, &p.seq_len_kv})
            for (auto& v : *lens) v = std::min(v, lens == &p.seq_len_q ? d.S_q : d.S_kv);
        std::erase_if(p.strides, [](const auto& kv) { return kv.second.kind == TensorLayout::Kind::strides; });
        make_valid(p, {});
    }
    keep_signal(p);
    canonicalize_layouts(p);
    return p;
}

void draw_mask_details(u64 seed, u64 count, u64 i, Problem& p) { draw_mask_details(RandomDraws(seed, count), i, p); }

void draw_mask_details(const RandomDraws& r, u64 i, Problem& p) {
    auto pick = [&](u64 dim, u64 k) { return static_cast<std::size_t>(r.stratum(i, dim, k)); };
    const Problem defaults;
    p.window_left = defaults.window_left;
    p.window_right = defaults.window_right;
    p.bias_shape = defaults.bias_shape;
    p.mask_dt = defaults.mask_dt;
    p.mask_fill = defaults.mask_fill;
    p.implicit_mask = defaults.implicit_mask;
    switch (p.mask) {
        case Mask::window:
            p.window_left = draw_window_bound(r, i, draw_stream::window_left, draw_stream::window_left_value, p.dims.S_kv);
            p.window_right = draw_window_bound(r, i, draw_stream::window_right, draw_stream::window_right_value, p.dims.S_kv);
            break;
        case Mask::bias:
            p.bias_shape = kBiasShapeNames[pick(draw_stream::bias_shape, kBiasShapeNames.size())].value;
            if (const std::size_t m = pick(draw_stream::mask_dt, kDrawnDTypes.size() + 1); m > 0) p.mask_dt = kDrawnDTypes[m - 1];
            p.mask_fill = kMaskFillNames[pick(draw_stream::mask_fill, kMaskFillNames.size())].value;
            break;
        case Mask::causal_tl: case Mask::causal_br: p.implicit_mask = pick(draw_stream::implicit, 2) == 1; break;
        default: break;
    }
}

void bring_prerequisites(Problem& p, const std::vector<KnobId>& given, const RandomDraws& draws, u64 i) {
    const KnobNeeds needs{given, draws, i};
    for (const Knob& k : knob_table())  // each given knob's needs (driver/knobs.cpp), in table order
        if (k.hooks.needs && needs.has(k.id)) k.hooks.needs(p, needs);
}

std::optional<std::string> make_valid(Problem& p, const std::vector<KnobId>& given) {
    // The knobs a drawn feature may be dropped from, in their rows' drop order (KnobHooks::drop):
    // dependent features first, so that the features they depend on survive when they can.
    static const std::vector<const Knob*> droppable = [] {
        std::vector<const Knob*> v;
        for (const Knob& k : knob_table())
            if (k.hooks.drop > 0) v.push_back(&k);
        std::stable_sort(v.begin(), v.end(), [](const Knob* a, const Knob* b) { return a->hooks.drop < b->hooks.drop; });
        return v;
    }();
    auto err = validate(p);
    for (const Knob* k : droppable) {
        if (!err) break;
        if (std::find(given.begin(), given.end(), k->id) != given.end()) continue;
        k->reset(p);
        err = validate(p);
    }
    return err;
}

}  // namespace sdpa
