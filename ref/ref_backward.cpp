// The tiled reference backward: dQ, dK, dV and the magnitudes M_dQ, M_dK, M_dV, flash-style
// (Dao et al. 2022, 2023): P is recomputed per (query block x key block) tile from the given
// stats, never stored whole. Two sweeps, each race-free without atomics:
//   rows:    one task per (b, h_q, query block) walks the key blocks -> dQ, M_dQ;
//   columns: one task per (b, h_kv, key block) walks the group's query heads and the query
//            blocks in a fixed order -> dK, dV, M_dK, M_dV (GQA group sums included).
// Each tile recomputes S = Q K^T and dP = dO V^T (the price of bounded memory).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <tuple>
#include <vector>

#include "ref/ref_kernels.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

namespace {

using namespace refk;

/// Read-only state shared by all tasks of one backward call.
struct BwdCtx {
    const Problem& p;
    const SdpaInputs& in;
    RefBackward& r;
    const Tensor* bias;
    bool emul, mul;
    float v;
    double gabs;  ///< |d op(x, v) / dx|: |v| for mul, 1/|v| for div
    i64 group, Dqkp, Dvp;
    i64 nkb;
    std::vector<double> Dr, rr;  ///< per (b, h_q, i): D_i = sum dO o O, r_i = ||dO_i o O_i||_2
    std::vector<float> kt, vt;   ///< K, V as transposed key-block panels (transpose_panels)
    const DropoutMask* drop = nullptr;  ///< the keep mask Z (dropout with p > 0), else null
    float inv_q = 1.f;                  ///< 1/(1-p) in f32 (1 with the no-rescale fault)
    bool ds_dropped = false;            ///< fault: dS from the dropped P_d
    const float* kt_panel(i64 b, i64 hk, i64 j0) const {
        return &kt[static_cast<std::size_t>(((b * p.dims.H_kv + hk) * nkb + j0 / kB) * p.dims.D_qk * kB)];
    }
    const float* vt_panel(i64 b, i64 hk, i64 j0) const {
        return &vt[static_cast<std::size_t>(((b * p.dims.H_kv + hk) * nkb + j0 / kB) * p.dims.D_v * kB)];
    }
};

/// Per-thread scratch, O(kB * (D_qk + D_v) + kB * kB).
struct BwdScratch {
    std::vector<float> q, qabs, dO, dOabs, kb, kabs, s, p, pr, ds, dsu, wm;
    std::vector<double> s64, dp64, acc1, macc1, acc2, macc2;
    explicit BwdScratch(const BwdCtx& c) {
        const auto n = [](i64 x) { return static_cast<std::size_t>(x); };
        q.resize(n(kB * c.Dqkp));
        qabs.resize(q.size());
        kb.resize(q.size());
        kabs.resize(q.size());
        dO.resize(n(kB * c.Dvp));
        dOabs.resize(dO.size());
        for (auto* t : {&s, &p, &pr, &ds, &dsu, &wm}) t->resize(n(kB * kB));
        s64.resize(n(kB * kB));
        dp64.resize(s64.size());
        acc1.resize(q.size());
        macc1.resize(q.size());
        acc2.resize(dO.size());
        macc2.resize(dO.size());
    }
};

/// One tile: from packed q [kB x Dqkp], dO [kB x Dvp] and the K, V panels of the key block, fills
/// w.p (exact P, or P_d with dropout: the M_dV weight), w.pr (P or P_d as it enters the dV matmul), w.ds (scaled dS as it enters the dQ/dK
/// matmuls), w.dsu (dS unscaled and unrounded: dMask's terms) and w.wm (W = |dS| + P r_i), all [kB x kB] row-major over (query, key), zero
/// outside the visible part. Transposed (key-major) when `transpose`.
SDPA_REF_INLINE void grad_tile(const BwdCtx& c, BwdScratch& w, i64 b, i64 h, i64 i0, i64 ni, i64 j0, i64 nj,
    bool transpose) {
    const Dims& d = c.p.dims;
    std::fill(w.s64.begin(), w.s64.end(), 0.0);
    const i64 hk = h / c.group;
    gemm_acc(kB, kB, d.D_qk, w.q.data(), c.Dqkp, c.kt_panel(b, hk, j0), kB, w.s64.data(), kB);
    scores_tile(c.p, c.bias, b, h, i0, ni, j0, nj, c.v, c.mul, w.s64.data(), w.s.data(), nullptr);
    std::fill(w.dp64.begin(), w.dp64.end(), 0.0);
    gemm_acc(kB, kB, d.D_v, w.dO.data(), c.Dvp, c.vt_panel(b, hk, j0), kB, w.dp64.data(), kB);
    const std::size_t row0 = c.r.dQ.offset(b, h, i0, 0) / static_cast<std::size_t>(d.D_qk);
    for (i64 ii = 0; ii < kB; ++ii) {
        float prow[kB];
        const float* srow = &w.s[static_cast<std::size_t>(ii * kB)];
        if (ii < ni) {
            // stats = +inf (fully masked row) gives s - stats = -inf, so P = 0 and dQ = 0.
            const float st = c.in.stats.data[row0 + static_cast<std::size_t>(ii)];
            const v16f sb = v16f{} + st;
            for (i64 jj = 0; jj < kB; jj += 16) store16(prow + jj, vexp(load16(srow + jj) - sb));
        } else {
            std::fill(prow, prow + kB, 0.f);
        }
        const double Di = ii < ni ? c.Dr[row0 + static_cast<std::size_t>(ii)] : 0.0;
        const double ri = ii < ni ? c.rr[row0 + static_cast<std::size_t>(ii)] : 0.0;
        const double* dprow = &w.dp64[static_cast<std::size_t>(ii * kB)];
        float dsr[kB], wr[kB], dsu[kB];
        if (c.drop) {
            // Dropout (core/dropout.hpp): dS = P o (Z o dP / (1-p) - D); P_d = Z o P / (1-p) enters dV.
            std::uint8_t keep[kB] = {};
            if (ii < ni) c.drop->keep_row(b, h, i0 + ii, j0, nj, keep);
            const double iq = c.inv_q;
            const double g = c.mul ? static_cast<double>(c.v) : 1.0;
            for (i64 jj = 0; jj < kB; ++jj) {
                const double pij = prow[jj], dpd = keep[jj] ? dprow[jj] * iq : 0.0;
                const float pd = keep[jj] ? prow[jj] * c.inv_q : 0.f;
                const double ds = (c.ds_dropped ? static_cast<double>(pd) : pij) * (dpd - Di);
                dsr[jj] = static_cast<float>(c.mul ? ds * g : ds / c.v);
                dsu[jj] = static_cast<float>(ds);
                wr[jj] = static_cast<float>(std::fabs(ds) + pij * ri);
                prow[jj] = pd;
            }
        } else if (c.mul) {
#pragma omp simd
            for (i64 jj = 0; jj < kB; ++jj) {
                const double pij = prow[jj], ds = pij * (dprow[jj] - Di);
                dsr[jj] = static_cast<float>(ds * c.v);
                dsu[jj] = static_cast<float>(ds);
                // W_ij = P_ij (|dP_ij - D_i| + r_i) = |dS_ij| + P_ij r_i.
                wr[jj] = static_cast<float>(std::fabs(ds) + pij * ri);
            }
        } else {
#pragma omp simd
            for (i64 jj = 0; jj < kB; ++jj) {
                const double pij = prow[jj], ds = pij * (dprow[jj] - Di);
                dsr[jj] = static_cast<float>(ds / c.v);  // the division stays a division, as in the vendor graph
                dsu[jj] = static_cast<float>(ds);
                wr[jj] = static_cast<float>(std::fabs(ds) + pij * ri);
            }
        }
        float* pr = prow;  // P as it enters the dV matmul
        float prr[kB];
        if (c.emul) {
            for (i64 jj = 0; jj < kB; ++jj) {
                dsr[jj] = round_to(c.p.dt, dsr[jj]);
                prr[jj] = round_to(c.p.dt, prow[jj]);
            }
            pr = prr;
        }
        if (transpose) {
            for (i64 jj = 0; jj < kB; ++jj) {
                const auto at = static_cast<std::size_t>(jj * kB + ii);
                w.p[at] = prow[jj];
                w.pr[at] = pr[jj];
                w.ds[at] = dsr[jj];
                w.dsu[at] = dsu[jj];
                w.wm[at] = wr[jj];
            }
        } else {
            const auto at = static_cast<std::size_t>(ii * kB);
            std::memcpy(&w.p[at], prow, sizeof prow);
            std::memcpy(&w.pr[at], pr, sizeof prow);
            std::memcpy(&w.ds[at], dsr, sizeof dsr);
            std::memcpy(&w.dsu[at], dsu, sizeof dsu);
            std::memcpy(&w.wm[at], wr, sizeof wr);
        }
    }
}

/// dQ, M_dQ of query rows [i0, i0 + kB) of head (b, h).
SDPA_REF_CLONES void dq_rows(const BwdCtx& c, BwdScratch& w, i64 b, i64 h, i64 i0) {
    const Dims& d = c.p.dims;
    const i64 ni = std::min(kB, d.S_q - i0), hk = h / c.group, Dqk = d.D_qk, Dv = d.D_v;
    pack_rows(w.q.data(), c.Dqkp, kB, &c.in.Q.data[c.in.Q.offset(b, h, i0, 0)], Dqk, ni, Dqk);
    pack_rows(w.dO.data(), c.Dvp, kB, &c.in.dO.data[c.in.dO.offset(b, h, i0, 0)], Dv, ni, Dv);
    std::fill(w.acc1.begin(), w.acc1.end(), 0.0);
    std::fill(w.macc1.begin(), w.macc1.end(), 0.0);
    for (i64 j0 = 0; j0 < d.S_kv; j0 += kB) {
        if (!block_any_visible(c.p, b, i0, i0 + ni, j0, j0 + kB)) continue;
        const i64 nj = std::min(kB, d.S_kv - j0);
        const float* ksrc = &c.in.K.data[c.in.K.offset(b, hk, j0, 0)];
        pack_rows(w.kb.data(), c.Dqkp, kB, ksrc, Dqk, nj, Dqk);
        pack_rows(w.kabs.data(), c.Dqkp, kB, ksrc, Dqk, nj, Dqk, true);
        grad_tile(c, w, b, h, i0, ni, j0, nj, false);
        gemm_acc(kB, c.Dqkp, nj, w.ds.data(), kB, w.kb.data(), c.Dqkp, w.acc1.data(), c.Dqkp);
        gemm_acc(kB, c.Dqkp, nj, w.wm.data(), kB, w.kabs.data(), c.Dqkp, w.macc1.data(), c.Dqkp);
    }
    for (i64 ii = 0; ii < ni; ++ii) {
        float* dq = &c.r.dQ.data[c.r.dQ.offset(b, h, i0 + ii, 0)];
        float* mdq = &c.r.M_dQ.data[c.r.M_dQ.offset(b, h, i0 + ii, 0)];
        for (i64 k = 0; k < Dqk; ++k) {
            dq[k] = static_cast<float>(w.acc1[static_cast<std::size_t>(ii * c.Dqkp + k)]);
            mdq[k] = static_cast<float>(c.gabs * w.macc1[static_cast<std::size_t>(ii * c.Dqkp + k)]);
        }
    }
}

/// dK, dV, M_dK, M_dV of keys [j0, j0 + kB) of kv head (b, hk), summed over the group's query
/// heads and all query blocks in a fixed order (independent of the thread count).
SDPA_REF_CLONES void dkv_cols(const BwdCtx& c, BwdScratch& w, i64 b, i64 hk, i64 j0) {
    const Dims& d = c.p.dims;
    const i64 nj = std::min(kB, d.S_kv - j0), Dqk = d.D_qk, Dv = d.D_v;
    for (auto* a : {&w.acc1, &w.macc1, &w.acc2, &w.macc2}) std::fill(a->begin(), a->end(), 0.0);
    for (i64 h = hk * c.group; h < (hk + 1) * c.group; ++h)
        for (i64 i0 = 0; i0 < d.S_q; i0 += kB) {
            if (!block_any_visible(c.p, b, i0, i0 + kB, j0, j0 + nj)) continue;
            const i64 ni = std::min(kB, d.S_q - i0);
            const float* qsrc = &c.in.Q.data[c.in.Q.offset(b, h, i0, 0)];
            const float* dosrc = &c.in.dO.data[c.in.dO.offset(b, h, i0, 0)];
            pack_rows(w.q.data(), c.Dqkp, kB, qsrc, Dqk, ni, Dqk);
            pack_rows(w.qabs.data(), c.Dqkp, kB, qsrc, Dqk, ni, Dqk, true);
            pack_rows(w.dO.data(), c.Dvp, kB, dosrc, Dv, ni, Dv);
            pack_rows(w.dOabs.data(), c.Dvp, kB, dosrc, Dv, ni, Dv, true);
            grad_tile(c, w, b, h, i0, ni, j0, nj, true);
            gemm_acc(kB, c.Dvp, ni, w.pr.data(), kB, w.dO.data(), c.Dvp, w.acc2.data(), c.Dvp);
            gemm_acc(kB, c.Dvp, ni, w.p.data(), kB, w.dOabs.data(), c.Dvp, w.macc2.data(), c.Dvp);
            gemm_acc(kB, c.Dqkp, ni, w.ds.data(), kB, w.q.data(), c.Dqkp, w.acc1.data(), c.Dqkp);
            gemm_acc(kB, c.Dqkp, ni, w.wm.data(), kB, w.qabs.data(), c.Dqkp, w.macc1.data(), c.Dqkp);
        }
    for (i64 jj = 0; jj < nj; ++jj) {
        const i64 j = j0 + jj;
        for (i64 k = 0; k < Dqk; ++k) {
            const auto a = static_cast<std::size_t>(jj * c.Dqkp + k);
            c.r.dK.data[c.r.dK.offset(b, hk, j, k)] = static_cast<float>(w.acc1[a]);
            c.r.M_dK.data[c.r.M_dK.offset(b, hk, j, k)] = static_cast<float>(c.gabs * w.macc1[a]);
        }
        for (i64 k = 0; k < Dv; ++k) {
            const auto a = static_cast<std::size_t>(jj * c.Dvp + k);
            c.r.dV.data[c.r.dV.offset(b, hk, j, k)] = static_cast<float>(w.acc2[a]);
            c.r.M_dV.data[c.r.M_dV.offset(b, hk, j, k)] = static_cast<float>(w.macc2[a]);
        }
    }
}

/// dMask, M_dMask of bias element block (bb, hb, rows [i0, i0 + kB) or the one broadcast row,
/// keys [j0, j0 + kB)): the sum of dS (and of W) over every (b, h, i) that reads those bias
/// elements, in a fixed order (b, h, query block, row). With the dmask_no_reduce fault only
/// the first (b, h, i) of each broadcast group.
SDPA_REF_CLONES void dmask_block(const BwdCtx& c, BwdScratch& w, i64 bb, i64 hb, i64 i0, i64 j0, bool no_reduce) {
    const Dims& d = c.p.dims;
    const auto& md = c.r.dMask.dims;  // [1|B, 1|H_q, 1|S_q, S_kv]
    const bool all_b = md[0] == 1 && !no_reduce, all_h = md[1] == 1 && !no_reduce, all_i = md[2] == 1;
    const i64 nj = std::min(kB, d.S_kv - j0), Dqk = d.D_qk, Dv = d.D_v;
    const i64 ib0 = all_i ? 0 : i0, ib1 = all_i ? (no_reduce ? 1 : d.S_q) : std::min(d.S_q, i0 + kB);
    std::vector<double> sum(static_cast<std::size_t>(kB * kB), 0.0), msum(sum.size(), 0.0);
    for (i64 b = all_b ? 0 : bb; b < (all_b ? d.B : bb + 1); ++b)
        for (i64 h = all_h ? 0 : hb; h < (all_h ? d.H_q : hb + 1); ++h)
            for (i64 q0 = ib0; q0 < ib1; q0 += kB) {
                const i64 ni = std::min(kB, ib1 - q0);
                if (!block_any_visible(c.p, b, q0, q0 + ni, j0, j0 + nj)) continue;
                pack_rows(w.q.data(), c.Dqkp, kB, &c.in.Q.data[c.in.Q.offset(b, h, q0, 0)], Dqk, ni, Dqk);
                pack_rows(w.dO.data(), c.Dvp, kB, &c.in.dO.data[c.in.dO.offset(b, h, q0, 0)], Dv, ni, Dv);
                grad_tile(c, w, b, h, q0, ni, j0, nj, false);
                for (i64 ii = 0; ii < ni; ++ii)
                    for (i64 jj = 0; jj < nj; ++jj) {
                        const auto src = static_cast<std::size_t>(ii * kB + jj);
                        const auto dst = static_cast<std::size_t>((all_i ? 0 : ii) * kB + jj);
                        sum[dst] += static_cast<double>(w.dsu[src]);
                        msum[dst] += static_cast<double>(w.wm[src]);
                    }
            }
    const i64 rows = all_i ? 1 : std::min(kB, d.S_q - i0);
    for (i64 ii = 0; ii < rows; ++ii)
        for (i64 jj = 0; jj < nj; ++jj) {
            const auto a = static_cast<std::size_t>(ii * kB + jj);
            const std::size_t at = c.r.dMask.offset(bb, hb, all_i ? 0 : i0 + ii, j0 + jj);
            c.r.dMask.data[at] = static_cast<float>(sum[a]);
            c.r.M_dMask.data[at] = static_cast<float>(msum[a]);
        }
}

}  // namespace

RefBackward ref_backward(const Problem& p, const SdpaInputs& in, const RefOptions& opt) {
    check_inputs(p, in, true);
    const Dims& d = p.dims;
    RefBackward r;
    const Geometry g = ref_geometry(p, true);
    r.dQ = r.M_dQ = Tensor(g.at(Role::dQ).dims, DType::f32);
    r.dK = r.M_dK = Tensor(g.at(Role::dK).dims, DType::f32);
    r.dV = r.M_dV = Tensor(g.at(Role::dV).dims, DType::f32);
    if (p.dmask) r.dMask = r.M_dMask = Tensor(g.at(Role::dMask).dims, DType::f32);
    const bool mul = p.scale_op == ScaleOp::mul;
    const float v = scale_tensor_value(p);
    const i64 nkb0 = (d.S_kv + kB - 1) / kB;
    BwdCtx c{p, in, r, p.mask == Mask::bias ? &in.bias : nullptr, opt.emulate_rounding && p.dt != DType::f32, mul,
        v, std::fabs(mul ? static_cast<double>(v) : 1.0 / static_cast<double>(v)), d.H_q / d.H_kv,
        round_up(d.D_qk, kNR), round_up(d.D_v, kNR), nkb0, {}, {}, {}, {}};
    std::tie(c.drop, c.inv_q) = dropout_of(p, opt);
    c.ds_dropped = opt.dropout_ds_from_dropped_p;
    c.kt.resize(static_cast<std::size_t>(d.B * d.H_kv * nkb0 * d.D_qk * kB));
    c.vt.resize(static_cast<std::size_t>(d.B * d.H_kv * nkb0 * d.D_v * kB));
    const i64 rows = d.B * d.H_q * d.S_q;
    c.Dr.resize(static_cast<std::size_t>(rows));
    c.rr.resize(c.Dr.size());
    const i64 nqb = (d.S_q + kB - 1) / kB, nkb = (d.S_kv + kB - 1) / kB;
    const bool par = work(d) >= kParallelWork;

#pragma omp parallel if (par)
    {
#pragma omp for schedule(static)
        for (i64 row = 0; row < rows; ++row) {
            const float* dO = &in.dO.data[static_cast<std::size_t>(row * d.D_v)];
            const float* O = &in.O.data[static_cast<std::size_t>(row * d.D_v)];
            double Di = 0.0, r2 = 0.0;
            for (i64 k = 0; k < d.D_v; ++k) {
                const double t = static_cast<double>(dO[k]) * static_cast<double>(O[k]);
                Di += t;
                r2 += t * t;
            }
            c.Dr[static_cast<std::size_t>(row)] = Di;
            c.rr[static_cast<std::size_t>(row)] = std::sqrt(r2);
        }
        transpose_panels(in.K, c.kt.data());
        transpose_panels(in.V, c.vt.data());  // implicit barrier after
        BwdScratch w(c);
        // Every task writes only its own rows (dQ) or keys (dK, dV): no races, no atomics,
        // and each output element is summed in one fixed order whatever the thread count.
#pragma omp for collapse(3) schedule(dynamic, 1)
        for (i64 b = 0; b < d.B; ++b)
            for (i64 h = 0; h < d.H_q; ++h)
                for (i64 qb = 0; qb < nqb; ++qb) dq_rows(c, w, b, h, qb * kB);
#pragma omp for collapse(3) schedule(dynamic, 1)
        for (i64 b = 0; b < d.B; ++b)
            for (i64 hk = 0; hk < d.H_kv; ++hk)
                for (i64 kb = 0; kb < nkb; ++kb) dkv_cols(c, w, b, hk, kb * kB);
        if (p.dmask) {
            // One task per block of dMask elements: each owns its sums (no races, fixed order).
            const auto& md = r.dMask.dims;
            const i64 mqb = md[2] == 1 ? 1 : nqb;
#pragma omp for collapse(4) schedule(dynamic, 1)
            for (i64 bb = 0; bb < md[0]; ++bb)
                for (i64 hb = 0; hb < md[1]; ++hb)
                    for (i64 qb = 0; qb < mqb; ++qb)
                        for (i64 kb = 0; kb < nkb; ++kb) dmask_block(c, w, bb, hb, qb * kB, kb * kB, opt.dmask_no_reduce);
        }
    }
    return r;
}

}  // namespace sdpa
