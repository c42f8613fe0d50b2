#include "core/geometry.hpp"
#include "core/sdpa_tensors.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

using i64 = std::int64_t;
using A4 = std::array<i64, 4>;

constexpr std::string_view kDimLetters = "bhsd";

/// a*b and a+b, or nullopt when they overflow a signed 64-bit integer.
std::optional<i64> mul(std::optional<i64> a, i64 b) {
    i64 r = 0;
    if (!a || __builtin_mul_overflow(*a, b, &r)) return std::nullopt;
    return r;
}
std::optional<i64> add(std::optional<i64> a, std::optional<i64> b) {
    i64 r = 0;
    if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
    return r;
}

/// The fp8 tensor of an io role (its descale, core/fp8.hpp), nullopt for the other roles.
std::optional<Fp8Tensor> fp8_tensor(Role r) {
    switch (r) {
        case Role::Q: return Fp8Tensor::Q;
        case Role::K: return Fp8Tensor::K;
        case Role::V: return Fp8Tensor::V;
        case Role::O: return Fp8Tensor::O;
        case Role::dO: return Fp8Tensor::dO;
        case Role::dQ: return Fp8Tensor::dQ;
        case Role::dK: return Fp8Tensor::dK;
        case Role::dV: return Fp8Tensor::dV;
        default: return std::nullopt;
    }
}

/// Span of t with checked arithmetic (nullopt on overflow); strides must be non-negative.
std::optional<i64> checked_span(const TensorGeom& t) {
    if (!t.ragged_offsets.empty()) return t.ragged_offsets.back();
    std::optional<i64> last = 0;
    for (std::size_t k = 0; k < 4; ++k) {
        if (t.dims[k] == 0) return 0;
        last = add(last, mul(t.dims[k] - 1, t.strides[k]));
    }
    return add(last, 1);
}

/// The layout a role has without a --strides override: --layout's order for the io roles,
/// dense bhsd for the others.
TensorLayout default_layout(const Problem& p, Role r) {
    const bool io = std::find(kIoRoles.begin(), kIoRoles.end(), r) != kIoRoles.end();
    if (io && p.layout == Layout::bshd) return *order_layout("bshd");
    return TensorLayout{};
}

/// Every permutation of "bhsd", bhsd and bshd first (the preferred spellings of a layout).
const std::vector<TensorLayout>& order_tags() {
    static const std::vector<TensorLayout> tags = [] {
        std::vector<TensorLayout> v{*order_layout("bhsd"), *order_layout("bshd")};
        std::string perm(kDimLetters);
        std::sort(perm.begin(), perm.end());
        do {
            const TensorLayout l = *order_layout(perm);
            if (std::find(v.begin(), v.end(), l) == v.end()) v.push_back(l);
        } while (std::next_permutation(perm.begin(), perm.end()));
        return v;
    }();
    return tags;
}

}  // namespace

std::int64_t TensorGeom::span() const {
    // checked_span saturated: defined for any strides, exact for validated ones.
    return checked_span(*this).value_or(std::numeric_limits<i64>::max());
}

bool TensorGeom::dense() const {
    i64 s = 1;
    for (std::size_t k = 4; k-- > 0;) {
        if (dims[k] > 1 && strides[k] != s) return false;
        s = saturating_mul(s, dims[k]);
    }
    return true;
}

std::array<std::int64_t, 4> TensorGeom::coords_of(std::int64_t off) const {
    if (!ragged_offsets.empty()) {  // the batch whose block holds `off`, then its coordinates within it
        const auto it = std::upper_bound(ragged_offsets.begin(), ragged_offsets.end() - 1, off);
        const auto a = std::max<i64>(0, static_cast<i64>(it - ragged_offsets.begin()) - 1);
        TensorGeom inner = *this;
        inner.ragged_offsets.clear();
        inner.ragged_rows.clear();
        inner.dims[0] = 1;
        A4 c = inner.coords_of(off - ragged_offsets[static_cast<std::size_t>(a)]);
        c[0] = a;
        return c;
    }
    std::array<std::size_t, 4> idx{0, 1, 2, 3};
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return strides[a] > strides[b]; });
    A4 c{0, 0, 0, 0};
    for (const std::size_t k : idx) {
        if (strides[k] <= 0) continue;
        c[k] = off / strides[k];
        off %= strides[k];
    }
    return c;
}

std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
    i64 r = 0;
    if (!__builtin_mul_overflow(a, b, &r)) return r;
    return (a < 0) != (b < 0) ? std::numeric_limits<i64>::min() : std::numeric_limits<i64>::max();
}

std::vector<std::int64_t> dense_strides(const std::vector<std::int64_t>& dims) {
    std::vector<std::int64_t> s(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = saturating_mul(s[i], dims[i]);
    return s;
}

std::array<std::int64_t, 4> layout_strides(const std::array<std::int64_t, 4>& dims, const TensorLayout& l,
        std::int64_t pitch) {
    switch (l.kind) {
        case TensorLayout::Kind::strides: return l.strides;
        case TensorLayout::Kind::qkv: return {saturating_mul(dims[2], pitch), dims[3], pitch, 1};
        case TensorLayout::Kind::order: break;
    }
    A4 st{};
    i64 s = 1;
    for (std::size_t k = 4; k-- > 0;) {
        st[l.order[k]] = s;
        s = saturating_mul(s, dims[l.order[k]]);
    }
    return st;
}

bool non_overlapping(const TensorGeom& t) {
    if (!t.ragged_offsets.empty()) {  // each batch's stored rows non-overlapping, inside its own block
        for (i64 a = 0; a < t.dims[0]; ++a) {
            TensorGeom block = t;
            block.ragged_offsets.clear();
            block.ragged_rows.clear();
            block.dims[0] = 1;
            block.dims[2] = t.ragged_rows[static_cast<std::size_t>(a)];
            const auto k = static_cast<std::size_t>(a);
            if (t.ragged_offsets[k + 1] < t.ragged_offsets[k] || !non_overlapping(block) ||
                    block.span() > t.ragged_offsets[k + 1] - t.ragged_offsets[k])
                return false;
        }
        return true;
    }
    // Sufficient condition (PyTorch's non-overlapping test): sorted by stride, every dim of size > 1
    // starts past the extent of the dims inside it.
    std::vector<std::pair<i64, i64>> sd;  // (stride, size) of dims with size > 1
    for (std::size_t k = 0; k < 4; ++k)
        if (t.dims[k] > 1) sd.emplace_back(t.strides[k], t.dims[k]);
    std::sort(sd.begin(), sd.end());
    i64 extent = 1;
    bool sufficient = true;
    for (const auto& [s, n] : sd) {
        if (s <= 0) return false;
        if (s < extent) sufficient = false;
        extent = std::max(extent, add(mul(s, n - 1), extent).value_or(std::numeric_limits<i64>::max()));
    }
    if (sufficient) return true;
    // Interleaved strides: mark every offset (exact; bounded so a hostile case cannot take memory).
    const i64 span = t.span();
    if (span <= 0 || span > (i64{1} << 28)) return span == 0;
    std::vector<bool> seen(static_cast<std::size_t>(span), false);
    for (i64 a = 0; a < t.dims[0]; ++a)
        for (i64 b = 0; b < t.dims[1]; ++b)
            for (i64 c = 0; c < t.dims[2]; ++c)
                for (i64 d = 0; d < t.dims[3]; ++d) {
                    const auto o = static_cast<std::size_t>(t.offset(a, b, c, d));
                    if (seen[o]) return false;
                    seen[o] = true;
                }
    return true;
}

const TensorGeom& Geometry::at(Role r) const& {
    if (const TensorGeom* t = find(r)) return *t;
    throw std::logic_error(fmt::format("geometry: the problem has no tensor {}", r));
}

std::vector<const TensorGeom*> Geometry::all() const& {
    std::vector<const TensorGeom*> v;
    for (const auto& s : slots_)
        if (s) v.push_back(&*s);
    return v;
}

std::vector<const TensorGeom*> Geometry::inputs() const& {
    std::vector<const TensorGeom*> v;
    for (const auto* t : all())
        if (t->input) v.push_back(t);
    return v;
}

std::vector<const TensorGeom*> Geometry::outputs() const& {
    std::vector<const TensorGeom*> v;
    for (const auto* t : all())
        if (t->output) v.push_back(t);
    return v;
}

std::vector<Output> Geometry::output_list() const {
    std::vector<Output> v;
    for (const auto& row : kOutputNames)
        if (const auto& t = slots_[static_cast<std::size_t>(role_of(row.value))]; t && t->output) v.push_back(row.value);
    return v;
}

std::string_view role_shape_name(Role r) {
    switch (r) {
        case Role::Q:
        case Role::dQ: return "[B,H_q,S_q,D_qk]";
        case Role::K:
        case Role::dK: return "[B,H_kv,S_kv,D_qk]";
        case Role::V:
        case Role::dV: return "[B,H_kv,S_kv,D_v]";
        case Role::O:
        case Role::dO: return "[B,H_q,S_q,D_v]";
        case Role::stats: return "[B,H_q,S_q,1]";
        case Role::bias:
        case Role::dMask: return "[1|B,1|H_q,1|S_q,S_kv]";
        case Role::amax: return "[1,1,1,2] (fwd) or [1,1,1,4] (bwd)";
        case Role::seq_len_q:
        case Role::seq_len_kv: return "[B,1,1,1]";
        case Role::dropout_mask:
        case Role::scores: return "[B,H_q,S_q,S_kv]";
    }
    return "?";
}

std::int64_t qkv_pitch(const Dims& d) {
    // Saturating: absurd sizes give an absurd pitch that the size rule rejects, never an overflow.
    const std::optional<i64> p = add(add(mul(d.H_q, d.D_qk), mul(d.H_kv, d.D_qk)), mul(d.H_kv, d.D_v));
    return p.value_or(std::numeric_limits<i64>::max());
}

std::array<std::int64_t, 4> bias_dims(const Problem& p) {
    const Dims& d = p.dims;
    const BiasShape s = p.bias_shape;
    const bool per_b = s == BiasShape::b || s == BiasShape::bh || s == BiasShape::b_row || s == BiasShape::bh_row;
    const bool per_h = s == BiasShape::bh || s == BiasShape::h || s == BiasShape::h_row || s == BiasShape::bh_row;
    const bool row = s == BiasShape::one_row || s == BiasShape::b_row || s == BiasShape::h_row || s == BiasShape::bh_row;
    return {per_b ? d.B : 1, per_h ? d.H_q : 1, row ? 1 : d.S_q, d.S_kv};
}

std::vector<std::int64_t> merged_mask_dims(const Problem& p) {
    const Dims& d = p.dims;
    const bool padded = !p.seq_len_q.empty() || !p.seq_len_kv.empty();
    if (p.mask == Mask::none && !padded) return {};
    A4 b{1, 1, d.S_q, d.S_kv};
    if (p.mask == Mask::bias) b = bias_dims(p);
    if (padded) {  // per-batch -inf rows and columns
        b[0] = d.B;
        b[2] = d.S_q;
    }
    return {b.begin(), b.end()};
}

Geometry geometry(const Problem& p) {
    const Dims& d = p.dims;
    const bool fwd = p.dir != Dir::bwd, bwd = has_backward(p.dir);
    const bool padded = !p.seq_len_q.empty() || !p.seq_len_kv.empty();
    const ElemType io = elem_type(p.dt);
    const i64 pitch = qkv_pitch(d);
    // Ragged: the io roles packed token-major per batch (THD), rows by the padding lengths; only
    // when the lengths are well formed, the layout bshd and the role not overridden by --strides
    // (validate() rejects the rest, naming the rule, and the repro keeps what was asked).
    const bool ragged = p.ragged && padded && p.layout == Layout::bshd && [&] {
        for (const auto* lens : {&p.seq_len_q, &p.seq_len_kv})
            if (!lens->empty() && static_cast<i64>(lens->size()) != d.B) return false;
        return true;
    }();
    Geometry g;
    auto add = [&](Role r, ElemType t, A4 dims, bool in, bool out) {
        const auto it = p.strides.find(r);
        const TensorLayout l = it != p.strides.end() ? it->second : default_layout(p, r);
        TensorGeom tg;
        tg.role = r;
        tg.type = t;
        tg.dims = dims;
        tg.strides = layout_strides(dims, l, pitch);
        tg.input = in;
        tg.output = out;
        const std::optional<Fp8Tensor> f = fp8_tensor(r);
        if (f && is_fp8(p.dt)) tg.descale = p.fp8.of(*f);  // core/fp8.hpp
        const bool io = std::find(kIoRoles.begin(), kIoRoles.end(), r) != kIoRoles.end();
        if (ragged && io && it == p.strides.end()) {
            const bool q_rows = r == Role::Q || r == Role::O || r == Role::dO || r == Role::dQ;
            tg.ragged_offsets.push_back(0);
            for (i64 b = 0; b < d.B; ++b) {
                const i64 rows = std::clamp<i64>(q_rows ? valid_q(p, b) : valid_kv(p, b), 0, dims[2]);
                tg.ragged_rows.push_back(rows);
                tg.ragged_offsets.push_back(
                        sdpa::add(mul(rows, tg.strides[2]), tg.ragged_offsets.back()).value_or(std::numeric_limits<i64>::max()));
            }
        }
        g.set(std::move(tg));
    };
    const A4 q{d.B, d.H_q, d.S_q, d.D_qk}, k{d.B, d.H_kv, d.S_kv, d.D_qk}, v{d.B, d.H_kv, d.S_kv, d.D_v},
            o{d.B, d.H_q, d.S_q, d.D_v};
    add(Role::Q, io, q, true, false);
    add(Role::K, io, k, true, false);
    add(Role::V, io, v, true, false);
    add(Role::O, io, o, bwd, fwd);
    if (p.dir != Dir::fwd_i) add(Role::stats, ElemType::f32, {d.B, d.H_q, d.S_q, 1}, bwd, fwd);
    if (bwd) {
        add(Role::dO, io, o, true, false);
        add(Role::dQ, io, q, false, true);
        add(Role::dK, io, k, false, true);
        add(Role::dV, io, v, false, true);
    }
    if (p.mask == Mask::bias) add(Role::bias, elem_type(mask_dtype(p)), bias_dims(p), true, false);
    if (bwd && p.dmask) add(Role::dMask, ElemType::f32, bias_dims(p), false, true);
    if (is_fp8(p.dt)) {  // fwd: Amax_S, Amax_O; bwd: Amax_dQ, dK, dV, dP; fwd_bwd: both directions' six
        const i64 n = (fwd ? static_cast<i64>(kAmaxFwd.size()) : 0) + (bwd ? static_cast<i64>(kAmaxBwd.size()) : 0);
        add(Role::amax, ElemType::f32, {1, 1, 1, n}, false, true);
    }
    if (padded) {
        add(Role::seq_len_q, ElemType::s32, {d.B, 1, 1, 1}, true, false);
        add(Role::seq_len_kv, ElemType::s32, {d.B, 1, 1, 1}, true, false);
    }
    add(Role::scores, ElemType::f32, {d.B, d.H_q, d.S_q, d.S_kv}, false, false);
    return g;
}

std::optional<std::string> validate_geometry(const Geometry& g) {
    for (const TensorGeom* t : g.all()) {
        for (std::size_t k = 0; k < 4; ++k)
            if (t->strides[k] < 0)
                return fmt::format("stride rule: {} has stride {} in dimension {} (strides [{}] for dims [{}] in "
                                   "[B,H,S,D] order); strides must be non-negative",
                        t->role, t->strides[k], kDimLetters[k], fmt::join(t->strides, ","), fmt::join(t->dims, ","));
        // The host keeps an f32 copy of every tensor (the reference's score matrices in f64) and
        // the vendor a buffer of span elements of its type: all byte counts must fit in 64 bits.
        const i64 host_bytes = t->role == Role::scores ? 8 : 4;
        std::optional<i64> n = host_bytes;
        for (const i64 x : t->dims) n = mul(n, x);
        if (!n)
            return fmt::format("size rule: {} {} = [{}] at {} bytes per element overflows 64-bit byte counts", t->role,
                    role_shape_name(t->role), fmt::join(t->dims, ", "), host_bytes);
        if (!mul(checked_span(*t), static_cast<i64>(size_of(t->type))))
            return fmt::format("size rule: {} with strides [{}] for dims [{}] spans more bytes than a signed 64-bit integer holds", t->role,
                    fmt::join(t->strides, ","), fmt::join(t->dims, ","));
        if (t->output && !non_overlapping(*t))
            return fmt::format("overlap rule: {} strides [{}] for dims [{}] map distinct elements to the same memory "
                               "(a stride of 0 or overlapping rows); an output must not overlap itself",
                    t->role, fmt::join(t->strides, ","), fmt::join(t->dims, ","));
    }
    return std::nullopt;
}

void canonicalize_layouts(Problem& p) {
    const Geometry g = geometry(p);
    const i64 pitch = qkv_pitch(p.dims);
    const TensorLayout bhsd = *order_layout("bhsd"), bshd = *order_layout("bshd");
    int n_bhsd = 0, n_bshd = 0;
    for (const Role r : kIoRoles)
        if (const TensorGeom* t = g.find(r)) {
            const bool a = t->strides == layout_strides(t->dims, bhsd, pitch);
            const bool b = t->strides == layout_strides(t->dims, bshd, pitch);
            n_bhsd += a && !b;
            n_bshd += b && !a;
        }
    // Where no io tensor tells bhsd from bshd (H = 1 or S = 1), a ragged problem keeps its
    // layout: its rule names the layout, whatever strides it gives.
    if (!(p.ragged && n_bshd == n_bhsd)) p.layout = n_bshd > n_bhsd ? Layout::bshd : Layout::bhsd;
    RoleLayouts out;
    for (const Role r : kStridedRoles) {
        const TensorGeom* t = g.find(r);
        if (!t) continue;
        // Spellings compare by their exact strides, size-1 dims included: a vendor sees every
        // stride, so two spellings are one only when they give it the same numbers.
        if (t->strides == layout_strides(t->dims, default_layout(p, r), pitch)) continue;
        std::optional<TensorLayout> tag;
        for (const TensorLayout& l : order_tags())
            if (t->strides == layout_strides(t->dims, l, pitch)) {
                tag = l;
                break;
            }
        const TensorLayout qkv{TensorLayout::Kind::qkv, {0, 1, 2, 3}, {}};
        if (!tag && packable(r) && t->strides == layout_strides(t->dims, qkv, pitch)) tag = qkv;
        out[r] = tag.value_or(TensorLayout{TensorLayout::Kind::strides, {0, 1, 2, 3}, t->strides});
    }
    p.strides = std::move(out);
}

}  // namespace sdpa
