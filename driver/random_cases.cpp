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

/// The drawn dimensions; each has its own stratification and value stream.
enum Dim : u64 {
    kDir = 1, kDt, kB, kHkv, kGroup, kSq, kSqValue, kSkv, kSkvValue, kDqk, kDv, kDvValue, kMask, kWindowL,
    kWindowLValue, kWindowR, kWindowRValue, kBiasShape, kMaskDt, kMaskFill, kImplicit, kPadding, kPadValue, kScale,
    kScaleValue, kScaleOp, kScaleDt, kScaleProperty, kFill, kLayout, kStrides, kStrideRole, kStrideRole2,
    kStrideOrder, kStrideOrder2, kStrideGap, kDmask, kDeterministic, kDropout, kDropoutP, kDropoutOffset,
    kDropoutOffsetValue, kDropoutSeed, kDropoutProperty, kFillSeed, kRagged,
};

/// Head sizes drawn for D_qk (and D_v): powers of two, multiples of 8 and tails (17, 72, 80).
constexpr std::array<i64, 16> kHeadSizes{1, 8, 16, 17, 24, 32, 40, 48, 64, 72, 80, 96, 112, 128, 160, 256};
constexpr std::array<i64, 5> kGroups{1, 2, 4, 7, 8};   ///< H_q / H_kv (7: a group that is no power of two)
constexpr std::array<i64, 5> kBlockLengths{16, 32, 64, 128, 256};
constexpr std::array<float, 4> kMulScales{0.0625f, 0.125f, 0.5f, 1.f};
constexpr std::array<float, 4> kDivScales{1.f, 2.f, 8.f, 16.f};
constexpr std::array<float, 4> kDropoutPs{0.1f, 0.25f, 0.5f, 0.9f};
constexpr std::array<DType, 3> kDTypes{DType::f32, DType::bf16, DType::f16};

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

/// Halves the largest sequence length, then B, then the heads, until the FLOPs are under the cap.
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

/// The --strides spelling of a drawn per-tensor layout: none, one or two permuted roles, packed
/// QKV inputs, packed gradients, or one role with a row pitch past its last column (a gap).
std::string draw_strides(const RandomDraws& r, u64 i, const Problem& p) {
    static constexpr Role kRoles[] = {Role::Q, Role::K, Role::V, Role::O, Role::dO, Role::dQ, Role::dK, Role::dV,
        Role::stats};
    static const std::vector<std::string> kOrders = dimension_orders();
    auto role = [&](u64 dim) { return kRoles[r.uniform(i, dim, 0, std::size(kRoles) - 1)]; };
    auto order = [&](u64 dim) { return kOrders[r.uniform(i, dim, 1, std::size(kOrders) - 1)]; };
    const bool bwd = has_backward(p.dir);
    switch (r.stratum(i, kStrides, 6)) {
        case 0: return "none";
        case 1: return fmt::format("{}:{}", role(kStrideRole), order(kStrideOrder));
        case 2: {
            const Role a = role(kStrideRole), b = role(kStrideRole2);
            if (a == b) return fmt::format("{}:{}", a, order(kStrideOrder));
            return fmt::format("{}:{}+{}:{}", a, order(kStrideOrder), b, order(kStrideOrder2));
        }
        case 3: return "Q:qkv+K:qkv+V:qkv";
        case 4: return bwd ? "dQ:qkv+dK:qkv+dV:qkv" : "Q:qkv+K:qkv+V:qkv";
        default: {  // bhsd with a row pitch of D + gap
            const Role ro = role(kStrideRole);
            const Geometry geo = geometry(p);
            const TensorGeom* t = geo.find(ro);
            if (!t) return "none";
            const auto [B, H, S, D] = t->dims;
            const i64 pitch = D + r.uniform(i, kStrideGap, 1, 8);
            (void)B;
            return fmt::format("{}:{}x{}x{}x1", ro, H * S * pitch, S * pitch, pitch);
        }
    }
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
/// lowered to the largest of kDropoutPs whose chance p^k of dropping every one of k terms is
/// below 1/4. Every form stays in the draw: both fills and every p are kept where the terms allow.
void keep_signal(Problem& p) {
    const i64 k = median_terms(p);
    if ((p.fill == Fill::sparse || p.fill == Fill::tile_spikes) && k < kMinTermsForSparseFills) p.fill = Fill::exact;
    if (!p.dropout || p.dropout->p == 0.f) return;
    while (p.dropout->p > kDropoutPs.front() && std::pow(static_cast<double>(p.dropout->p), static_cast<double>(k)) >= 0.25) {
        const auto it = std::find(kDropoutPs.begin(), kDropoutPs.end(), p.dropout->p);
        p.dropout->p = it == kDropoutPs.begin() || it == kDropoutPs.end() ? kDropoutPs.front() : *(it - 1);
    }
}

/// Per-batch valid lengths in [1, full].
std::vector<i64> draw_lengths(const RandomDraws& r, u64 i, u64 salt, i64 B, i64 full) {
    std::vector<i64> out;
    for (i64 b = 0; b < B; ++b) out.push_back(r.uniform(i, kPadValue + 0x40 * (salt + 2 * static_cast<u64>(b)), 1, full));
    return out;
}

}  // namespace

Problem random_problem(u64 seed, u64 count, u64 i) {
    const RandomDraws r(seed, count);
    Problem p;
    auto pick = [&](u64 dim, u64 k) { return static_cast<std::size_t>(r.stratum(i, dim, k)); };
    p.dir = kDirNames[pick(kDir, kDirNames.size())].value;
    p.dt = kDTypes[pick(kDt, kDTypes.size())];
    Dims& d = p.dims;
    d.B = 1 + static_cast<i64>(pick(kB, 4));
    d.H_kv = 1 + static_cast<i64>(pick(kHkv, 3));
    d.H_q = d.H_kv * kGroups[pick(kGroup, kGroups.size())];
    d.S_q = draw_length(r, i, kSq, kSqValue);
    d.S_kv = pick(kSkv, 5) == 0 ? d.S_q : draw_length(r, i, kSkv, kSkvValue);
    d.D_qk = kHeadSizes[pick(kDqk, kHeadSizes.size())];
    d.D_v = pick(kDv, 2) == 0 ? d.D_qk : kHeadSizes[static_cast<std::size_t>(r.uniform(i, kDvValue, 0, kHeadSizes.size() - 1))];

    p.mask = kMaskNames[pick(kMask, kMaskNames.size())].value;
    draw_mask_details(seed, count, i, p);
    cap_cost(p);
    switch (pick(kPadding, 5)) {  // 0 and 4: no padding
        case 1: p.seq_len_q = draw_lengths(r, i, 0, d.B, d.S_q); break;
        case 2: p.seq_len_kv = draw_lengths(r, i, 1, d.B, d.S_kv); break;
        case 3:
            p.seq_len_q = draw_lengths(r, i, 0, d.B, d.S_q);
            p.seq_len_kv = draw_lengths(r, i, 1, d.B, d.S_kv);
            break;
        default: break;
    }
    p.scale_op = kScaleOpNames[pick(kScaleOp, kScaleOpNames.size())].value;
    if (pick(kScale, 2) == 1) {
        const auto& values = p.scale_op == ScaleOp::mul ? kMulScales : kDivScales;
        p.scale = values[static_cast<std::size_t>(r.uniform(i, kScaleValue, 0, values.size() - 1))];
    }
    if (pick(kScaleDt, 2) == 1) p.scale_dt = DType::f32;
    p.scale_host_scalar = pick(kScaleProperty, 2) == 1;
    p.fill = kFillNames[pick(kFill, kFillNames.size())].value;
    p.layout = kLayoutNames[pick(kLayout, kLayoutNames.size())].value;
    p.strides = parse_role_layouts(draw_strides(r, i, p)).value_or(RoleLayouts{});
    p.dmask = pick(kDmask, 2) == 1;
    p.deterministic = pick(kDeterministic, 2) == 1;
    // Ragged in a third of the draws that have padding and bshd (about a tenth of all: its vendors are
    // GPUs, and oneDNN and PyTorch are UNIMPLEMENTED for it); no io stride override (make_valid
    // drops ragged where the rest still conflicts).
    p.ragged = pick(kRagged, 3) == 1 && (!p.seq_len_q.empty() || !p.seq_len_kv.empty()) && p.layout == Layout::bshd;
    if (p.ragged)
        for (const Role r : kIoRoles) p.strides.erase(r);
    if (const std::size_t dr = pick(kDropout, 4); dr >= 2) {
        Dropout dp;
        dp.p = dr == 2 ? 0.f : kDropoutPs[static_cast<std::size_t>(r.uniform(i, kDropoutP, 0, kDropoutPs.size() - 1))];
        dp.seed = static_cast<u64>(r.uniform(i, kDropoutSeed, 1, 0x7fffffff));
        const std::size_t off = pick(kDropoutOffset, 3);
        dp.offset = off == 0 ? 0 : off == 1 ? 1 : static_cast<u64>(r.uniform(i, kDropoutOffsetValue, 2, 1'000'000));
        p.dropout = dp;
        p.dropout_device_scalars = pick(kDropoutProperty, 2) == 1;
    }
    p.seed = static_cast<u64>(r.uniform(i, kFillSeed, 1, 0x7fffffff));
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

void draw_mask_details(u64 seed, u64 count, u64 i, Problem& p) {
    const RandomDraws r(seed, count);
    auto pick = [&](u64 dim, u64 k) { return static_cast<std::size_t>(r.stratum(i, dim, k)); };
    p.window_left = p.window_right = 0;
    p.bias_shape = BiasShape::one;
    p.mask_dt.reset();
    p.mask_fill = MaskFill::random;
    p.implicit_mask = false;
    switch (p.mask) {
        case Mask::window:
            p.window_left = draw_window_bound(r, i, kWindowL, kWindowLValue, p.dims.S_kv);
            p.window_right = draw_window_bound(r, i, kWindowR, kWindowRValue, p.dims.S_kv);
            break;
        case Mask::bias:
            p.bias_shape = kBiasShapeNames[pick(kBiasShape, kBiasShapeNames.size())].value;
            if (const std::size_t m = pick(kMaskDt, kDTypes.size() + 1); m > 0) p.mask_dt = kDTypes[m - 1];
            p.mask_fill = kMaskFillNames[pick(kMaskFill, kMaskFillNames.size())].value;
            break;
        case Mask::causal_tl: case Mask::causal_br: p.implicit_mask = pick(kImplicit, 2) == 1; break;
        default: break;
    }
}

void bring_prerequisites(Problem& p, const std::vector<KnobId>& given, const RandomDraws& draws, u64 i) {
    using Given = std::vector<KnobId>;
    struct Rule {
        bool (*applies)(const Problem&, const Given&);
        void (*bring)(Problem&, const Given&, const RandomDraws&, u64);
    };
    static const auto has = [](const Given& g, KnobId knob) {
        return std::find(g.begin(), g.end(), knob) != g.end();
    };
    static constexpr Rule kRules[] = {
        {[](const Problem& q, const Given& g) { return q.dmask && has(g, KnobId::dmask); },  // dMask: a bias, a backward
            [](Problem& q, const Given& g, const RandomDraws&, u64) {
                if (!has(g, KnobId::mask)) q.mask = Mask::bias;
                if (!has(g, KnobId::dir) && !has_backward(q.dir)) q.dir = Dir::bwd;
            }},
        {[](const Problem&, const Given& g) {  // a bias knob: a bias
             return !has(g, KnobId::mask) && (has(g, KnobId::mask_shape) || has(g, KnobId::mask_dt) || has(g, KnobId::mask_fill));
         },
            [](Problem& q, const Given&, const RandomDraws&, u64) { q.mask = Mask::bias; }},
        {[](const Problem& q, const Given& g) {  // the implicit form: a causal mask
             return q.implicit_mask && has(g, KnobId::mask_form) && !has(g, KnobId::mask) && q.mask != Mask::causal_tl &&
                    q.mask != Mask::causal_br;
         },
            [](Problem& q, const Given&, const RandomDraws& r, u64 c) {
                q.mask = r.uniform(c, 0x2000, 0, 1) == 0 ? Mask::causal_tl : Mask::causal_br;
            }},
        {[](const Problem& q, const Given& g) {  // dMask and the implicit form: no padding
             return (q.dmask && has(g, KnobId::dmask)) || (q.implicit_mask && has(g, KnobId::mask_form));
         },
            [](Problem& q, const Given& g, const RandomDraws&, u64) {
                if (!has(g, KnobId::seq_len_q)) q.seq_len_q.clear();
                if (!has(g, KnobId::seq_len_kv)) q.seq_len_kv.clear();
            }},
        {[](const Problem& q, const Given& g) {  // ragged: padding lengths, bshd, no io stride override
             return q.ragged && has(g, KnobId::ragged);
         },
            [](Problem& q, const Given& g, const RandomDraws& r, u64 c) {
                if (!has(g, KnobId::layout)) q.layout = Layout::bshd;
                if (!has(g, KnobId::strides))
                    for (const Role role : kIoRoles) q.strides.erase(role);
                if (q.seq_len_q.empty() && q.seq_len_kv.empty() && !has(g, KnobId::seq_len_q))
                    q.seq_len_q = draw_lengths(r, c, 0, q.dims.B, q.dims.S_q);
            }},
        {[](const Problem& q, const Given& g) {  // device dropout scalars: a dropout
             return q.dropout_device_scalars && has(g, KnobId::dropout_property) && !q.dropout && !has(g, KnobId::dropout);
         },
            [](Problem& q, const Given&, const RandomDraws& r, u64 c) {
                q.dropout = Dropout{0.1f, static_cast<u64>(r.uniform(c, 0x2001, 1, 0x7fffffff)), 1};
            }},
    };
    for (const Rule& rule : kRules)
        if (rule.applies(p, given)) rule.bring(p, given, draws, i);
}

std::optional<std::string> make_valid(Problem& p, const std::vector<KnobId>& given) {
    struct Step {
        KnobId knob;
        void (*drop)(Problem&);
    };
    // Dependent features first, so that the features they depend on survive when they can.
    static constexpr Step kSteps[] = {
        {KnobId::strides, [](Problem& q) { q.strides.clear(); }},
        {KnobId::dropout_property, [](Problem& q) { q.dropout_device_scalars = false; }},
        {KnobId::dmask, [](Problem& q) { q.dmask = false; }},
        {KnobId::ragged, [](Problem& q) { q.ragged = false; }},
        {KnobId::mask_form, [](Problem& q) { q.implicit_mask = false; }},
        {KnobId::mask_fill, [](Problem& q) { q.mask_fill = MaskFill::random; }},
        {KnobId::mask_dt, [](Problem& q) { q.mask_dt.reset(); }},
        {KnobId::mask_shape, [](Problem& q) { q.bias_shape = BiasShape::one; }},
        {KnobId::scale, [](Problem& q) { q.scale.reset(); }},
        {KnobId::scale_dt, [](Problem& q) { q.scale_dt.reset(); }},
        {KnobId::seq_len_q, [](Problem& q) { q.seq_len_q.clear(); }},
        {KnobId::seq_len_kv, [](Problem& q) { q.seq_len_kv.clear(); }},
        {KnobId::dropout, [](Problem& q) { q.dropout.reset(); }},
        {KnobId::layout, [](Problem& q) { q.layout = Layout::bhsd; }},
    };
    auto err = validate(p);
    for (const Step& s : kSteps) {
        if (!err) break;
        if (std::find(given.begin(), given.end(), s.knob) != given.end()) continue;
        s.drop(p);
        err = validate(p);
    }
    return err;
}

}  // namespace sdpa
