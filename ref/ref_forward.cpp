// The tiled reference forward: O, stats and the magnitudes M_O, M_stats (with the scores' own
// magnitudes mag_ij = |scale| ||q_i|| ||k_j|| + |bias_ij|, which bound the f32 rounding of
// Q K^T by Cauchy-Schwarz, as in ref_backward.cpp), one query block of one head per task, key
// blocks streamed flash-style (Dao et al. 2022, 2023): a running row max m and sum l, the O
// accumulators rescaled by exp(m_old - m_new) when the max grows.
// Per tile it runs three products: S = Q K^T, P V and P |V|; the score errors' share of M_O,
// sum_j P_ij mag_ij |V_jd|, is bounded per key block by alpha_i (P |V|)_id with alpha_i the
// largest mag_ij of the row's visible keys in the block, added from P |V|'s own chunk sums
// (gemm_acc_pair, which forms P V and P |V| in one pass over V) instead of a product of its own.
// With rounding emulation (bf16/f16) the vendor rounds the *normalised* P, which a single
// pass cannot know, so a first pass over the key blocks finds m and l and a second forms
// P = exp(s - m) / l exactly (one extra Q*K^T per tile, no rescaling).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <vector>

#include "ref/ref_kernels.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

namespace {

using namespace refk;

/// Read-only state shared by all tasks of one forward call.
struct FwdCtx {
    const Problem& p;
    const SdpaInputs& in;
    RefForward& r;
    const Tensor* bias;
    bool emul, mul;
    bool mags = true;  ///< RefOptions::magnitudes
    float v;
    i64 group, Dqkp, Dvp, nkb;
    double sqrt_skv;
    RefQK& qk;  ///< qn, kn, kt: the row norms of Q and K (mag's factors) and K's transposed key-block panels
    std::vector<float> vpad{};  ///< V with rows padded to Dvp floats, when D_v is not a multiple of kNR
    const float* vrows = nullptr;  ///< V's rows as the kernels read them (row stride Dvp)
    double gabs = 1;  ///< |d op(x, v) / dx|: |v| for mul, 1/|v| for div
    double kappa = 1;       ///< u_f32 / u_dt: the score-error term of M_O in units of the io roundoff
    /// f16 io with magnitudes: M_O carries f16_subnormal_share of the P a kernel may round to f16
    /// before P V (or keep in f32), with or without the emulation; it needs the normalised P, so
    /// the forward takes the emulation's two passes.
    bool f16_intermediates = false;
    const DropoutMask* drop = nullptr;  ///< the keep mask Z (dropout with p > 0), else null
    float inv_q = 1.f;                  ///< 1/(1-p) in f32 (1 with the no-rescale fault)
    float p_descale = 1.f;              ///< fp8: descale_S, the grid P is rounded onto (core/fp8.hpp)
    float* row_pmax = nullptr;          ///< fp8: per (b, h, i), the largest emulated P before its rounding
};

/// Per-thread scratch, O(kB * (D_qk + D_v) + kB * kB): nothing grows with S_q or S_kv.
struct FwdScratch {
    std::vector<float> q, s, mag, pw, pm, pd, m;
    std::vector<std::uint8_t> keep;
    std::vector<double> s64, acc, macc, msacc, l, mst, amag;
    std::vector<float> pn, pmag;  ///< f16 intermediates: the normalised P, and M_O's weights with its share
    explicit FwdScratch(const FwdCtx& c)
        : q(static_cast<std::size_t>(kB * c.Dqkp)), s(static_cast<std::size_t>(kB * kB)), mag(s.size()),
          pw(s.size()), pm(s.size()), pd(c.drop ? s.size() : 0), m(static_cast<std::size_t>(kB)),
          keep(c.drop ? s.size() : 0), s64(s.size()), acc(static_cast<std::size_t>(kB * c.Dvp)), macc(acc.size()),
          msacc(acc.size()), l(m.size()), mst(m.size()), amag(m.size()),
          pn(c.f16_intermediates ? s.size() : 0), pmag(pn.size()) {}
};

/// The scores' magnitudes of one tile: w.mag[ii, jj] = |scale| ||q_i|| ||k_j|| + |bias_ij| for
/// the visible (finite) scores of w.s (Cauchy-Schwarz: at least |scale| sum_d |q_d k_d|, what
/// the f32 rounding of the score scales with), 0 elsewhere; and w.amag[ii], the largest of row
/// ii (0 for rows past ni). qn: ||Q_i|| of the block's rows.
SDPA_REF_INLINE void score_magnitudes(const FwdCtx& c, FwdScratch& w, i64 b, i64 h, i64 i0, i64 ni, i64 j0,
    i64 nj, const double* qn) {
    const Dims& d = c.p.dims;
    const double* kn = &c.qk.kn[static_cast<std::size_t>((b * d.H_kv + h / c.group) * d.S_kv + j0)];
    for (i64 ii = 0; ii < kB; ++ii) {
        float* mrow = &w.mag[static_cast<std::size_t>(ii * kB)];
        if (ii >= ni) {
            std::fill(mrow, mrow + kB, 0.f);
            w.amag[static_cast<std::size_t>(ii)] = 0.0;
            continue;
        }
        const float* srow = &w.s[static_cast<std::size_t>(ii * kB)];
        const double qs = c.gabs * qn[ii];
#pragma omp simd
        for (i64 jj = 0; jj < nj; ++jj) mrow[jj] = static_cast<float>(qs * kn[jj]);
        std::fill(mrow + nj, mrow + kB, 0.f);
        if (c.bias) {
            const float* brow = &c.bias->data[c.bias->broadcast_offset(b, h, i0 + ii, j0)];
            for (i64 jj = 0; jj < nj; ++jj) mrow[jj] += std::fabs(brow[jj]);
        }
        // Masked scores (-inf: invisible, or a -inf bias entry) have P = 0: no term.
        const v16f ninf = v16f{} - kInf;
        v16f mx{};
        for (i64 jj = 0; jj < kB; jj += 16) {
            v16f m = load16(mrow + jj);
            m = load16(srow + jj) == ninf ? v16f{} : m;
            store16(mrow + jj, m);
            mx = m > mx ? m : mx;
        }
        float amax = 0.f;
        for (int k = 0; k < 16; ++k) amax = std::max(amax, static_cast<float>(mx[k]));
        w.amag[static_cast<std::size_t>(ii)] = amax;
    }
}

/// Zeroes the running row max (to -inf), sum and M_stats sum, and the O, M_O and score-error
/// accumulators of w, for a new query block.
SDPA_REF_INLINE void reset_rows(FwdScratch& w) {
    std::fill(w.msacc.begin(), w.msacc.end(), 0.0);
    std::fill(w.m.begin(), w.m.end(), -kInf);
    std::fill(w.l.begin(), w.l.end(), 0.0);
    std::fill(w.mst.begin(), w.mst.end(), 0.0);
    std::fill(w.acc.begin(), w.acc.end(), 0.0);
    std::fill(w.macc.begin(), w.macc.end(), 0.0);
}

/// Between the emulation's two passes: mf[ii] and inv_lf[ii] (kB each) get the first pass's final
/// row max (0 for a row with nothing visible) and 1 / sum (0 for a zero sum); the running max and
/// sum start again.
SDPA_REF_INLINE void take_final_rows(FwdScratch& w, float* mf, double* inv_lf) {
    for (i64 ii = 0; ii < kB; ++ii) {
        mf[ii] = w.m[ii] == -kInf ? 0.f : w.m[ii];
        inv_lf[ii] = w.l[ii] > 0 ? 1.0 / w.l[ii] : 0.0;
    }
    std::fill(w.m.begin(), w.m.end(), -kInf);
    std::fill(w.l.begin(), w.l.end(), 0.0);
}

/// The scores of the tile of query rows [i0, i0 + ni) and keys [j0, j0 + nj) of head (b, h) into
/// w.s (scores_tile: -inf where masked); on the main pass (last) also their magnitudes (with
/// RefOptions::magnitudes) and, with dropout, the keep mask Z into w.keep. qn: ||Q_i|| of the
/// block's rows.
SDPA_REF_INLINE void tile_scores(const FwdCtx& c, FwdScratch& w, i64 b, i64 h, i64 i0, i64 ni, i64 j0, i64 nj,
    const double* qn, bool last) {
    const Dims& d = c.p.dims;
    const i64 hk = h / c.group;
    const float* kt = &c.qk.kt[static_cast<std::size_t>(((b * d.H_kv + hk) * c.nkb + j0 / kB) * d.D_qk * kB)];
    std::fill(w.s64.begin(), w.s64.end(), 0.0);
    gemm_acc(kB, kB, d.D_qk, w.q.data(), c.Dqkp, kt, kB, w.s64.data(), kB);
    scores_tile(c.p, c.bias, b, h, i0, ni, j0, nj, c.v, c.mul, w.s64.data(), w.s.data(), nullptr);
    if (last && c.mags) score_magnitudes(c, w, b, h, i0, ni, j0, nj, qn);

    if (last && c.drop) {
        std::fill(w.keep.begin(), w.keep.end(), std::uint8_t{0});
        for (i64 ii = 0; ii < ni; ++ii) c.drop->keep_row(b, h, i0 + ii, j0, nj, &w.keep[static_cast<std::size_t>(ii * kB)]);
    }
}

/// Row ii (< ni) of a tile on the second of two passes: P as the vendor's TypeCast sees it,
/// exp(s - m) / l with the final m = mf and 1 / l = inv_lf (after the Dropout op, Z o P * (1/(1-p))
/// in f32, when there is one), rounded to the io dtype under emulation, into w.pw; unrounded into
/// w.pn for f16 intermediates; the row's largest into c.row_pmax (fp8). Row i0 + ii of head (b, h).
SDPA_REF_INLINE void normalised_p_row(const FwdCtx& c, FwdScratch& w, i64 b, i64 h, i64 i0, i64 ii, float mf,
    double inv_lf) {
    const float* srow = &w.s[static_cast<std::size_t>(ii * kB)];
    float* qrow = &w.pw[static_cast<std::size_t>(ii * kB)];
    float* nrow = c.f16_intermediates ? &w.pn[static_cast<std::size_t>(ii * kB)] : nullptr;
    const v16f mb = v16f{} + mf;
    for (i64 jj = 0; jj < kB; jj += 16) store16(qrow + jj, vexp(load16(srow + jj) - mb));
    float pmax = 0.f;
    for (i64 jj = 0; jj < kB; ++jj) {
        float pn = static_cast<float>(static_cast<double>(qrow[jj]) * inv_lf);
        if (c.drop) pn = w.keep[static_cast<std::size_t>(ii * kB + jj)] ? pn * c.inv_q : 0.f;
        pmax = std::max(pmax, pn);
        if (nrow) nrow[jj] = pn;
        qrow[jj] = c.emul ? round_scaled(c.p.dt, pn, c.p_descale) : pn;
    }
    if (c.row_pmax) {
        float& m = c.row_pmax[c.r.stats.offset(b, h, i0 + ii, 0)];
        m = std::max(m, pmax);
    }
}

/// The main pass's row ii after its running max grew by the factor alpha = exp(m_old - m_new):
/// O's accumulator (not under emulation, whose P is already normalised) and, with magnitudes,
/// M_O's, the score errors' and M_stats's sums rescaled by alpha; then M_stats's sum gets
/// sum_j P_ij mag_ij of the tile.
SDPA_REF_INLINE void follow_max(const FwdCtx& c, FwdScratch& w, i64 ii, double alpha) {
    const i64 Dvp = c.Dvp;
    const float* prow = &w.pm[static_cast<std::size_t>(ii * kB)];
    if (!c.mags) {  // O alone: only its accumulators follow the max
        if (alpha != 1.0 && !c.emul) {
            double* a = &w.acc[static_cast<std::size_t>(ii * Dvp)];
#pragma omp simd
            for (i64 k = 0; k < Dvp; ++k) a[k] *= alpha;
        }
        return;
    }
    if (alpha != 1.0) {
        w.mst[ii] *= alpha;
        double* a = &w.acc[static_cast<std::size_t>(ii * Dvp)];
        double* ma = &w.macc[static_cast<std::size_t>(ii * Dvp)];
        double* msa = &w.msacc[static_cast<std::size_t>(ii * Dvp)];
#pragma omp simd
        for (i64 k = 0; k < Dvp; ++k) ma[k] *= alpha;
#pragma omp simd
        for (i64 k = 0; k < Dvp; ++k) msa[k] *= alpha;
        if (!c.emul) {
#pragma omp simd
            for (i64 k = 0; k < Dvp; ++k) a[k] *= alpha;
        }
    }
    const float* mrow = &w.mag[static_cast<std::size_t>(ii * kB)];
    double ms = 0.0;
#pragma omp simd reduction(+ : ms)
    for (i64 jj = 0; jj < kB; ++jj) ms += static_cast<double>(prow[jj]) * static_cast<double>(mrow[jj]);
    w.mst[ii] += ms;
}

/// Row ii of a tile in the online recurrence: P = exp(s - m_new) (unnormalised) into w.pm, 0 while
/// nothing of the row is visible yet; the running max m and sum l updated; on the main pass
/// (last) the accumulators follow the new max (follow_max).
SDPA_REF_INLINE void online_row(const FwdCtx& c, FwdScratch& w, i64 ii, bool last) {
    const float* srow = &w.s[static_cast<std::size_t>(ii * kB)];
    float* prow = &w.pm[static_cast<std::size_t>(ii * kB)];
    const float bm = max_n(srow, kB);
    const float mnew = std::max(w.m[ii], bm);
    if (mnew == -kInf) {  // nothing visible in this row yet
        std::fill(prow, prow + kB, 0.f);
        return;
    }
    const double alpha = w.m[ii] == -kInf ? 0.0 : std::exp(static_cast<double>(w.m[ii]) - mnew);
    const v16f mb = v16f{} + mnew;
    for (i64 jj = 0; jj < kB; jj += 16) store16(prow + jj, vexp(load16(srow + jj) - mb));
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (i64 jj = 0; jj < kB; ++jj) sum += static_cast<double>(prow[jj]);
    w.l[ii] = w.l[ii] * alpha + sum;
    w.m[ii] = mnew;
    if (last) follow_max(c, w, ii, alpha);
}

/// f16 intermediates: M_O's weights into w.pmag, pexact plus each P's f16_subnormal_share in the
/// online units of pexact (P_ij = pexact_ij exp(m_final - m_now) / l_final: the same factor for
/// the row); mf, inv_lf as in normalised_p_row. Returns w.pmag's data.
SDPA_REF_INLINE const float* f16_weights(FwdScratch& w, i64 ni, const float* pexact, const float* mf,
    const double* inv_lf) {
    for (i64 ii = 0; ii < kB; ++ii) {
        const auto at = static_cast<std::size_t>(ii * kB);
        std::copy_n(pexact + at, kB, &w.pmag[at]);
        if (ii >= ni || w.m[ii] == -kInf || inv_lf[ii] == 0.0) continue;
        const double ratio = std::exp(static_cast<double>(mf[ii]) - w.m[ii]) / inv_lf[ii];
        for (i64 jj = 0; jj < kB; ++jj)
            if (const float sh = f16_subnormal_share(w.pn[at + static_cast<std::size_t>(jj)]); sh > 0.f)
                w.pmag[at + static_cast<std::size_t>(jj)] += static_cast<float>(sh * ratio);
    }
    return w.pmag.data();
}

/// The main pass's products of the tile of query rows [0, ni) and keys [j0, j0 + nj) of head
/// (b, h) once its P is formed: O += P V (P as the vendor's TypeCast rounds it under emulation),
/// and with magnitudes M_O += P |V| (the exact P) and the score errors' share; with dropout P_d
/// in place of P. mf, inv_lf as in normalised_p_row (f16 intermediates).
SDPA_REF_INLINE void tile_products(const FwdCtx& c, FwdScratch& w, i64 b, i64 h, i64 ni, i64 j0, i64 nj,
    const float* mf, const double* inv_lf) {
    const Dims& d = c.p.dims;
    const i64 Dvp = c.Dvp;
    for (i64 ii = ni; ii < kB; ++ii) {
        std::fill_n(&w.pm[static_cast<std::size_t>(ii * kB)], kB, 0.f);
        std::fill_n(&w.pw[static_cast<std::size_t>(ii * kB)], kB, 0.f);
    }
    // With dropout, P_d = Z o P / (1-p) (unnormalised here, like pm) replaces P in O and M_O.
    const float* pexact = w.pm.data();
    if (c.drop) {
        for (std::size_t e = 0; e < w.pd.size(); ++e) w.pd[e] = w.keep[e] ? w.pm[e] * c.inv_q : 0.f;
        pexact = w.pd.data();
    }
    // f16: M_O's weight also carries each P's f16_subnormal_share.
    const float* pmag = c.f16_intermediates ? f16_weights(w, ni, pexact, mf, inv_lf) : pexact;
    // O uses P as the vendor's TypeCast rounds it; M_O the exact P. The kernels read the
    // block's nj rows of V only.
    const float* vb = c.vrows + static_cast<std::size_t>(((b * d.H_kv + h / c.group) * d.S_kv + j0) * Dvp);
    // With O's P V, in the same pass over V: M_O's P|V|, and the score errors' share of
    // O's error, sum_j P_ij mag_ij |V_jd| <= amag_i sum_j P_ij |V_jd| (the other share,
    // sum_j P_ij mag_ij |O_i|, is mst |O_i| at the end).
    if (c.mags)
        gemm_acc_pair(kB, Dvp, nj, c.emul ? w.pw.data() : pexact, pmag, kB, vb, Dvp, w.acc.data(), w.macc.data(),
            Dvp, w.msacc.data(), w.amag.data());
    else  // bitwise gemm_acc_pair's first product (ref_kernels.hpp)
        gemm_acc(kB, Dvp, nj, c.emul ? w.pw.data() : pexact, kB, vb, Dvp, w.acc.data(), Dvp);
}

/// O, stats and (with magnitudes) M_O, M_stats of query rows [i0, i0 + ni) of head (b, h) from
/// the block's final accumulators, row max and sum.
SDPA_REF_INLINE void write_rows(const FwdCtx& c, const FwdScratch& w, i64 b, i64 h, i64 i0, i64 ni) {
    const i64 Dv = c.p.dims.D_v, Dvp = c.Dvp;
    for (i64 ii = 0; ii < ni; ++ii) {
        const i64 i = i0 + ii;
        float* o = &c.r.O.data[c.r.O.offset(b, h, i, 0)];
        const std::size_t si = c.r.stats.offset(b, h, i, 0);
        if (!c.mags) {
            const bool masked = w.m[ii] == -kInf;
            const double fo = masked ? 0.0 : c.emul ? 1.0 : 1.0 / w.l[ii];
            const double* a = &w.acc[static_cast<std::size_t>(ii * Dvp)];
            for (i64 k = 0; k < Dv; ++k) o[k] = masked ? 0.f : static_cast<float>(a[k] * fo);
            c.r.stats.data[si] = masked ? kInf : static_cast<float>(static_cast<double>(w.m[ii]) + std::log(w.l[ii]));
            continue;
        }
        float* mo = &c.r.M_O.data[c.r.M_O.offset(b, h, i, 0)];
        if (w.m[ii] == -kInf) {
            // Fully masked row: O = 0, M_O = 0, stats = +inf, M_stats = 1 + sqrt(S_kv).
            std::fill(o, o + Dv, 0.f);
            std::fill(mo, mo + Dv, 0.f);
            c.r.stats.data[si] = kInf;
            c.r.M_stats.data[si] = static_cast<float>(1.0 + c.sqrt_skv);
            continue;
        }
        const double f = 1.0 / w.l[ii], fo = c.emul ? 1.0 : f;
        const double* a = &w.acc[static_cast<std::size_t>(ii * Dvp)];
        const double* ma = &w.macc[static_cast<std::size_t>(ii * Dvp)];
        const double* msa = &w.msacc[static_cast<std::size_t>(ii * Dvp)];
        for (i64 k = 0; k < Dv; ++k) {
            o[k] = static_cast<float>(a[k] * fo);
            // M_O = P|V| + kappa (sum_j P_ij mag_ij |V_jd| + (sum_j P_ij mag_ij) (P|V|)_id): first order,
            // dO_i = sum_j P_ij ds_ij (V_j - O_i) for score errors |ds_ij| <= u_f32 mag_ij, and
            // |O_id| <= (P|V|)_id (which, unlike O, does not depend on the rounding emulation).
            mo[k] = static_cast<float>(ma[k] * f + c.kappa * (msa[k] * f + w.mst[ii] * f * ma[k] * f));
        }
        c.r.stats.data[si] = static_cast<float>(static_cast<double>(w.m[ii]) + std::log(w.l[ii]));
        c.r.M_stats.data[si] = static_cast<float>(1.0 + c.sqrt_skv + w.mst[ii] * f);
    }
}

/// O, stats, M_O, M_stats of query rows [i0, i0 + kB) of head (b, h).
SDPA_REF_CLONES void forward_rows(const FwdCtx& c, FwdScratch& w, i64 b, i64 h, i64 i0) {
    const Dims& d = c.p.dims;
    const i64 ni = std::min(kB, d.S_q - i0), Dqk = d.D_qk;
    pack_rows(w.q.data(), c.Dqkp, kB, &c.in.Q.data[c.in.Q.offset(b, h, i0, 0)], Dqk, ni, Dqk);
    const double* qn = &c.qk.qn[c.in.Q.offset(b, h, i0, 0) / static_cast<std::size_t>(Dqk)];
    reset_rows(w);

    // Emulation: a first pass finds the final row max and sum, so that the main pass can
    // form the normalised P the vendor rounds. The main pass is the same online recurrence
    // with or without emulation, so stats and magnitudes do not depend on it (bitwise).
    const bool two_pass = c.emul || c.f16_intermediates;
    std::vector<float> mf(static_cast<std::size_t>(two_pass ? kB : 0));
    std::vector<double> inv_lf(mf.size());
    const int passes = two_pass ? 2 : 1;
    for (int pass = 0; pass < passes; ++pass) {
        const bool last = pass == passes - 1;  // the main pass: forms O and the magnitudes
        if (last && two_pass) take_final_rows(w, mf.data(), inv_lf.data());
        for (i64 j0 = 0; j0 < d.S_kv; j0 += kB) {
            if (!block_any_visible(c.p, b, i0, i0 + ni, j0, j0 + kB)) continue;
            const i64 nj = std::min(kB, d.S_kv - j0);
            tile_scores(c, w, b, h, i0, ni, j0, nj, qn, last);
            for (i64 ii = 0; ii < ni; ++ii) {
                if (last && two_pass) normalised_p_row(c, w, b, h, i0, ii, mf[ii], inv_lf[ii]);
                online_row(c, w, ii, last);
            }
            if (last) tile_products(c, w, b, h, ni, j0, nj, mf.data(), inv_lf.data());
        }
    }
    write_rows(c, w, b, h, i0, ni);
}

}  // namespace

RefForward ref_forward(const Problem& p, const SdpaInputs& in, const RefOptions& opt) {
    check_inputs(p, in, false);
    const Dims& d = p.dims;
    RefForward r;
    const Geometry g = ref_geometry(p, false);
    r.O = Tensor(g.at(Role::O).dims, DType::f32);
    r.stats = Tensor(g.at(Role::stats).dims, DType::f32);
    if (opt.magnitudes) {
        r.M_O = Tensor(g.at(Role::O).dims, DType::f32);
        r.M_stats = Tensor(g.at(Role::stats).dims, DType::f32);
    }
    RefQK own;
    // Emulated rounding of P to the io dtype; for f32 it is a no-op and skipped.
    FwdCtx c{p, in, r, p.mask == Mask::bias ? &in.bias : nullptr, (opt.emulate_rounding && p.dt != DType::f32) || is_fp8(p.dt),
        p.scale_op == ScaleOp::mul, opt.magnitudes, scale_tensor_value(p), d.H_q / d.H_kv, round_up(d.D_qk, kNR),
        round_up(d.D_v, kNR), (d.S_kv + kB - 1) / kB, std::sqrt(static_cast<double>(d.S_kv)),
        opt.save_qk ? *opt.save_qk : own};
    c.gabs = std::fabs(c.mul ? static_cast<double>(c.v) : 1.0 / static_cast<double>(c.v));
    std::tie(c.drop, c.inv_q) = dropout_of(p, opt);
    const i64 nqb = (d.S_q + kB - 1) / kB;
    c.qk.kt.resize(static_cast<std::size_t>(d.B * d.H_kv * c.nkb * d.D_qk * kB));
    if (c.Dvp != d.D_v) c.vpad.resize(static_cast<std::size_t>(d.B * d.H_kv * d.S_kv * c.Dvp));
    c.vrows = c.vpad.empty() ? in.V.data.data() : c.vpad.data();
    c.qk.qn.resize(static_cast<std::size_t>(d.B * d.H_q * d.S_q));
    c.qk.kn.resize(static_cast<std::size_t>(d.B * d.H_kv * d.S_kv));
    c.kappa = opt.io_scores ? 1.0 : unit_roundoff(DType::f32) / unit_roundoff(p.dt);
    c.f16_intermediates = opt.magnitudes && p.dt == DType::f16;
    std::vector<float> row_pmax;
    if (is_fp8(p.dt)) {
        c.p_descale = p.fp8.of(Fp8Tensor::S);
        row_pmax.assign(r.stats.size(), 0.f);
        c.row_pmax = row_pmax.data();
    }

#pragma omp parallel if (work(d) >= kParallelWork)
    {
        transpose_panels(in.K, c.qk.kt.data());
        row_norms(in.Q, c.qk.qn.data());
        row_norms(in.K, c.qk.kn.data());
        if (!c.vpad.empty()) {
#pragma omp for schedule(static)
            for (i64 row = 0; row < d.B * d.H_kv * d.S_kv; ++row)
                pack_rows(&c.vpad[static_cast<std::size_t>(row * c.Dvp)], c.Dvp, 1,
                    &in.V.data[static_cast<std::size_t>(row * d.D_v)], d.D_v, 1, d.D_v);
        }  // implicit barrier after
        FwdScratch w(c);
        // Tasks are independent and each writes its own rows, so the result does not depend
        // on the thread count; causal tasks differ in cost, hence the dynamic schedule.
#pragma omp for collapse(3) schedule(dynamic, 1)
        for (i64 b = 0; b < d.B; ++b)
            for (i64 h = 0; h < d.H_q; ++h)
                for (i64 qb = 0; qb < nqb; ++qb) forward_rows(c, w, b, h, qb * kB);
    }
    if (is_fp8(p.dt) && opt.magnitudes) {
        // Amax_S: the largest P (after dropout, before scale_S), to the f32 softmax's accuracy
        // (kAmaxRelative of itself); Amax_O: the largest |O| before scale_O, with O's magnitudes.
        const float amax_s = *std::max_element(row_pmax.begin(), row_pmax.end());
        float amax_o = 0.f, mag_o = 0.f;
        for (std::size_t e = 0; e < r.O.size(); ++e) {
            amax_o = std::max(amax_o, std::fabs(r.O.data[e]));
            mag_o = std::max(mag_o, r.M_O.data[e]);
        }
        const double units = kAmaxRelative / unit_roundoff(p.dt);
        r.amax = Tensor({1, 1, 1, 2}, DType::f32);
        r.M_amax = r.amax;
        r.amax.data = {amax_s, amax_o};
        r.M_amax.data = {static_cast<float>(amax_s * units), mag_o};
    }
    return r;
}

}  // namespace sdpa
