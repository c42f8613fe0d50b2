// Whole-output checks that follow the per-element bound: per-head norm ratio and the softmax
// stats convention (row sums of exp(s - stats)). Computes verdicts into an OutputCheck; prints
// nothing. check_output (compare/compare.hpp) takes the per-head sums they need in its one pass.
#pragma once

#include <cstdint>
#include <span>

#include "compare/compare.hpp"

namespace sdpa {

/// Slack of the stats convention check: sum_j exp(s_ij - stats_i) must be
/// 1 +- (kStatsSumSlack + kStatsSumUlps u_f32 M_stats_i). The second term: an LSE whose scores are
/// off by u_f32 times their magnitudes (M_stats, ref/sdpa_ref.hpp) scales the sum by exp of that;
/// oneDNN was measured at up to 10 u_f32 |stats| for |stats| ~ 30 (peaky fill), so 16
/// (compare/README.md); M_stats >= |stats| covers scores with cancellation (found by --random).
inline constexpr double kStatsSumSlack = 1e-5;
inline constexpr double kStatsSumUlps = 16.0;

/// Sums of squares over the elements of one head (b, h) of an output, in f64: of the kernel's
/// values (`got`; an unchecked element counts with the reference's value), of the reference's
/// (`ref`) and of the magnitudes (`mag`).
struct HeadSquares {
    double got = 0, ref = 0, mag = 0;
};

/// Norm check for X in {O, dQ, dK, dV} from the sums of squares of its heads (`heads` in (b, h)
/// order, `per_batch` heads per batch index, `n` elements per head): for every head,
/// | ||X_bh|| - ||X_ref,bh|| | <= c * (u_eff * ||M_bh|| + tiny * sqrt(n)) (Frobenius norms;
/// `tiny` the absolute term of Tolerance). Equivalently ||X||/||X_ref|| in 1 +- c u_eff ||M|| /
/// ||X_ref||: with no cancellation M = |X_ref| and that is 1 +- c u_eff (the first tolerance
/// model's 1 +- 4u, compare/README.md); with cancellation the magnitude widens it exactly as it
/// widens the per-element bound, but without the global floor max(M)/1024, so a head whose values
/// are all tiny next to other heads (all-zero head, missing rescale) is still judged on its own
/// scale. A head whose reference norm is 0 must then have ||X|| <= c u_eff ||M|| (exactly 0 when
/// M is 0). Sets r.norm_worst (max over heads of |difference| / bound, < 1 passes), r.norm_ratio
/// and r.norm_head at that head (the first such head); fails r when r.pass.
void check_head_norms(std::span<const HeadSquares> heads, std::int64_t per_batch, std::int64_t n, double c,
        double u_eff, double tiny, OutputCheck& r);

/// |sum_j exp(s_ij - got_i) - 1| / slack for one query row, given that the reference's stats
/// `ref` are the natural-log LSE of the same scores: the sum is exp(ref - got) (the reference's
/// own sum is 1 to f64 rounding), the slack kStatsSumSlack + kStatsSumUlps u_f32 max(|ref|, mag),
/// `mag` the row's M_stats. NaN gives infinity (never a pass).
double stats_sum_ratio(double got, double ref, double mag);

/// Stats convention over a stats output (`got`, `ref`, `mag`: [B,H_q,S_q,1]; `rule` for p): for
/// every query row not fully masked, stats_sum_ratio(). Catches log2 stats, a missing scale, a max
/// without the log-sum. Sets r.stats_sum_worst (the largest ratio, < 1 passes); fails r at the
/// first row with that ratio when r.pass.
void check_stats_sums(const OutputRule& rule, const Tensor& got, const Tensor& ref, const Tensor& mag, OutputCheck& r);

/// The column identities of a sampled check, for dK or dV (rule.output) of `got` against the sums of
/// `ref` (RefBackward::dK_sum, M_dK_sum, dV_sum, M_dV_sum; nothing is checked when they are empty):
/// for every (b, h_kv, d), the sum over the n keys j < valid_kv(b) of got_jd differs from the
/// expected sum by at most the sum of their per-element bounds, c (u_eff (M_sum + n floor) + n tiny)
/// with the constants of r's bound (check_output sets them). Catches what the sampled rows miss
/// when it moves a column's sum: keys left out or garbage, a group's heads not summed, rows of P
/// that do not sum to one. Sets r.column_sum_worst (< 1 passes); fails r when r.pass.
void check_column_sums(const OutputRule& rule, const SdpaOutputs& got, const RefBackward& ref, OutputCheck& r);

}  // namespace sdpa
