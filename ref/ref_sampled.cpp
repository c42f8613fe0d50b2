// The reference on the rows of a RowSample (ref/row_sample.hpp): each output row it checks is
// computed exactly as the full reference computes it, from sub-problems that keep every key (query
// rows: O, stats, dQ) or every query (key rows: dK, dV and the dMask columns), so the cost is
// O(N (S_q + S_kv) D) per head instead of O(S_q S_kv D).
//
// A sub-problem gathers the sampled rows of the inputs along its sampled dimension and keeps the
// other whole; a mask that depends on the positions (causal, window) becomes an additive bias of 0
// and -inf over the sub-problem's (query, key) pairs, which the reference adds exactly (x + 0 = x),
// and the padding lengths become the sampled rows below them (the sample is sorted). Every
// reduction runs over the same blocks as in the full reference (dQ and O over every key in order,
// dK and dV over every query in order), so a sampled row is the full reference's row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "ref/ref_kernels.hpp"
#include "ref/row_sample.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

namespace {

using i64 = std::int64_t;

/// Which dimension a sub-problem samples: query rows (keys whole) or key rows (queries whole).
enum class Along { q, kv };

/// The keep mask of the full problem read at a sub-problem's positions (its query row i is the
/// full problem's q[i], its key j kv[j]; null: the same index).
class SampledMask final : public DropoutMask {
public:
    SampledMask(const DropoutMask& m, const std::vector<i64>* q, const std::vector<i64>* kv) : m_(m), q_(q), kv_(kv) {}
    void keep_row(i64 b, i64 h, i64 i, i64 j0, i64 n, std::uint8_t* keep) const override {
        const i64 qi = q_ ? (*q_)[static_cast<std::size_t>(i)] : i;
        if (!kv_) return m_.keep_row(b, h, qi, j0, n, keep);
        for (i64 jj = 0; jj < n; ++jj) m_.keep_row(b, h, qi, (*kv_)[static_cast<std::size_t>(j0 + jj)], 1, keep + jj);
    }
    std::string describe() const override { return m_.describe(); }

private:
    const DropoutMask& m_;
    const std::vector<i64>*q_, *kv_;
};

/// One sub-problem: its problem, inputs and keep mask. The inputs it does not sample are the
/// full problem's own tensors, moved in and given back when it ends (ref_*_sampled borrow them).
struct Part {
    Problem p;
    SdpaInputs in;
    std::unique_ptr<SampledMask> mask;
    SdpaInputs* lender = nullptr;
    std::vector<Role> borrowed;
    Part() = default;
    Part(const Part&) = delete;
    Part& operator=(const Part&) = delete;
    ~Part() {
        for (const Role r : borrowed) *lender->of(r) = std::move(*in.of(r));
    }
};

/// The number of `rows` (sorted) below `n`.
i64 below(const std::vector<i64>& rows, i64 n) {
    return std::lower_bound(rows.begin(), rows.end(), n) - rows.begin();
}

/// The mask of the full problem p as the sub-problem's additive bias: 0 where the full problem
/// sees key kv[j] from query q[i] (the full index where a list is null), -inf elsewhere; one
/// batch unless the padding makes the band depend on it.
Tensor band_bias(const Problem& p, const std::vector<i64>* q, const std::vector<i64>* kv, i64 sq, i64 skv) {
    const bool per_b = !p.seq_len_q.empty() || !p.seq_len_kv.empty();
    Tensor t({per_b ? p.dims.B : 1, 1, sq, skv}, DType::f32, -std::numeric_limits<float>::infinity());
    for (i64 b = 0; b < t.dims[0]; ++b)
        for (i64 i = 0; i < sq; ++i) {
            const auto [lo, hi] = visible_keys(p, b, q ? (*q)[static_cast<std::size_t>(i)] : i);
            const i64 j0 = kv ? below(*kv, lo) : lo, j1 = kv ? below(*kv, hi) : hi;  // the band is an interval
            for (i64 j = j0; j < j1; ++j) t.at(b, 0, i, j) = 0.f;
        }
    return t;
}

/// Into s, the sub-problem of p on `rows` along `a`, with its inputs (the backward's too when
/// `backward`: the sampled ones gathered, the others borrowed from `in`) and, with dropout, the keep
/// mask `mask` read at its positions.
void sub_problem(const Problem& p, SdpaInputs& in, const DropoutMask* mask, Along a, const std::vector<i64>& rows,
        bool backward, Part& s) {
    s.p = p;
    s.lender = &in;
    const bool on_q = a == Along::q;
    const i64 n = static_cast<i64>(rows.size());
    (on_q ? s.p.dims.S_q : s.p.dims.S_kv) = n;
    auto& lens = on_q ? s.p.seq_len_q : s.p.seq_len_kv;
    for (i64& l : lens) l = below(rows, l);
    s.p.ragged = false;  // the reference's tensors are dense whatever the vendor's layout
    s.p.strides = {};
    std::vector<std::pair<Role, bool>> roles{{Role::Q, on_q}, {Role::K, !on_q}, {Role::V, !on_q}};
    if (backward)
        for (const Role r : {Role::O, Role::dO, Role::stats}) roles.emplace_back(r, on_q);
    for (const auto [r, sampled] : roles) {
        if (sampled) {
            *s.in.of(r) = gather(*in.of(r), 2, rows);
        } else {
            *s.in.of(r) = std::move(*in.of(r));
            s.borrowed.push_back(r);
        }
    }
    switch (p.mask) {
        case Mask::bias:  // its values hold every masked key (causal_last_row's -inf too)
            s.in.bias = gather(in.bias, on_q ? 2 : 3, rows);
            s.p.mask_fill = MaskFill::random;  // visible() must not read the full problem's last row
            break;
        case Mask::causal_tl:
        case Mask::causal_br:
        case Mask::window:
            s.in.bias = band_bias(p, on_q ? &rows : nullptr, on_q ? nullptr : &rows, s.p.dims.S_q, s.p.dims.S_kv);
            s.p.mask = Mask::bias;
            s.p.mask_fill = MaskFill::random;
            s.p.bias_shape = s.in.bias.dims[0] == 1 ? BiasShape::one : BiasShape::b;
            break;
        case Mask::none: break;
    }
    if (!backward || on_q) s.p.dmask = false;  // dMask's columns come from the key rows' sub-problem
    if (mask) s.mask = std::make_unique<SampledMask>(*mask, on_q ? &rows : nullptr, on_q ? nullptr : &rows);
}

/// opt for a sub-problem: its keep mask, and none of the full problem's shared Q and K work.
RefOptions sub_options(const RefOptions& opt, const Part& s) {
    RefOptions o = opt;
    o.dropout = s.mask.get();
    o.qk = nullptr;
    o.save_qk = nullptr;
    return o;
}

/// The column identities' sums and magnitude sums (RefBackward::dK_sum and the rest) of p's
/// backward from its inputs, O(B H_q S_q D + B H_kv S_kv D); f64 sums.
void column_sums(const Problem& p, const SdpaInputs& in, RefBackward& r) {
    const Dims& d = p.dims;
    const i64 group = d.H_q / d.H_kv;
    for (Tensor* t : {&r.dK_sum, &r.M_dK_sum}) *t = Tensor({d.B, d.H_kv, 1, d.D_qk}, DType::f32);
    for (Tensor* t : {&r.dV_sum, &r.M_dV_sum}) *t = Tensor({d.B, d.H_kv, 1, d.D_v}, DType::f32);
    const float v = scale_tensor_value(p);
    const double kappa = unit_roundoff(DType::f32) / unit_roundoff(p.dt);  // u_f32 in io roundoffs
    const double gabs = p.scale_op == ScaleOp::mul ? std::fabs(static_cast<double>(v)) : 1.0 / std::fabs(static_cast<double>(v));
#pragma omp parallel for collapse(2) schedule(static)
    for (i64 b = 0; b < d.B; ++b)
        for (i64 hk = 0; hk < d.H_kv; ++hk) {
            // The largest ||V_j|| and |V_je| over the keys of (b, hk).
            double vn = 0;
            std::vector<double> vmax(static_cast<std::size_t>(d.D_v)), dv(vmax.size()), mdv(vmax.size());
            std::vector<double> mdk(static_cast<std::size_t>(d.D_qk));
            for (i64 j = 0; j < valid_kv(p, b); ++j) {
                double n2 = 0;
                for (i64 e = 0; e < d.D_v; ++e) {
                    const double x = in.V.at(b, hk, j, e);
                    n2 += x * x;
                    vmax[static_cast<std::size_t>(e)] = std::max(vmax[static_cast<std::size_t>(e)], std::fabs(x));
                }
                vn = std::max(vn, std::sqrt(n2));
            }
            for (i64 h = hk * group; h < (hk + 1) * group; ++h)
                for (i64 i = 0; i < valid_q(p, b); ++i) {
                    if (row_fully_masked(p, b, i)) continue;  // P_i = 0: no term of any sum
                    double D = 0, r2 = 0, dn2 = 0, oslack = 0;
                    for (i64 e = 0; e < d.D_v; ++e) {
                        const double g = in.dO.at(b, h, i, e), o = in.O.at(b, h, i, e);
                        D += g * o;
                        r2 += g * o * g * o;
                        dn2 += g * g;
                        oslack += 2 * std::fabs(g) * vmax[static_cast<std::size_t>(e)];
                        dv[static_cast<std::size_t>(e)] += g;
                        mdv[static_cast<std::size_t>(e)] += std::fabs(g);
                    }
                    // The given stats are an f32 LSE: off by u_f32 |stats_i| (and P's exp by a few ulp), they
                    // scale row i of P, so sum_j P_ij = 1 + u_f32 (|stats_i| + 4): that much of |dO_i|, in
                    // units of the io roundoff, joins M_dV_sum.
                    const double pslack = kappa * (std::fabs(static_cast<double>(in.stats.at(b, h, i, 0))) + 4);
                    for (i64 e = 0; e < d.D_v; ++e)
                        mdv[static_cast<std::size_t>(e)] += pslack * std::fabs(static_cast<double>(in.dO.at(b, h, i, e)));
                    const double w = std::sqrt(dn2) * vn + std::fabs(D) + std::sqrt(r2) + oslack;
                    for (i64 e = 0; e < d.D_qk; ++e) mdk[static_cast<std::size_t>(e)] += gabs * std::fabs(in.Q.at(b, h, i, e)) * w;
                }
            for (i64 e = 0; e < d.D_v; ++e) {
                r.dV_sum.at(b, hk, 0, e) = static_cast<float>(dv[static_cast<std::size_t>(e)]);
                r.M_dV_sum.at(b, hk, 0, e) = static_cast<float>(mdv[static_cast<std::size_t>(e)]);
            }
            for (i64 e = 0; e < d.D_qk; ++e) r.M_dK_sum.at(b, hk, 0, e) = static_cast<float>(mdk[static_cast<std::size_t>(e)]);
        }
}

}  // namespace

RefForward ref_forward_sampled(const Problem& p, SdpaInputs& in, const RefOptions& opt, const RowSample& s) {
    refk::check_inputs(p, in, false);
    Part part;
    sub_problem(p, in, opt.dropout, Along::q, s.q, false, part);
    return ref_forward(part.p, part.in, sub_options(opt, part));  // no amax: a maximum over every row
}

RefBackward ref_backward_sampled(const Problem& p, SdpaInputs& in, const RefOptions& opt, const RowSample& s) {
    refk::check_inputs(p, in, true);
    RefBackward r;
    {
        Part pq;
        sub_problem(p, in, opt.dropout, Along::q, s.q, true, pq);
        RefBackward bq = ref_backward(pq.p, pq.in, sub_options(opt, pq));
        r.dQ = std::move(bq.dQ);
        r.M_dQ = std::move(bq.M_dQ);
        r.p_max = bq.p_max;
    }
    {
        Part pk;
        sub_problem(p, in, opt.dropout, Along::kv, s.kv, true, pk);
        RefBackward bk = ref_backward(pk.p, pk.in, sub_options(opt, pk));
        for (auto [from, to] : {std::pair{&bk.dK, &r.dK}, {&bk.M_dK, &r.M_dK}, {&bk.dV, &r.dV}, {&bk.M_dV, &r.M_dV},
                 {&bk.dMask, &r.dMask}, {&bk.M_dMask, &r.M_dMask}})
            *to = std::move(*from);
        r.p_max = std::max(r.p_max, bk.p_max);
    }
    if (!(p.dropout && p.dropout->p > 0) && !is_fp8(p.dt)) column_sums(p, in, r);
    return r;  // no amax (ref_forward_sampled)
}

}  // namespace sdpa
