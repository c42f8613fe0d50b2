// Whole-output checks run after the per-element bound: per-head norm ratio, the softmax
// stats convention (row sums of exp(s - stats)), and the kernel's zero count. Computes
// verdicts into an OutputCheck; prints nothing.
#pragma once

#include <cstdint>

#include "compare/compare.hpp"

namespace sdpa {

/// Slack of the stats convention check: sum_j exp(s_ij - stats_i) must be
/// 1 +- (kStatsSumSlack + kStatsSumUlps u_f32 M_stats_i). The second term: an LSE whose scores are
/// off by u_f32 times their magnitudes (M_stats, ref/sdpa_ref.hpp) scales the sum by exp of that;
/// oneDNN was measured at up to 10 u_f32 |stats| for |stats| ~ 30 (peaky fill), so 16
/// (compare/README.md); M_stats >= |stats| covers scores with cancellation (found by --random).
inline constexpr double kStatsSumSlack = 1e-5;
inline constexpr double kStatsSumUlps = 16.0;

/// Norm check for X in {O, dQ, dK, dV}: for every (b, h) of `got`/`ref`/`mag` (same shape),
/// | ||X_bh|| - ||X_ref,bh|| | <= c * (u_eff * ||M_bh|| + tiny * sqrt(n)) (Frobenius norms over
/// the n elements (i, d) of the head, in f64; `tiny` the absolute term of Tolerance).
/// Equivalently ||X||/||X_ref|| in 1 +- c u_eff ||M|| / ||X_ref||: with no cancellation M = |X_ref|
/// and that is 1 +- c u_eff (the first tolerance model's 1 +- 4u, compare/README.md); with cancellation the magnitude widens it
/// exactly as it widens the per-element bound, but without the global floor max(M)/1024, so a head
/// whose values are all tiny next to other heads (all-zero head, missing rescale) is still
/// judged on its own scale. A head whose reference norm is 0 must then have
/// ||X|| <= c u_eff ||M|| (exactly 0 when M is 0). Sets r.norm_worst (max over heads of
/// |difference| / bound, < 1 passes) and r.norm_ratio at that head; fails r when r.pass.
void check_head_norms(const Tensor& got, const Tensor& ref, const Tensor& mag, double c, double u_eff,
        double tiny, OutputCheck& r);

/// Stats convention: for every query row not fully masked,
/// sum_j exp(s_ij - got_i) over the visible keys = exp(ref_i - got_i) * sum_j exp(s_ij - ref_i)
/// = exp(ref_i - got_i), because the reference's stats are the natural-log LSE of the same
/// scores (its own sum is 1 to f64 rounding). Catches log2 stats, a missing scale, a max
/// without the log-sum. Sets r.stats_sum_worst (max |sum - 1| / allowed slack); fails r when
/// r.pass. `got`, `ref`, `mag` (M_stats): [B,H_q,S_q,1].
void check_stats_sums(const Problem& p, const Tensor& got, const Tensor& ref, const Tensor& mag, OutputCheck& r);

/// Zero trust against the structure: counts exact zeros of `got` and the structural zeros the
/// mask implies (rows of fully masked queries for O/dQ, never-visible keys for dK/dV).
/// Sets r.got_zero_fraction (kernel zeros outside the structural ones) and r.structural_zeros;
/// For stats, fully masked rows are the structural ones (their
/// value is a convention). Marks r MISTRUSTED (when it passed) if more than half of the kernel's non-structural elements
/// are zero: a kernel that writes zeros where the reference has tiny values can pass the bound.
/// Elements that are not checked at all (compare.hpp unchecked(), with `geom` and `conv`) count
/// neither as structural nor as the kernel's zeros.
void check_zero_counts(const Problem& p, Output out, const Tensor& got, OutputCheck& r, const TensorGeom* geom = nullptr,
        const Conventions& conv = {});

}  // namespace sdpa
