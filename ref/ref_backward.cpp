// The tiled reference backward: dQ, dK, dV and the magnitudes M_dQ, M_dK, M_dV in one sweep
// over the (query block x key block) tiles, flash-style (Dao et al. 2022, 2023): P is
// recomputed per tile from the given stats, never stored whole, and each tile's S = Q K^T, P,
// dP = dO V^T and dS are formed once and feed all six products (dV, M_dV, dK, M_dK, dQ, M_dQ).
//
// Tasks and determinism (no atomics; every sum in one fixed order whatever the thread count):
//   column task, one per (b, h_kv, key block): walks the group's query heads and query blocks
//     in the order (h, query block), forms each visible tile, accumulates dK, dV, M_dK, M_dV
//     of its keys itself (GQA group sums included), and leaves the tile's scaled dS and W in a
//     slot of a buffer of tiles;
//   row task, one per (b, h_q, query block): dQ += dS K and M_dQ += W |K| from the slots of its
//     key blocks, in key-block order.
//   Both run exactly the additions of the former sequential walks (dQ over key blocks, dK/dV
//   over query blocks), so the results are bitwise those of a one-thread run for any thread
//   count and any cutting of the work into chunks.
// Memory: the slot buffer (2 kB x kB floats per tile) is bounded (kSlotBudgetPerThread): the
// (b, h_kv) groups go in chunks of whole groups, or one group in rectangles of query blocks x
// key blocks, the running f64 sums carried from one rectangle to the next (dQ across key
// ranges, dK/dV across query ranges: at most one group's worth). Besides, O((S_q + S_kv) D)
// copies of the inputs: K and V transposed per key block, K, Q and dO zero-padded to the
// kernel's widths. dMask, when asked for, sums dS over the bias's broadcast dims, which
// crosses groups: it keeps a pass of its own that recomputes its tiles.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <tuple>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ref/ref_kernels.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

namespace {

using namespace refk;

/// Bytes of one half of the slot buffer per thread of the team (at least one slot per chunk).
constexpr double kSlotBudgetPerThread = 2.0 * (1 << 20);

/// A buffer of n values left uninitialised (each user writes before it reads), in memory that
/// the kernel may back with huge pages when it is large: fewer page faults per call, which
/// otherwise cost a few percent of a backward of S = 1024.
template <class T>
class RawBuffer {
public:
    /// Allocates n values (replacing any earlier allocation); throws std::bad_alloc.
    void allocate(std::size_t n) {
        constexpr std::size_t kHuge = 2u << 20;
        const std::size_t bytes = std::max<std::size_t>(n * sizeof(T), 64);
        const std::size_t align = bytes >= kHuge ? kHuge : 64;
        const std::size_t rounded = (bytes + align - 1) / align * align;
        void* m = std::aligned_alloc(align, rounded);
        if (!m) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (align == kHuge) (void)madvise(m, rounded, MADV_HUGEPAGE);
#endif
        p_.reset(static_cast<T*>(m));
        n_ = n;
    }
    /// The first value (null before allocate).
    T* data() const { return p_.get(); }
    /// Value i < size(); no bounds check.
    T& operator[](std::size_t i) const { return p_.get()[i]; }
    /// The n of the last allocate (0 before).
    std::size_t size() const { return n_; }

private:
    struct Free {
        void operator()(T* m) const { std::free(m); }
    };
    std::unique_ptr<T, Free> p_;
    std::size_t n_ = 0;
};

/// Rows of a [B, H, S, D] tensor as the kernels read them: rows of Dp >= D floats (zero-padded)
/// in blocks of kB (zero rows past S). The tensor's own rows when D == Dp, with a padded copy
/// of each head's last block only when S is not a multiple of kB; else a padded copy of all.
class PaddedRows {
public:
    /// Sizes the copy for X (call once, outside the parallel region).
    void allocate(const Tensor& X, i64 Dp) {
        x_ = &X;
        bh_ = X.dims[0] * X.dims[1];
        s_ = X.dims[2];
        d_ = X.dims[3];
        dp_ = Dp;
        nb_ = (s_ + kB - 1) / kB;
        direct_ = d_ == dp_;
        tail_ = s_ % kB != 0;
        copy_.allocate(static_cast<std::size_t>(bh_ * (direct_ ? (tail_ ? 1 : 0) : nb_) * kB * dp_));
    }
    /// Fills the copy of block qb of head bh (bh = b * H + h), where there is one.
    void pack(i64 bh, i64 qb) {
        const bool last = qb == nb_ - 1;
        if (direct_ && !(last && tail_)) return;
        const i64 rows = std::min(kB, s_ - qb * kB);
        pack_rows(copy_block(bh, qb), dp_, kB, &x_->data[static_cast<std::size_t>((bh * s_ + qb * kB) * d_)], d_, rows, d_);
    }
    /// Block qb of head bh: kB rows of Dp floats (row stride Dp).
    const float* block(i64 bh, i64 qb) const {
        if (direct_ && !(qb == nb_ - 1 && tail_)) return &x_->data[static_cast<std::size_t>((bh * s_ + qb * kB) * d_)];
        return copy_block(bh, qb);
    }
    /// Key rows j0 .. j0 + n - 1 of head bh for a kernel that reads only those n rows.
    const float* rows(i64 bh, i64 j0) const {
        return direct_ ? &x_->data[static_cast<std::size_t>((bh * s_ + j0) * d_)] : copy_block(bh, j0 / kB) + (j0 % kB) * dp_;
    }

private:
    float* copy_block(i64 bh, i64 qb) const { return copy_.data() + (direct_ ? bh : bh * nb_ + qb) * kB * dp_; }
    const Tensor* x_ = nullptr;
    i64 bh_ = 0, s_ = 0, d_ = 0, dp_ = 0, nb_ = 0;
    bool direct_ = true, tail_ = false;
    RawBuffer<float> copy_;
};

/// A rectangle of work: the groups [g0, g1) (g = b * H_kv + h_kv), their query-block units
/// [u0, u1) (unit u = (h - h_kv * group) * nqb + qb, so head-major as the walks go) and key
/// blocks [k0, k1). Either whole groups (u0 = 0, u1 = units, k0 = 0, k1 = nkb) or part of one
/// group (g1 = g0 + 1). The running sums carried between the rectangles of a group: unit u's
/// dQ at dq_carry slot u - dq_base, key block kb's dK/dV at dkv_carry slot kb - kv_base.
/// Consecutive chunks use the two halves of the slot buffer in turn (buf), so that one chunk's
/// row tasks run beside the next one's column tasks.
struct Chunk {
    i64 g0, g1, u0, u1, k0, k1, dq_base, kv_base, buf;
    i64 nu() const { return u1 - u0; }  ///< units per group in the chunk
    i64 nk() const { return k1 - k0; }  ///< key blocks in the chunk
};

/// Shared state of one backward call: read-only inputs and panels, and the buffers whose
/// parts each task owns.
struct BwdCtx {
    const Problem& p;
    const SdpaInputs& in;
    RefBackward& r;
    const Tensor* bias;
    bool emul, mul;
    float v;
    double gabs;  ///< |d op(x, v) / dx|: |v| for mul, 1/|v| for div
    i64 group, Dqkp, Dvp;
    i64 nqb, nkb, units;  ///< query blocks, key blocks, units per group (group * nqb)
    std::vector<double> Dr{}, rr{};  ///< per (b, h_q, i): D_i = sum dO o O, r_i = ||dO_i o O_i||_2
    /// ||Q_i||_2 per (b, h_q, i) and ||K_j||_2 per (b, h_kv, j): |scale| ||q_i|| ||k_j|| bounds the
    /// magnitude |scale| sum_d |q_d k_d| of score s_ij (Cauchy-Schwarz), what its f32 rounding
    /// scales with; and K as transposed key-block panels (transpose_panels). A forward's
    /// (RefOptions::qk) or computed here into `own_qk`.
    const double *qn = nullptr, *kn = nullptr;
    const float* kt = nullptr;
    std::vector<double> own_qn{}, own_kn{};
    RawBuffer<float> own_kt{};
    double kappa = 0;  ///< u_f32 / u_dt: the score errors' share of the magnitudes in io-roundoff units
    /// f16 io: the magnitudes of the gradients carry f16_subnormal_share of the P and scaled dS a
    /// kernel may round to f16 (or keep in f32), whether or not this reference emulates it.
    bool f16_intermediates = false;
    RawBuffer<float> vt{};  ///< V as transposed key-block panels (transpose_panels)
    PaddedRows kp{}, qp{}, dop{};  ///< K, Q (D_qk -> Dqkp) and dO (D_v -> Dvp) rows for the kernels
    const DropoutMask* drop = nullptr;  ///< the keep mask Z (dropout with p > 0), else null
    float inv_q = 1.f;                  ///< 1/(1-p) in f32 (1 with the no-rescale fault)
    bool ds_dropped = false;            ///< fault: dS from the dropped P_d
    float p_descale = 1.f, ds_descale = 1.f;  ///< fp8: descale_S and descale_dP (core/fp8.hpp)
    /// Per (b, query block, key block): 0 nothing visible, 1 some (block_any_visible over the
    /// padded block), 2 also every element of the block (block_all_visible); see tile_visibility.
    std::vector<std::uint8_t> vis{};
    RawBuffer<float> slots{};      ///< scaled dS, W [kB x kB] of the tiles of two chunks
    RawBuffer<double> dq_carry{};  ///< running dQ, M_dQ sums of units across key ranges
    RawBuffer<double> dkv_carry{};  ///< running dK, M_dK, dV, M_dV sums of key blocks across query ranges

    /// K^T panel [D_qk x kB] of the key block of key j0 of kv head (b, hk).
    const float* kt_panel(i64 b, i64 hk, i64 j0) const {
        return &kt[static_cast<std::size_t>(((b * p.dims.H_kv + hk) * nkb + j0 / kB) * p.dims.D_qk * kB)];
    }
    /// V^T panel [D_v x kB] of the key block of key j0 of kv head (b, hk).
    const float* vt_panel(i64 b, i64 hk, i64 j0) const {
        return &vt[static_cast<std::size_t>(((b * p.dims.H_kv + hk) * nkb + j0 / kB) * p.dims.D_v * kB)];
    }
    /// Q rows of the query block of row i0 of head (b, h) (PaddedRows::block).
    const float* q_block(i64 b, i64 h, i64 i0) const { return qp.block(b * p.dims.H_q + h, i0 / kB); }
    /// dO rows of the query block of row i0 of head (b, h).
    const float* do_block(i64 b, i64 h, i64 i0) const { return dop.block(b * p.dims.H_q + h, i0 / kB); }
    /// c.vis of (batch b, the query block of row i0, key block kb).
    int vis_of(i64 b, i64 i0, i64 kb) const { return vis[static_cast<std::size_t>((b * nqb + i0 / kB) * nkb + kb)]; }
    /// The slot of tile (unit u, key block kb) of group g in chunk ch: dS, then W.
    float* slot(const Chunk& ch, i64 g, i64 u, i64 kb) {
        const i64 s = ((g - ch.g0) * ch.nu() + (u - ch.u0)) * ch.nk() + (kb - ch.k0);
        return &slots[static_cast<std::size_t>(s * kSlotFloats) + (ch.buf ? slots.size() / 2 : 0)];
    }
    static constexpr i64 kSlotFloats = 2 * kB * kB;  ///< one slot: dS, W [kB x kB]
    /// Doubles per key block in dkv_carry: dK, M_dK [kB x Dqkp], then dV, M_dV [kB x Dvp].
    i64 dkv_doubles() const { return 2 * kB * (Dqkp + Dvp); }
    /// Doubles per unit in dq_carry: dQ, M_dQ [kB x Dqkp].
    i64 dq_doubles() const { return 2 * kB * Dqkp; }
};

/// Per-thread scratch, O(kB * (D_qk + D_v) + kB * kB).
struct BwdScratch {
    std::vector<float> s, p, pr, pm, mag, ds, dsu, wm;
    std::vector<double> s64, dp64, dkv, dq;
    float ds_amax = 0.f, ds_wmax = 0.f;  ///< fp8: the largest |scaled dS| and |scale| W of this thread's tiles
    float p_amax = 0.f;                  ///< fp8: the largest P (after dropout) of this thread's tiles
    explicit BwdScratch(const BwdCtx& c) {
        const auto n = [](i64 x) { return static_cast<std::size_t>(x); };
        for (auto* t : {&s, &p, &pr, &pm, &mag, &ds, &dsu, &wm}) t->resize(n(kB * kB));
        s64.resize(n(kB * kB));
        dp64.resize(s64.size());
        dkv.resize(n(c.dkv_doubles()));
        dq.resize(n(c.dq_doubles()));
    }
};

/// The score magnitudes of the tile of query rows [i0, i0 + ni) and keys [j0, j0 + nj) of head
/// (b, h) into w.mag: mag_ij = |scale| ||q_i|| ||k_j|| + |bias_ij| (Cauchy-Schwarz: at least
/// |scale| sum_d |q_d k_d|); a -inf bias entry (an explicit mask) adds nothing.
SDPA_REF_INLINE void tile_magnitudes(const BwdCtx& c, BwdScratch& w, i64 b, i64 h, i64 i0, i64 ni, i64 j0, i64 nj) {
    const Dims& d = c.p.dims;
    const std::size_t q0 = c.r.dQ.offset(b, h, i0, 0) / static_cast<std::size_t>(d.D_qk);
    const double* kn = &c.kn[c.r.dK.offset(b, h / c.group, j0, 0) / static_cast<std::size_t>(d.D_qk)];
    for (i64 ii = 0; ii < ni; ++ii) {
        float* mrow = &w.mag[static_cast<std::size_t>(ii * kB)];
        const double qs = c.gabs * c.qn[q0 + static_cast<std::size_t>(ii)];
#pragma omp simd
        for (i64 jj = 0; jj < nj; ++jj) mrow[jj] = static_cast<float>(qs * kn[jj]);
        if (c.bias) {
            const float* brow = &c.bias->data[c.bias->broadcast_offset(b, h, i0 + ii, j0)];
            for (i64 jj = 0; jj < nj; ++jj)  // a -inf entry (an explicit mask) has P = 0: no term
                if (std::isfinite(brow[jj])) mrow[jj] += std::fabs(brow[jj]);
        }
    }
}

/// One row of a tile (kB keys) as grad_tile forms it: P (w.p's row: P_d after dropout), dP
/// (f64), the score magnitudes; dS scaled (as it enters the dQ/dK matmuls), dS unscaled (dMask's
/// terms) and W, written; D_i and r_i (0 for rows past the block).
struct TileRow {
    float* p;
    const double* dp;
    const float* mag;
    float *ds, *dsu, *w;
    double D, r;
};

/// Row ii of a tile's P from the given stats into w.p: exp(s - stats_i), 0 for rows past ni and
/// fully masked rows. row0: the row index of the block's first row in the stats.
SDPA_REF_INLINE void p_row(const BwdCtx& c, BwdScratch& w, i64 ii, i64 ni, std::size_t row0) {
    const auto at = static_cast<std::size_t>(ii * kB);
    float* prow = &w.p[at];
    const float* srow = &w.s[at];
    const float st = ii < ni ? c.in.stats.data[row0 + static_cast<std::size_t>(ii)] : 0.f;
    if (ii < ni && std::isfinite(st)) {
        const v16f sb = v16f{} + st;
        for (i64 jj = 0; jj < kB; jj += 16) store16(prow + jj, vexp(load16(srow + jj) - sb));
    } else {  // a fully masked row, whatever its stats convention (+inf, -inf, 0): P = 0, dQ = 0
        std::fill(prow, prow + kB, 0.f);
    }
}

/// dS and W of a tile row t without dropout: dS = P o (dP - D), scaled by the scale op into t.ds,
/// unscaled into t.dsu, and W = |dS| (1 + kappa mag) + P r.
SDPA_REF_INLINE void ds_row(const BwdCtx& c, const TileRow& t) {
    const float* prow = t.p;
    const double* dprow = t.dp;
    const float* magrow = t.mag;
    float* dsr = t.ds;
    float* du = t.dsu;
    float* wr = t.w;
    const double Di = t.D, ri = t.r;
    if (c.mul) {
#pragma omp simd
        for (i64 jj = 0; jj < kB; ++jj) {
            const double pij = prow[jj], dsv = pij * (dprow[jj] - Di);
            dsr[jj] = static_cast<float>(dsv * c.v);
            du[jj] = static_cast<float>(dsv);
            // W_ij = P_ij (|dP_ij - D_i| + r_i) = |dS_ij| + P_ij r_i, and the score errors'
            // share kappa mag_ij |dS_ij|.
            wr[jj] = static_cast<float>(std::fabs(dsv) * (1.0 + c.kappa * magrow[jj]) + pij * ri);
        }
    } else {
#pragma omp simd
        for (i64 jj = 0; jj < kB; ++jj) {
            const double pij = prow[jj], dsv = pij * (dprow[jj] - Di);
            dsr[jj] = static_cast<float>(dsv / c.v);  // the division stays a division, as in the vendor graph
            du[jj] = static_cast<float>(dsv);
            wr[jj] = static_cast<float>(std::fabs(dsv) * (1.0 + c.kappa * magrow[jj]) + pij * ri);
        }
    }
}

/// dS and W of a tile row t with dropout (core/dropout.hpp): dS = P o (Z o dP / (1-p) - D) (from
/// P_d with the ds_dropped fault), written as ds_row does; then P_d = Z o P / (1-p), which enters
/// dV, replaces P in t.p. Z: the keep mask of row i of head (b, h), keys [j0, j0 + nj); all 0
/// for a row past the block (valid false).
SDPA_REF_INLINE void ds_row_dropout(const BwdCtx& c, const TileRow& t, i64 b, i64 h, i64 i, i64 j0, i64 nj,
    bool valid) {
    float* prow = t.p;
    const double* dprow = t.dp;
    const float* magrow = t.mag;
    std::uint8_t keep[kB] = {};
    if (valid) c.drop->keep_row(b, h, i, j0, nj, keep);
    const double iq = c.inv_q;
    const double g = c.mul ? static_cast<double>(c.v) : 1.0;
    for (i64 jj = 0; jj < kB; ++jj) {
        const double pij = prow[jj], dpd = keep[jj] ? dprow[jj] * iq : 0.0;
        const float pd = keep[jj] ? prow[jj] * c.inv_q : 0.f;
        const double dsv = (c.ds_dropped ? static_cast<double>(pd) : pij) * (dpd - t.D);
        t.ds[jj] = static_cast<float>(c.mul ? dsv * g : dsv / c.v);
        t.dsu[jj] = static_cast<float>(dsv);
        t.w[jj] = static_cast<float>(std::fabs(dsv) * (1.0 + c.kappa * magrow[jj]) + pij * t.r);
        prow[jj] = pd;
    }
}

/// The rest of tile row t once its dS and W are formed, at offset `at` of the tile: the M_dV
/// weight P (1 + kappa mag) into w.pm; with f16 intermediates (not for dMask's own pass,
/// `for_dmask`) the subnormal shares of P and of the scaled dS; under emulation the fp8 maxima
/// taken, then P (into w.pr) and the scaled dS rounded as the vendor's TypeCast does.
SDPA_REF_INLINE void finish_row(const BwdCtx& c, BwdScratch& w, const TileRow& t, std::size_t at, bool for_dmask) {
    const float* prow = t.p;
    const float* magrow = t.mag;
    float* dsr = t.ds;
    float* wr = t.w;
    float* pmr = &w.pm[at];  // the M_dV weight: P (or P_d) with the score errors' share
    const float kf = static_cast<float>(c.kappa);
#pragma omp simd
    for (i64 jj = 0; jj < kB; ++jj) pmr[jj] = prow[jj] + prow[jj] * kf * magrow[jj];
    if (c.f16_intermediates && !for_dmask) {
        // P (P_d) rounded to f16 before the dV matmul, and the scaled dS, |scale dS| <= |scale| W,
        // before the dQ and dK matmuls: what their subnormal range adds (dMask, an f32 sum of
        // the unrounded dS, is not affected: dmask_block passes dsu).
        const float g = static_cast<float>(c.gabs);
        for (i64 jj = 0; jj < kB; ++jj) {
            pmr[jj] += f16_subnormal_share(prow[jj]);
            wr[jj] += f16_subnormal_share(g * wr[jj]) / g;
        }
    }
    if (c.emul) {
        float* prr = &w.pr[at];
        for (i64 jj = 0; jj < kB; ++jj) {
            w.ds_amax = std::max(w.ds_amax, std::fabs(dsr[jj]));
            w.p_amax = std::max(w.p_amax, prow[jj]);
            w.ds_wmax = std::max(w.ds_wmax, static_cast<float>(c.gabs * wr[jj]));
            dsr[jj] = round_scaled(c.p.dt, dsr[jj], c.ds_descale);
            prr[jj] = round_scaled(c.p.dt, prow[jj], c.p_descale);
        }
    }
}

/// One tile, row-major over (query, key), zero outside the visible part: from the query
/// block's panels of Q and dO and the K, V panels of the key block, fills w.p (exact P, or P_d
/// with dropout), w.pr (P or P_d as it enters the dV matmul, under rounding emulation), w.pm
/// (the M_dV weight P (1 + kappa mag)), ds (scaled dS as it enters the dQ/dK matmuls), wm
/// (W = |dS| (1 + kappa mag) + P r_i) and, when not null, dsu (dS unscaled and unrounded:
/// dMask's terms). mag_ij = |scale| ||q_i|| ||k_j|| + |bias_ij| bounds the score's f32 rounding,
/// whose first-order effect on P is P_ij ds_ij (the stats are given, not renormalised).
SDPA_REF_INLINE void grad_tile(const BwdCtx& c, BwdScratch& w, i64 b, i64 h, i64 i0, i64 ni, i64 j0, i64 nj,
    float* ds, float* wm, float* dsu) {
    const Dims& d = c.p.dims;
    std::fill(w.s64.begin(), w.s64.end(), 0.0);
    const i64 hk = h / c.group;
    const float* q = c.q_block(b, h, i0);
    const float* dO = c.do_block(b, h, i0);
    gemm_acc(kB, kB, d.D_qk, q, c.Dqkp, c.kt_panel(b, hk, j0), kB, w.s64.data(), kB);
    scores_tile(c.p, c.bias, b, h, i0, ni, j0, nj, c.v, c.mul, w.s64.data(), w.s.data(), nullptr,
        ni == std::min(kB, d.S_q - i0) ? static_cast<int>(c.vis_of(b, i0, j0 / kB) == 2) : -1);
    tile_magnitudes(c, w, b, h, i0, ni, j0, nj);
    std::fill(w.dp64.begin(), w.dp64.end(), 0.0);
    gemm_acc(kB, kB, d.D_v, dO, c.Dvp, c.vt_panel(b, hk, j0), kB, w.dp64.data(), kB);
    const std::size_t row0 = c.r.dQ.offset(b, h, i0, 0) / static_cast<std::size_t>(d.D_qk);
    float dsu_row[kB];
    for (i64 ii = 0; ii < kB; ++ii) {
        const auto at = static_cast<std::size_t>(ii * kB);
        p_row(c, w, ii, ni, row0);
        const TileRow t{&w.p[at], &w.dp64[at], &w.mag[at], ds + at, dsu ? dsu + at : dsu_row, wm + at,
            ii < ni ? c.Dr[row0 + static_cast<std::size_t>(ii)] : 0.0,
            ii < ni ? c.rr[row0 + static_cast<std::size_t>(ii)] : 0.0};
        if (c.drop) ds_row_dropout(c, t, b, h, i0 + ii, j0, nj, ii < ni);
        else ds_row(c, t);
        finish_row(c, w, t, at, dsu != nullptr);
    }
}

/// Column task: key block kb of group g within chunk ch. For each visible (unit, kb) tile of
/// the chunk, in unit order: forms the tile (dS and W straight into its slot), then
/// dV += P^T dO, M_dV += P^T |dO|, dK += dS^T Q, M_dK += W^T |Q|, continuing the sums carried
/// from the group's previous query range. Writes dK, dV, M_dK, M_dV when the chunk ends the
/// group's query range, else carries the sums on.
SDPA_REF_CLONES void column_task(BwdCtx& c, BwdScratch& w, const Chunk& ch, i64 g, i64 kb) {
    const Dims& d = c.p.dims;
    const i64 b = g / d.H_kv, hk = g % d.H_kv, j0 = kb * kB, nj = std::min(kB, d.S_kv - j0);
    const i64 Dqkp = c.Dqkp, Dvp = c.Dvp;
    double* dk = w.dkv.data();
    double* mdk = dk + kB * Dqkp;
    double* dv = mdk + kB * Dqkp;
    double* mdv = dv + kB * Dvp;
    double* carry = c.dkv_carry.data() + (c.dkv_carry.size() ? (kb - ch.kv_base) * c.dkv_doubles() : 0);
    const bool first = ch.u0 == 0, last = ch.u1 == c.units;
    if (!last) {
        // Nothing visible here (causal: most rectangles off the diagonal): the carried sums
        // stay where they are, zeros when this is the group's first query range.
        bool any = false;
        for (i64 u = ch.u0; u < ch.u1 && !any; ++u) any = c.vis_of(b, (u % c.nqb) * kB, kb) != 0;
        if (!any) {
            if (first) std::fill_n(carry, c.dkv_doubles(), 0.0);
            return;
        }
    }
    if (!first)
        std::copy_n(carry, c.dkv_doubles(), dk);
    else
        std::fill(w.dkv.begin(), w.dkv.end(), 0.0);
    const float* pr = c.emul ? w.pr.data() : w.p.data();  // P as it enters the dV matmul
    for (i64 u = ch.u0; u < ch.u1; ++u) {
        const i64 h = hk * c.group + u / c.nqb, i0 = (u % c.nqb) * kB, ni = std::min(kB, d.S_q - i0);
        if (c.vis_of(b, i0, kb) == 0) continue;
        float* ds = c.slot(ch, g, u, kb);
        float* wm = ds + kB * kB;
        grad_tile(c, w, b, h, i0, ni, j0, nj, ds, wm, nullptr);
        // Key-major products: the tile's (query, key) arrays enter transposed.
        const float* q = c.q_block(b, h, i0);
        const float* dO = c.do_block(b, h, i0);
        gemm_acc_at(kB, Dvp, ni, pr, kB, dO, Dvp, dv, Dvp);
        gemm_acc_at(kB, Dvp, ni, w.pm.data(), kB, dO, Dvp, mdv, Dvp, true);
        gemm_acc_at(kB, Dqkp, ni, ds, kB, q, Dqkp, dk, Dqkp);
        gemm_acc_at(kB, Dqkp, ni, wm, kB, q, Dqkp, mdk, Dqkp, true);
    }
    if (!last) {
        std::copy_n(dk, c.dkv_doubles(), carry);
        return;
    }
    for (i64 jj = 0; jj < nj; ++jj) {
        const i64 j = j0 + jj;
        for (i64 k = 0; k < d.D_qk; ++k) {
            const auto a = static_cast<std::size_t>(jj * Dqkp + k);
            c.r.dK.data[c.r.dK.offset(b, hk, j, k)] = static_cast<float>(dk[a]);
            c.r.M_dK.data[c.r.M_dK.offset(b, hk, j, k)] = static_cast<float>(c.gabs * mdk[a]);
        }
        for (i64 k = 0; k < d.D_v; ++k) {
            const auto a = static_cast<std::size_t>(jj * Dvp + k);
            c.r.dV.data[c.r.dV.offset(b, hk, j, k)] = static_cast<float>(dv[a]);
            c.r.M_dV.data[c.r.M_dV.offset(b, hk, j, k)] = static_cast<float>(mdv[a]);
        }
    }
}

/// Row task: unit u of group g within chunk ch, after the chunk's column tasks. dQ += dS K and
/// M_dQ += W |K| over the visible key blocks of the chunk in order, continuing the sums
/// carried from the previous key range; writes dQ, M_dQ when the chunk ends the key range,
/// else carries the sums on.
SDPA_REF_CLONES void row_task(BwdCtx& c, BwdScratch& w, const Chunk& ch, i64 g, i64 u) {
    const Dims& d = c.p.dims;
    const i64 b = g / d.H_kv, hk = g % d.H_kv, h = hk * c.group + u / c.nqb, i0 = (u % c.nqb) * kB;
    const i64 ni = std::min(kB, d.S_q - i0), Dqkp = c.Dqkp, n = kB * Dqkp;
    double* acc = w.dq.data();
    double* macc = acc + n;
    double* carry = c.dq_carry.data() + (c.dq_carry.size() ? (u - ch.dq_base) * c.dq_doubles() : 0);
    const bool first = ch.k0 == 0, last = ch.k1 == c.nkb;
    if (!last) {
        bool any = false;  // as in column_task: nothing visible leaves the carried sums in place
        for (i64 kb = ch.k0; kb < ch.k1 && !any; ++kb) any = c.vis_of(b, i0, kb) != 0;
        if (!any) {
            if (first) std::fill_n(carry, 2 * n, 0.0);
            return;
        }
    }
    if (!first)
        std::copy_n(carry, 2 * n, acc);
    else
        std::fill(w.dq.begin(), w.dq.end(), 0.0);
    for (i64 kb = ch.k0; kb < ch.k1; ++kb) {
        const i64 j0 = kb * kB, nj = std::min(kB, d.S_kv - j0);
        if (c.vis_of(b, i0, kb) == 0) continue;
        const float* ds = c.slot(ch, g, u, kb);
        const float* k = c.kp.rows(b * d.H_kv + hk, j0);
        gemm_acc(kB, Dqkp, nj, ds, kB, k, Dqkp, acc, Dqkp);
        gemm_acc(kB, Dqkp, nj, ds + kB * kB, kB, k, Dqkp, macc, Dqkp, true);
    }
    if (!last) {
        std::copy_n(acc, 2 * n, carry);
        return;
    }
    for (i64 ii = 0; ii < ni; ++ii) {
        float* dq = &c.r.dQ.data[c.r.dQ.offset(b, h, i0 + ii, 0)];
        float* mdq = &c.r.M_dQ.data[c.r.M_dQ.offset(b, h, i0 + ii, 0)];
        for (i64 k = 0; k < d.D_qk; ++k) {
            dq[k] = static_cast<float>(acc[static_cast<std::size_t>(ii * Dqkp + k)]);
            mdq[k] = static_cast<float>(c.gabs * macc[static_cast<std::size_t>(ii * Dqkp + k)]);
        }
    }
}

/// c.vis for the query block of row i0 of batch b, from one visible_keys call per row: what
/// block_any_visible(p, b, i0, i0 + kB, j0, j0 + nj) and block_all_visible(p, b, i0, i0 + ni,
/// j0, j0 + nj) say for each key block (nj, ni: the block's keys and rows within S_kv, S_q).
void tile_visibility(BwdCtx& c, i64 b, i64 i0) {
    const Dims& d = c.p.dims;
    const i64 ni = std::min(kB, d.S_q - i0), vq = valid_q(c.p, b), vkv = valid_kv(c.p, b);
    i64 lo[kB], hi[kB];
    for (i64 ii = 0; ii < ni; ++ii) std::tie(lo[ii], hi[ii]) = visible_keys(c.p, b, i0 + ii);
    const i64 any_rows = std::clamp<i64>(vq - i0, 0, ni);  // rows below valid_q (kB past S_q: none)
    for (i64 kb = 0; kb < c.nkb; ++kb) {
        const i64 j0 = kb * kB, j1 = std::min(d.S_kv, j0 + kB);
        bool any = false, all = i0 + ni <= vq && j1 <= vkv;
        for (i64 ii = 0; ii < any_rows && !any; ++ii) any = lo[ii] < j1 && hi[ii] > j0 && lo[ii] < hi[ii];
        for (i64 ii = 0; ii < ni && all; ++ii) all = lo[ii] <= j0 && hi[ii] >= j1;
        c.vis[static_cast<std::size_t>((b * c.nqb + i0 / kB) * c.nkb + kb)] =
            static_cast<std::uint8_t>(any ? (all ? 2 : 1) : 0);
    }
}

/// The chunks of one backward call, in processing order, and the sizes of the buffers they
/// need (slots in floats, dq_carry and dkv_carry in doubles).
struct ChunkPlan {
    std::vector<Chunk> chunks;
    i64 slot_floats = 0, dq_carry = 0, dkv_carry = 0;
};

/// Each group in rectangles of at most `cap` tiles, nu units x nk key blocks, shaped to carry
/// little (dK/dV carries per tile ~ 1/nu, dQ ~ 1/nk) with enough column tasks for the team.
/// The rectangles of a group run either query range by query range, each across the key
/// ranges (dQ carried for the nu units of the range, dK/dV for all key blocks), or key range
/// by key range, each across the query ranges (dQ for all units, dK/dV for nk key blocks),
/// whichever carries less; both keep every running sum in order.
void plan_rectangles(const BwdCtx& c, i64 groups, int threads, i64 cap, ChunkPlan& plan) {
    const auto root = static_cast<i64>(std::sqrt(static_cast<double>(cap) / 2));
    i64 nk = std::min(c.nkb, std::max<i64>({1, root, std::min<i64>(cap, 2 * threads)}));
    const i64 nu = std::clamp<i64>(cap / nk, 1, c.units);
    nk = std::min(c.nkb, std::max(nk, cap / nu));
    const bool split_k = nk < c.nkb, split_u = nu < c.units;
    const i64 by_u = (split_k ? nu * c.dq_doubles() : 0) + (split_u ? c.nkb * c.dkv_doubles() : 0);
    const i64 by_k = (split_k ? c.units * c.dq_doubles() : 0) + (split_u ? nk * c.dkv_doubles() : 0);
    const bool u_outer = by_u <= by_k;
    for (i64 g = 0; g < groups; ++g) {
        const i64 outer_n = u_outer ? c.units : c.nkb, outer_step = u_outer ? nu : nk;
        const i64 inner_n = u_outer ? c.nkb : c.units, inner_step = u_outer ? nk : nu;
        for (i64 o = 0; o < outer_n; o += outer_step)
            for (i64 i = 0; i < inner_n; i += inner_step) {
                const i64 u0 = u_outer ? o : i, k0 = u_outer ? i : o;
                const i64 u1 = std::min(c.units, u0 + nu), k1 = std::min(c.nkb, k0 + nk);
                plan.chunks.push_back({g, g + 1, u0, u1, k0, k1, u_outer ? u0 : 0, u_outer ? 0 : k0, 0});
            }
    }
    plan.slot_floats = nu * nk * BwdCtx::kSlotFloats;
    if (split_k) plan.dq_carry = (u_outer ? nu : c.units) * c.dq_doubles();
    if (split_u) plan.dkv_carry = (u_outer ? c.nkb : nk) * c.dkv_doubles();
}

/// The plan for `groups` (b, h_kv) groups on `threads` threads: whole groups per chunk when a
/// group's tiles fit the slot budget, else rectangles (plan_rectangles).
ChunkPlan plan_chunks(const BwdCtx& c, i64 groups, int threads) {
    ChunkPlan plan;
    const double budget = kSlotBudgetPerThread * std::max(2, threads);
    const i64 cap = std::max<i64>(1, static_cast<i64>(budget / (4.0 * BwdCtx::kSlotFloats)));  // tiles per chunk
    const i64 full = c.units * c.nkb;
    if (full <= cap) {
        const i64 per = std::max<i64>(1, cap / full);
        for (i64 g0 = 0; g0 < groups; g0 += per)
            plan.chunks.push_back({g0, std::min(groups, g0 + per), 0, c.units, 0, c.nkb, 0, 0, 0});
        plan.slot_floats = std::min(per, groups) * full * BwdCtx::kSlotFloats;
    } else {
        plan_rectangles(c, groups, threads, cap, plan);
    }
    for (std::size_t i = 0; i < plan.chunks.size(); ++i) plan.chunks[i].buf = static_cast<i64>(i % 2);
    if (plan.chunks.size() > 1) plan.slot_floats *= 2;
    return plan;
}

/// dMask, M_dMask of bias element block (bb, hb, rows [i0, i0 + kB) or the one broadcast row,
/// keys [j0, j0 + kB)): the sum of dS (and of W) over every (b, h, i) that reads those bias
/// elements, in a fixed order (b, h, query block, row). With the dmask_no_reduce fault only
/// the first (b, h, i) of each broadcast group.
SDPA_REF_CLONES void dmask_block(const BwdCtx& c, BwdScratch& w, i64 bb, i64 hb, i64 i0, i64 j0, bool no_reduce) {
    const Dims& d = c.p.dims;
    const auto& md = c.r.dMask.dims;  // [1|B, 1|H_q, 1|S_q, S_kv]
    const bool all_b = md[0] == 1 && !no_reduce, all_h = md[1] == 1 && !no_reduce, all_i = md[2] == 1;
    const i64 nj = std::min(kB, d.S_kv - j0);
    const i64 ib0 = all_i ? 0 : i0, ib1 = all_i ? (no_reduce ? 1 : d.S_q) : std::min(d.S_q, i0 + kB);
    std::vector<double> sum(static_cast<std::size_t>(kB * kB), 0.0), msum(sum.size(), 0.0);
    for (i64 b = all_b ? 0 : bb; b < (all_b ? d.B : bb + 1); ++b)
        for (i64 h = all_h ? 0 : hb; h < (all_h ? d.H_q : hb + 1); ++h)
            for (i64 q0 = ib0; q0 < ib1; q0 += kB) {
                const i64 ni = std::min(kB, ib1 - q0);
                if (!block_any_visible(c.p, b, q0, q0 + ni, j0, j0 + nj)) continue;
                grad_tile(c, w, b, h, q0, ni, j0, nj, w.ds.data(), w.wm.data(), w.dsu.data());
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

/// The outputs of p's backward, zero, with their roles' dims: dQ, dK, dV and their magnitudes,
/// and dMask, M_dMask when p asks for dMask.
RefBackward backward_outputs(const Problem& p) {
    RefBackward r;
    const Geometry g = ref_geometry(p, true);
    // Each built on its own: a zero fill costs less than a copy of one.
    for (auto [t, role] : {std::pair{&r.dQ, Role::dQ}, {&r.M_dQ, Role::dQ}, {&r.dK, Role::dK}, {&r.M_dK, Role::dK},
             {&r.dV, Role::dV}, {&r.M_dV, Role::dV}})
        *t = Tensor(g.at(role).dims, DType::f32);
    if (p.dmask) r.dMask = r.M_dMask = Tensor(g.at(Role::dMask).dims, DType::f32);
    return r;
}

/// Q and K's norms and K's panels for c: a forward's on the same inputs (opt.qk) when its sizes
/// fit, else c's own, allocated here and computed by prepare_tiles. True for a forward's.
bool take_qk(BwdCtx& c, const RefOptions& opt) {
    const Dims& d = c.p.dims;
    const auto n = [](i64 x) { return static_cast<std::size_t>(x); };
    const bool shared_qk = opt.qk && opt.qk->qn.size() == n(d.B * d.H_q * d.S_q) &&
            opt.qk->kn.size() == n(d.B * d.H_kv * d.S_kv) && opt.qk->kt.size() == n(d.B * d.H_kv * c.nkb * d.D_qk * kB);
    if (shared_qk) {
        c.qn = opt.qk->qn.data();
        c.kn = opt.qk->kn.data();
        c.kt = opt.qk->kt.data();
    } else {
        c.own_qn.resize(n(d.B * d.H_q * d.S_q));
        c.own_kn.resize(n(d.B * d.H_kv * d.S_kv));
        c.own_kt.allocate(n(d.B * d.H_kv * c.nkb * d.D_qk * kB));
        c.qn = c.own_qn.data();
        c.kn = c.own_kn.data();
        c.kt = c.own_kt.data();
    }
    return shared_qk;
}

/// The work before the tasks, inside the parallel region (worksharing loops): D_i and r_i of
/// every row, Q and K's norms and K's panels unless shared_qk, V's panels, the tile visibility
/// and the padded rows of K, Q and dO; a barrier after.
void prepare_tiles(BwdCtx& c, bool shared_qk) {
    const Dims& d = c.p.dims;
    const SdpaInputs& in = c.in;
    const auto n = [](i64 x) { return static_cast<std::size_t>(x); };
#pragma omp for schedule(static)
    for (i64 row = 0; row < d.B * d.H_q * d.S_q; ++row) {
        const float* dO = &in.dO.data[n(row * d.D_v)];
        const float* O = &in.O.data[n(row * d.D_v)];
        double Di = 0.0, r2 = 0.0;
        for (i64 k = 0; k < d.D_v; ++k) {
            const double t = static_cast<double>(dO[k]) * static_cast<double>(O[k]);
            Di += t;
            r2 += t * t;
        }
        c.Dr[n(row)] = Di;
        c.rr[n(row)] = std::sqrt(r2);
    }
    if (!shared_qk) {
        row_norms(in.Q, c.own_qn.data());
        row_norms(in.K, c.own_kn.data());
        transpose_panels(in.K, c.own_kt.data());
    }
    transpose_panels(in.V, c.vt.data());
#pragma omp for collapse(2) schedule(static)
    for (i64 b = 0; b < d.B; ++b)
        for (i64 qb = 0; qb < c.nqb; ++qb) tile_visibility(c, b, qb * kB);
#pragma omp for collapse(2) schedule(static)
    for (i64 bh = 0; bh < d.B * d.H_kv; ++bh)
        for (i64 kb = 0; kb < c.nkb; ++kb) c.kp.pack(bh, kb);
#pragma omp for collapse(2) schedule(static)
    for (i64 bh = 0; bh < d.B * d.H_q; ++bh)
        for (i64 qb = 0; qb < c.nqb; ++qb) {
            c.qp.pack(bh, qb);
            c.dop.pack(bh, qb);
        }  // implicit barrier after
}

/// The chunks' column and row tasks, inside the parallel region. Column tasks own their keys
/// (dK, dV) and their slots, row tasks their query rows (dQ). Loop i runs chunk i's column
/// tasks, then chunk i - 1's (shorter) row tasks, which fill the team's tail; the barrier after
/// each loop orders a chunk's slot writes before its row tasks read them, the carries' stores
/// before the next chunk's loads, and the reads of a buffer half before the chunk after next
/// writes it again.
void run_chunks(BwdCtx& c, BwdScratch& w, const ChunkPlan& plan) {
    const auto nchunks = static_cast<i64>(plan.chunks.size());
    for (i64 i = 0; i <= nchunks; ++i) {
        const Chunk* prev = i > 0 ? &plan.chunks[static_cast<std::size_t>(i - 1)] : nullptr;
        const Chunk* cur = i < nchunks ? &plan.chunks[static_cast<std::size_t>(i)] : nullptr;
        const i64 nrow = prev ? (prev->g1 - prev->g0) * prev->nu() : 0;
        const i64 ncol = cur ? (cur->g1 - cur->g0) * cur->nk() : 0;
#pragma omp for schedule(dynamic, 1)
        for (i64 t = 0; t < ncol + nrow; ++t) {
            if (t < ncol)
                column_task(c, w, *cur, cur->g0 + t / cur->nk(), cur->k0 + t % cur->nk());
            else
                row_task(c, w, *prev, prev->g0 + (t - ncol) / prev->nu(), prev->u0 + (t - ncol) % prev->nu());
        }
    }
}

/// dMask and M_dMask, inside the parallel region: one task per block of dMask elements, each
/// owning its sums (no races, fixed order). no_reduce: the dmask_no_reduce fault.
void dmask_blocks(const BwdCtx& c, BwdScratch& w, bool no_reduce) {
    const auto& md = c.r.dMask.dims;
    const i64 mqb = md[2] == 1 ? 1 : c.nqb;
#pragma omp for collapse(4) schedule(dynamic, 1)
    for (i64 bb = 0; bb < md[0]; ++bb)
        for (i64 hb = 0; hb < md[1]; ++hb)
            for (i64 qb = 0; qb < mqb; ++qb)
                for (i64 kb = 0; kb < c.nkb; ++kb) dmask_block(c, w, bb, hb, qb * kB, kb * kB, no_reduce);
}

/// fp8: r's {Amax_dQ, Amax_dK, Amax_dV, Amax_dP} and their magnitudes (sdpa_ref.hpp), and p_max,
/// from the largest |scaled dS|, |scale| W and P over every thread's tiles (BwdScratch).
void set_amax(const Problem& p, float ds_amax, float ds_wmax, float p_amax, RefBackward& r) {
    auto amax = [](const Tensor& t) {
        float m = 0.f;
        for (const float x : t.data) m = std::max(m, std::fabs(x));
        return m;
    };
    r.amax = Tensor({1, 1, 1, 4}, DType::f32);
    r.M_amax = r.amax;
    r.amax.data = {amax(r.dQ), amax(r.dK), amax(r.dV), ds_amax};
    r.M_amax.data = {amax(r.M_dQ), amax(r.M_dK), amax(r.M_dV),
        static_cast<float>(ds_wmax * kAmaxRelative / unit_roundoff(p.dt))};
    r.p_max = p_amax;
}

}  // namespace

RefBackward ref_backward(const Problem& p, const SdpaInputs& in, const RefOptions& opt) {
    check_inputs(p, in, true);
    const Dims& d = p.dims;
    RefBackward r = backward_outputs(p);
    const bool mul = p.scale_op == ScaleOp::mul;
    const float v = scale_tensor_value(p);
    const i64 nqb = (d.S_q + kB - 1) / kB, nkb = (d.S_kv + kB - 1) / kB, group = d.H_q / d.H_kv;
    BwdCtx c{p, in, r, p.mask == Mask::bias ? &in.bias : nullptr, (opt.emulate_rounding && p.dt != DType::f32) || is_fp8(p.dt), mul,
        v, std::fabs(mul ? static_cast<double>(v) : 1.0 / static_cast<double>(v)), group,
        round_up(d.D_qk, kNR), round_up(d.D_v, kNR), nqb, nkb, group * nqb};
    std::tie(c.drop, c.inv_q) = dropout_of(p, opt);
    c.ds_dropped = opt.dropout_ds_from_dropped_p;
    if (is_fp8(p.dt)) {
        c.p_descale = p.fp8.of(Fp8Tensor::S);
        c.ds_descale = p.fp8.of(Fp8Tensor::dP);
    }
    float ds_amax = 0.f, ds_wmax = 0.f, p_amax = 0.f;
    const auto n = [](i64 x) { return static_cast<std::size_t>(x); };
    const bool shared_qk = take_qk(c, opt);
    c.vt.allocate(n(d.B * d.H_kv * nkb * d.D_v * kB));
    c.kp.allocate(in.K, c.Dqkp);
    c.qp.allocate(in.Q, c.Dqkp);
    c.dop.allocate(in.dO, c.Dvp);
    c.vis.resize(n(d.B * nqb * nkb));
    c.Dr.resize(n(d.B * d.H_q * d.S_q));
    c.rr.resize(c.Dr.size());
    c.kappa = opt.io_scores ? 1.0 : unit_roundoff(DType::f32) / unit_roundoff(p.dt);
    c.f16_intermediates = p.dt == DType::f16;
    const bool par = work(d) >= kParallelWork;
    int threads = 1;
#ifdef _OPENMP
    if (par) threads = omp_get_max_threads();
#endif
    // The chunking follows the thread count, the results do not (see the header comment).
    const ChunkPlan plan = plan_chunks(c, d.B * d.H_kv, threads);
    c.slots.allocate(n(plan.slot_floats));
    c.dq_carry.allocate(n(plan.dq_carry));
    c.dkv_carry.allocate(n(plan.dkv_carry));

#pragma omp parallel if (par)
    {
        prepare_tiles(c, shared_qk);
        BwdScratch w(c);
        run_chunks(c, w, plan);
        if (p.dmask) dmask_blocks(c, w, opt.dmask_no_reduce);
#pragma omp critical
        {
            ds_amax = std::max(ds_amax, w.ds_amax);
            ds_wmax = std::max(ds_wmax, w.ds_wmax);
            p_amax = std::max(p_amax, w.p_amax);
        }
    }
    if (is_fp8(p.dt)) set_amax(p, ds_amax, ds_wmax, p_amax, r);
    return r;
}

}  // namespace sdpa
