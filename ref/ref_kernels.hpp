// Internal building blocks of the tiled f32 reference (ref_forward.cpp, ref_backward.cpp):
// block sizes, a small register-tiled f32 GEMM with f64 outer accumulation, a vectorised
// exp, operand packing, block visibility tests and input checks. Not a public header.
//
// Algorithm: the reference processes (query block x key block) tiles flash-style, after
// Dao et al., "FlashAttention" (NeurIPS 2022) and "FlashAttention-2" (2023): the forward keeps
// a running row max and sum; the backward recomputes P per tile from the given stats, once
// per tile for all its products (ref_backward.cpp). No S_q x S_kv buffer is ever allocated.
//
// Error analysis of the products (all inputs are f32 values):
//   gemm_acc() sums at most kKC = 32 products per output element in f32 with FMA (worst case
//   |err| <= 32 u sum|a_k b_k|, u = 2^-24, i.e. ~1.9e-6 relative to the magnitude; typically
//   ~sqrt(32) u), then adds each chunk into an f64 accumulator (error ~2^-53 per add). Long
//   reductions (over keys or queries, thousands of terms) therefore cost no more than one
//   32-term f32 chunk plus the final rounding to f32. The old reference summed in f64
//   throughout (one rounding, u |x|); the tests bound the difference at 1e-5 relative to the
//   magnitudes M_X, two orders above this worst case. Scores: float(f64 sum of 32-chunks),
//   then the scale op and the bias add in f32 as the vendor graph does.
//   exp: range reduction by ln2 (Cody-Waite two-part constant) and a degree-7 Taylor
//   polynomial on |r| <= ln2/2 (truncation < 6e-9 relative), ~2 ulp in f32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/geometry.hpp"
#include "core/isa_clones.hpp"
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"
#include "ref/sdpa_ref.hpp"

/// The reference's kernels in one clone per ISA level (core/isa_clones.hpp).
#define SDPA_REF_CLONES SDPA_ISA_CLONES
#define SDPA_REF_INLINE inline __attribute__((always_inline))

// The vector helpers are always inlined, so no vector crosses a call boundary.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sdpa::refk {

using i64 = std::int64_t;
/// 16 floats: one AVX-512 register, two AVX2 registers (GCC/Clang vector extension).
using v16f = float __attribute__((vector_size(64)));
using v16i = std::int32_t __attribute__((vector_size(64)));

inline constexpr float kInf = std::numeric_limits<float>::infinity();
/// Query rows and keys per tile (both tile edges; buffers are padded to these).
inline constexpr i64 kB = 64;
/// GEMM register tile: kMR rows x kNR columns; kKC products per f32 partial sum.
inline constexpr i64 kMR = 8, kNR = 32, kKC = 32;
/// Below this many multiply-adds the reference runs on one thread.
inline constexpr double kParallelWork = 1 << 20;

/// Rounds n up to a multiple of m.
constexpr i64 round_up(i64 n, i64 m) { return (n + m - 1) / m * m; }

SDPA_REF_INLINE v16f load16(const float* p) {
    v16f v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
SDPA_REF_INLINE void store16(float* p, v16f v) { std::memcpy(p, &v, sizeof v); }
/// |v| (the sign bit cleared: bitwise std::fabs).
SDPA_REF_INLINE v16f abs16(v16f v) {
    v16i bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits &= 0x7fffffff;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

/// exp(x) for 16 floats; 0 for x < -87.3 (including -inf: masked scores), exp(88.7) for
/// larger x. See the error analysis above.
SDPA_REF_INLINE v16f vexp(v16f x) {
    const v16f lo = v16f{} - 87.3f, hi = v16f{} + 88.7f;
    const v16i under = x < lo;
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    v16f n = x * 1.44269504088896341f + shifter;
    n = n - shifter;
    v16f r = x - n * 0.693145751953125f;  // ln2 high part (exact product for |n| < 2^11)
    r = r - n * 1.42860682030941723212e-6f;  // ln2 low part
    v16f q = r * (1.f / 5040) + (1.f / 720);
    q = q * r + (1.f / 120);
    q = q * r + (1.f / 24);
    q = q * r + (1.f / 6);
    q = q * r + 0.5f;
    q = q * r + 1.f;
    q = q * r + 1.f;
    const v16i ni = __builtin_convertvector(n, v16i);
    v16i bits;
    std::memcpy(&bits, &q, sizeof bits);
    bits += ni << 23;
    std::memcpy(&q, &bits, sizeof q);
    return under ? v16f{} : q;
}

/// f16's rounding error that its relative roundoff u = 2^-11 does not cover, in units of u: a
/// value |x| below its smallest normal 2^-14 rounds to a multiple of 2^-24 (a subnormal), off by up
/// to min(|x|, 2^-25) whatever its size; at or above 2^-14, u |x| >= 2^-25 covers it. For x >= 0
/// (P, |scale| W): x's magnitude weight plus this share bounds the error of rounding x to f16,
/// whether a kernel rounds it (oneDNN's TypeCast) or not (compare/README.md, "Intermediates").
SDPA_REF_INLINE float f16_subnormal_share(float x) { return x < 0x1p-14f ? std::min(x, 0x1p-25f) * 0x1p11f : 0.f; }

/// max over x[0 .. n), n a multiple of 16 (-inf when all are -inf); vectorised.
SDPA_REF_INLINE float max_n(const float* x, i64 n) {
    v16f m = load16(x);
    for (i64 k = 16; k < n; k += 16) {
        const v16f y = load16(x + k);
        m = y > m ? y : m;
    }
    float r = m[0];
    for (int k = 1; k < 16; ++k) r = std::max(r, static_cast<float>(m[k]));
    return r;
}

/// The register-tiled f32 kernel behind gemm_acc and gemm_acc_at: for each kMR x kNR tile of
/// C and each chunk of kKC products (k0 = 0, kKC, ...), the chunk's f32 FMA sum is added to C
/// in f64. A is [m x k] row-major (lda), or with kTransA given as its transpose [k x m] (lda);
/// with kAbsB the kernel multiplies by |B|. The f32 sum of each chunk is the same, in the same
/// order, whatever A's layout.
template <bool kTransA, bool kAbsB>
SDPA_REF_INLINE void gemm_kernel(i64 m, i64 n, i64 k, const float* A, i64 lda, const float* B, i64 ldb,
    double* C, i64 ldc) {
    // Column panels outside: a [k x kNR] panel of B stays in L1 while the row tiles pass.
    for (i64 j0 = 0; j0 < n; j0 += kNR)
        for (i64 i0 = 0; i0 < m; i0 += kMR)
            for (i64 k0 = 0; k0 < k; k0 += kKC) {
                const i64 k1 = std::min(k, k0 + kKC);
                v16f c[kMR][2];
                for (i64 r = 0; r < kMR; ++r) c[r][0] = c[r][1] = v16f{};
                // k1 > k0 always: a do-while keeps the accumulators in registers (a loop that
                // might not run makes GCC keep them in memory, zeroed by rep stos).
                i64 kk = k0;
                do {
                    v16f b0 = load16(B + kk * ldb + j0), b1 = load16(B + kk * ldb + j0 + 16);
                    if constexpr (kAbsB) {
                        b0 = abs16(b0);
                        b1 = abs16(b1);
                    }
                    for (i64 r = 0; r < kMR; ++r) {
                        const float a = kTransA ? A[kk * lda + i0 + r] : A[(i0 + r) * lda + kk];
                        c[r][0] += a * b0;
                        c[r][1] += a * b1;
                    }
                } while (++kk < k1);
                for (i64 r = 0; r < kMR; ++r)
                    for (i64 h = 0; h < 2; ++h) {
                        float t[16];
                        store16(t, c[r][h]);
                        double* crow = C + (i0 + r) * ldc + j0 + 16 * h;
#pragma omp simd
                        for (i64 l = 0; l < 16; ++l) crow[l] += static_cast<double>(t[l]);
                    }
            }
}

/// gemm_kernel with the |B| choice made at run time (kAt: A given transposed).
template <bool kAt>
SDPA_REF_INLINE void gemm_run(i64 m, i64 n, i64 k, const float* A, i64 lda, const float* B, i64 ldb, double* C,
    i64 ldc, bool abs_b) {
    if (abs_b) gemm_kernel<kAt, true>(m, n, k, A, lda, B, ldb, C, ldc);
    else gemm_kernel<kAt, false>(m, n, k, A, lda, B, ldb, C, ldc);
}

/// C[m x n] (f64, row stride ldc) += A[m x k] (f32, row stride lda) * B[k x n] (f32, row
/// stride ldb). Requires m % kMR == 0 and n % kNR == 0 (callers pad with zeros); any k >= 0.
/// Products are summed in f32 FMA over chunks of kKC, each chunk added to C in f64. With abs_b,
/// A * |B|.
SDPA_REF_INLINE void gemm_acc(i64 m, i64 n, i64 k, const float* A, i64 lda, const float* B, i64 ldb,
    double* C, i64 ldc, bool abs_b = false) {
    gemm_run<false>(m, n, k, A, lda, B, ldb, C, ldc, abs_b);
}

/// As gemm_acc with A given transposed: C[m x n] += At^T * B (or At^T * |B| with abs_b), At
/// [k x m] (row stride lda).
SDPA_REF_INLINE void gemm_acc_at(i64 m, i64 n, i64 k, const float* At, i64 lda, const float* B, i64 ldb,
    double* C, i64 ldc, bool abs_b = false) {
    gemm_run<true>(m, n, k, At, lda, B, ldb, C, ldc, abs_b);
}

/// Rows of C per register tile in gemm_pair_kernel (two products: half of kMR's rows).
inline constexpr i64 kPairMR = 4;

/// Two products over one pass of B: C1 += A1 B and C2 += A2 |B| (A1, A2 [m x k] row-major, lda;
/// kSameA: A2 is A1, loaded once), and with kScaled also C3 += diag(alpha) A2 |B|. B's rows and
/// |B| are loaded once for both, so the pair costs the FMAs of two products but about the loads
/// of one. Each output's chunk sums are those of gemm_kernel, in the same order, so C1 and C2
/// are bitwise what gemm_acc(A1, B, C1) and gemm_acc(A2, B, C2, abs_b) give.
template <bool kSameA, bool kScaled>
SDPA_REF_INLINE void gemm_pair_kernel(i64 m, i64 n, i64 k, const float* A1, const float* A2, i64 lda, const float* B,
    i64 ldb, double* C1, double* C2, double* C3, i64 ldc, const double* alpha) {
    for (i64 j0 = 0; j0 < n; j0 += kNR)
        for (i64 i0 = 0; i0 < m; i0 += kPairMR)
            for (i64 k0 = 0; k0 < k; k0 += kKC) {
                const i64 k1 = std::min(k, k0 + kKC);
                v16f c[kPairMR][2], e[kPairMR][2];
                for (i64 r = 0; r < kPairMR; ++r) c[r][0] = c[r][1] = e[r][0] = e[r][1] = v16f{};
                i64 kk = k0;
                do {  // k1 > k0: a do-while keeps the accumulators in registers (see gemm_kernel)
                    const v16f b0 = load16(B + kk * ldb + j0), b1 = load16(B + kk * ldb + j0 + 16);
                    const v16f a0 = abs16(b0), a1 = abs16(b1);
                    for (i64 r = 0; r < kPairMR; ++r) {
                        const float x = A1[(i0 + r) * lda + kk];
                        const float y = kSameA ? x : A2[(i0 + r) * lda + kk];
                        c[r][0] += x * b0;
                        c[r][1] += x * b1;
                        e[r][0] += y * a0;
                        e[r][1] += y * a1;
                    }
                } while (++kk < k1);
                for (i64 r = 0; r < kPairMR; ++r)
                    for (i64 h = 0; h < 2; ++h) {
                        float t[16], u[16];
                        store16(t, c[r][h]);
                        store16(u, e[r][h]);
                        const i64 at = (i0 + r) * ldc + j0 + 16 * h;
                        double* c1 = C1 + at;
                        double* c2 = C2 + at;
#pragma omp simd
                        for (i64 l = 0; l < 16; ++l) c1[l] += static_cast<double>(t[l]);
#pragma omp simd
                        for (i64 l = 0; l < 16; ++l) c2[l] += static_cast<double>(u[l]);
                        if constexpr (kScaled) {
                            double* c3 = C3 + at;
                            const double al = alpha[i0 + r];
#pragma omp simd
                            for (i64 l = 0; l < 16; ++l) c3[l] += al * static_cast<double>(u[l]);
                        }
                    }
            }
}

/// C1 += A1 B and C2 += A2 |B| (A1, A2 [m x k], row stride lda; A2 may be A1) in one pass of B:
/// bitwise gemm_acc(A1, B, C1) and gemm_acc(A2, B, C2, abs_b). With alpha (not null), also
/// C3 += diag(alpha) A2 |B| (alpha[i] for row i) from the same chunk sums. m % kPairMR == 0,
/// n % kNR == 0.
SDPA_REF_INLINE void gemm_acc_pair(i64 m, i64 n, i64 k, const float* A1, const float* A2, i64 lda, const float* B,
    i64 ldb, double* C1, double* C2, i64 ldc, double* C3 = nullptr, const double* alpha = nullptr) {
    if (alpha) {
        if (A1 == A2) gemm_pair_kernel<true, true>(m, n, k, A1, A2, lda, B, ldb, C1, C2, C3, ldc, alpha);
        else gemm_pair_kernel<false, true>(m, n, k, A1, A2, lda, B, ldb, C1, C2, C3, ldc, alpha);
    } else {
        if (A1 == A2) gemm_pair_kernel<true, false>(m, n, k, A1, A2, lda, B, ldb, C1, C2, C3, ldc, alpha);
        else gemm_pair_kernel<false, false>(m, n, k, A1, A2, lda, B, ldb, C1, C2, C3, ldc, alpha);
    }
}

/// dst[r * ldd + c] = src[r * lds + c] for r < rows, c < cols; zero for rows <= r < prow or
/// cols <= c < ldd.
SDPA_REF_INLINE void pack_rows(float* dst, i64 ldd, i64 prow, const float* src, i64 lds, i64 rows, i64 cols) {
    for (i64 r = 0; r < prow; ++r) {
        float* d = dst + r * ldd;
        if (r < rows) {
            const float* s = src + r * lds;
            std::memcpy(d, s, static_cast<std::size_t>(cols) * sizeof(float));
            std::fill(d + cols, d + ldd, 0.f);
        } else {
            std::fill(d, d + ldd, 0.f);
        }
    }
}

/// Transposed pack: dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols; zero for
/// rows <= r < ldd (cols x ldd written).
SDPA_REF_INLINE void pack_transposed(float* dst, i64 ldd, const float* src, i64 lds, i64 rows, i64 cols) {
    for (i64 c = 0; c < cols; ++c) std::fill(dst + c * ldd + rows, dst + (c + 1) * ldd, 0.f);
    for (i64 r = 0; r < rows; ++r)
        for (i64 c = 0; c < cols; ++c) dst[c * ldd + r] = src[r * lds + c];
}

/// Transposed key-block panels of a [B, H, S, D] tensor X: panel (b, h, kb) at offset
/// ((b * H + h) * nb + kb) * D * kB holds X[b, h, kb*kB + jj, d] at d * kB + jj (zero for
/// keys past S), nb = ceil(S / kB). Worksharing (omp for) when called inside a parallel
/// region; `dst` must hold B * H * nb * D * kB floats.
inline void transpose_panels(const Tensor& X, float* dst) {
    const i64 BH = X.dims[0] * X.dims[1], S = X.dims[2], D = X.dims[3], nb = (S + kB - 1) / kB;
#pragma omp for collapse(2) schedule(static)
    for (i64 bh = 0; bh < BH; ++bh)
        for (i64 kb = 0; kb < nb; ++kb)
            pack_transposed(dst + (bh * nb + kb) * D * kB, kB, &X.data[static_cast<std::size_t>((bh * S + kb * kB) * D)],
                D, std::min(kB, S - kb * kB), D);
}

/// norms[row] = ||X[row, :]||_2 (f64 sum of squares in index order) for every row of a dense
/// [B, H, S, D] tensor X. Worksharing (omp for) when called inside a parallel region.
inline void row_norms(const Tensor& X, double* norms) {
    const i64 rows = X.dims[0] * X.dims[1] * X.dims[2], D = X.dims[3];
#pragma omp for schedule(static)
    for (i64 row = 0; row < rows; ++row) {
        const float* x = &X.data[static_cast<std::size_t>(row * D)];
        double s2 = 0.0;
        for (i64 k = 0; k < D; ++k) s2 += static_cast<double>(x[k]) * static_cast<double>(x[k]);
        norms[row] = std::sqrt(s2);
    }
}

/// True when some (i, j) with i0 <= i < i1, j0 <= j < j1 is visible. Every mask leaves each
/// row an interval of keys (core's visible_keys), so one interval test per row suffices.
inline bool block_any_visible(const Problem& p, i64 b, i64 i0, i64 i1, i64 j0, i64 j1) {
    for (i64 i = i0; i < std::min(i1, valid_q(p, b)); ++i) {
        const auto [lo, hi] = visible_keys(p, b, i);
        if (lo < j1 && hi > j0 && lo < hi) return true;
    }
    return false;
}
/// True when every (i, j) of the block is visible, so per-element tests can be skipped.
inline bool block_all_visible(const Problem& p, i64 b, i64 i0, i64 i1, i64 j0, i64 j1) {
    if (i1 > valid_q(p, b) || j1 > valid_kv(p, b)) return false;
    for (i64 i = i0; i < i1; ++i) {
        const auto [lo, hi] = visible_keys(p, b, i);
        if (lo > j0 || hi < j1) return false;
    }
    return true;
}

/// The keep mask and the factor 1/(1-p) (f32, as the vendor's Dropout op computes it) of p's
/// dropout: (nullptr, 1) without dropout or with p = 0; 1 as the factor with the no-rescale
/// fault. Throws std::invalid_argument when p > 0 and opt.dropout is null (the reference never
/// draws a mask of its own).
std::pair<const DropoutMask*, float> dropout_of(const Problem& p, const RefOptions& opt);

/// Multiply-adds of the naive algorithm, to decide whether to go parallel.
inline double work(const Dims& d) {
    return static_cast<double>(d.B) * static_cast<double>(d.H_q) * static_cast<double>(d.S_q) *
           static_cast<double>(d.S_kv) * static_cast<double>(d.D_qk + d.D_v);
}

/// The geometry of p's training forward (fwd_t: O and stats) or backward (bwd), whatever p.dir
/// is: the shapes of the reference's inputs and outputs (core/geometry.hpp).
Geometry ref_geometry(const Problem& p, bool backward);

/// Throws std::invalid_argument naming the tensor and the dims when an input does not fit
/// `p` (dimensions positive, H_q a multiple of H_kv, Q/K/V/bias and, for the backward,
/// O/dO/stats with the dims of their roles in ref_geometry(p, backward)).
void check_inputs(const Problem& p, const SdpaInputs& in, bool backward);

}  // namespace sdpa::refk

namespace sdpa::refk {

/// Scores of one tile as the vendor graph forms them: x = float(s64) (the f64 sum of the
/// f32 partial dot products, rounded once), x = x * v or x / v in f32, s = x + bias in f32.
/// s [kB x kB] gets -inf for invisible (i, j) and for padding rows/columns (ii >= ni,
/// jj >= nj). mag, when not null, gets |x| + |bias| (the M_stats summand).
/// bias: null unless p.mask == Mask::bias. all_visible: block_all_visible(p, b, i0, i0 + ni,
/// j0, j0 + nj) when the caller knows it (0 or 1), else -1.
SDPA_REF_INLINE void scores_tile(const Problem& p, const Tensor* bias, i64 b, i64 h, i64 i0, i64 ni, i64 j0,
    i64 nj, float v, bool mul, const double* s64, float* s, float* mag, int all_visible = -1) {
    const bool all = all_visible >= 0 ? all_visible == 1 : block_all_visible(p, b, i0, i0 + ni, j0, j0 + nj);
    for (i64 ii = 0; ii < kB; ++ii) {
        float* srow = s + ii * kB;
        if (ii >= ni) {
            std::fill(srow, srow + kB, -kInf);
            continue;
        }
        const double* crow = s64 + ii * kB;
        const i64 i = i0 + ii;
        if (bias) {
            const float* brow = &bias->data[bias->broadcast_offset(b, h, i, j0)];
            for (i64 jj = 0; jj < nj; ++jj) {
                float x = static_cast<float>(crow[jj]);
                x = mul ? x * v : x / v;
                srow[jj] = x + brow[jj];
                // A -inf bias entry (an explicit mask) has P = 0: its summand is 0, not 0 * inf.
                if (mag) mag[ii * kB + jj] = std::isfinite(srow[jj]) ? std::fabs(x) + std::fabs(brow[jj]) : 0.f;
            }
        } else if (mul) {
#pragma omp simd
            for (i64 jj = 0; jj < nj; ++jj) srow[jj] = static_cast<float>(crow[jj]) * v;
        } else {
#pragma omp simd
            for (i64 jj = 0; jj < nj; ++jj) srow[jj] = static_cast<float>(crow[jj]) / v;
        }
        if (mag && !bias)
            for (i64 jj = 0; jj < nj; ++jj) mag[ii * kB + jj] = std::fabs(srow[jj]);
        if (!all)
            for (i64 jj = 0; jj < nj; ++jj)
                if (!visible(p, b, i, j0 + jj)) srow[jj] = -kInf;
        std::fill(srow + nj, srow + kB, -kInf);
    }
}

}  // namespace sdpa::refk
