// The f32 reference for SDPA training: forward (O, stats) and backward (dQ, dK, dV), plus the
// magnitudes the tolerance model needs. Independent of every vendor library; OpenMP parallel.
// Tiled flash-style (Dao et al. 2022, 2023; ref/ref_kernels.hpp): memory beyond the inputs,
// outputs and magnitudes is O((S_q + S_kv) * D) (per thread O(64 * D)); results are bitwise
// independent of the thread count.
#pragma once

#include <vector>

#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"
#include "ref/row_sample.hpp"

namespace sdpa {

/// What the reference forward and backward both derive from Q and K alone: the row norms
/// ||Q_i||_2 per (b, h_q, i) and ||K_j||_2 per (b, h_kv, j) of the magnitudes (f64,
/// ref/ref_kernels.hpp row_norms), and K in transposed key-block panels (transpose_panels). A
/// forward fills it (RefOptions::save_qk); a backward on the same Q and K takes it
/// (RefOptions::qk) instead of computing it again, with bitwise the same results.
struct RefQK {
    std::vector<double> qn, kn;
    std::vector<float> kt;
};

/// Reference knobs.
struct RefOptions {
    /// Mirror the vendor graph's intermediate rounding: P rounded to the io dtype before P*V
    /// and before the dV matmul; the scaled dS rounded to the io dtype before the dQ and dK
    /// matmuls (oneDNN's documented SDPA training graphs do this with TypeCast for bf16/f16).
    bool emulate_rounding = true;
    /// The keep mask Z of a problem with dropout (core/dropout.hpp): the very mask the vendor
    /// applied, never an independent draw. Required when p.dropout is set with p > 0 (the
    /// reference throws std::invalid_argument without it); ignored otherwise.
    const DropoutMask* dropout = nullptr;
    /// Injected dropout bugs, for the fault-injecting backend only (backends/faulty/): P_d = Z o P
    /// without the 1/(1-p) rescale; dS formed from the dropped P_d instead of P.
    bool dropout_no_rescale = false, dropout_ds_from_dropped_p = false;
    /// Injected dMask bug, for the fault-injecting backend only: dMask taken from the first
    /// batch, head and query row of each broadcast group instead of their sum.
    bool dmask_no_reduce = false;
    /// The vendor rounds the scores to the io type (PyTorch's math runs its whole graph in it: its
    /// QK^T and softmax in bf16/f16): the score errors' share of the magnitudes (the kappa terms
    /// below) is taken at the io type's roundoff (kappa = 1) instead of f32's.
    bool io_scores = false;
    /// Forward: also the magnitudes M_O, M_stats (and fp8's amax) that the checks need; without
    /// them (the displacement, which keeps only O and stats) the forward skips the P |V| product
    /// and the score magnitudes, and O and stats are bitwise the same.
    bool magnitudes = true;
    /// Forward: where to leave the Q and K work a later backward on the same inputs can take.
    RefQK* save_qk = nullptr;
    /// Backward: that work, from a forward on the same Q and K (ignored when its sizes do not fit).
    const RefQK* qk = nullptr;
};

/// Default options for `p`: rounding emulation on for bf16/f16, off (a no-op) for f32; `mask`
/// the dropout mask (RefOptions::dropout).
inline RefOptions default_ref_options(const Problem&, const DropoutMask* mask = nullptr) {
    RefOptions o;
    o.dropout = mask;
    return o;
}

/// Forward result, all f32 and unrounded.
/// O [B,H_q,S_q,D_v]; stats [B,H_q,S_q,1] natural-log LSE of the masked, scaled scores
/// (+inf for a fully masked row, whose O row is 0);
/// With mag_ij = |scale| ||q_i|| ||k_j|| + |m_ij| (m the additive mask value; by Cauchy-Schwarz
/// at least the magnitude of score s_ij's f32 rounding, the scaled sum of |q_d k_d|, plus |m_ij|):
/// M_O [B,H_q,S_q,D_v] = P|V| + kappa (sum_j P_ij mag_ij |V_j| + (sum_j P_ij mag_ij) P|V|), kappa =
/// u_f32 / u_dt (the first-order effect of score errors on O: dO_i = sum_j P_ij ds_ij (V_j - O_i),
/// with |O_i| <= (P|V|)_i), the first sum bounded per 64-key block by the block's largest mag_ij
/// times its sum_j P_ij |V_j| (ref_forward.cpp);
/// M_stats [B,H_q,S_q,1] = 1 + sqrt(S_kv) + sum_j P_ij mag_ij (1 + sqrt(S_kv) for a fully masked row).
/// fp8 io (core/fp8.hpp): P is rounded onto the io type's grid scaled by descale_S before P V
/// (round_scaled; the rounding emulation is always on for fp8), and amax [1,1,1,2] holds
/// {Amax_S, Amax_O} (kAmaxFwd): the largest P after dropout and the largest |O|, both before
/// their scaling; M_amax their magnitudes in units of the io type's roundoff: Amax_S's own value
/// times kAmaxRelative / u_dt (an f32 softmax, exp approximations included, is that close), Amax_O's
/// the largest M_O.
struct RefForward {
    Tensor O, stats, M_O, M_stats, amax, M_amax;
};

/// The relative accuracy an amax of f32 softmax quantities (Amax_S, Amax_dP) is held to.
inline constexpr double kAmaxRelative = 0x1p-10;

/// Backward result, all f32 and unrounded. dQ [B,H_q,S_q,D_qk], dK [B,H_kv,S_kv,D_qk],
/// dV [B,H_kv,S_kv,D_v] (GQA: summed over the H_q/H_kv query heads of each group); and the
/// magnitudes of the tolerance model (compare/README.md): W = P o (|dP - D| + r_i) with
/// r_i = ||dO_i o O_i||_2, M_dQ = |scale|*W*|K|, M_dK = |scale|*W^T*|Q|, M_dV = P^T*|dO|.
/// With p.dmask also dMask [1|B,1|H_q,1|S_q,S_kv] (the bias's dims) = dS = P o (dP - D) (the
/// dropout form with dropout) summed over the bias's broadcast dims, and M_dMask = the same sums
/// of W (above, without the scale).
/// fp8 io: P is rounded onto the io grid scaled by descale_S before the dV matmul and the scaled
/// dS onto the grid scaled by descale_dP before the dQ and dK matmuls (cuDNN's fp8 backward,
/// core/fp8.hpp); amax [1,1,1,4] holds {Amax_dQ, Amax_dK, Amax_dV, Amax_dP} (kAmaxBwd): the
/// largest |dQ|, |dK|, |dV| and |scaled dS| before their scaling; M_amax their magnitudes in io
/// roundoff units: the largest M_dQ, M_dK, M_dV, and for dP the largest |scale| W times
/// kAmaxRelative / u_dt.
struct RefBackward {
    Tensor dQ, dK, dV, M_dQ, M_dK, M_dV, dMask, M_dMask, amax, M_amax;
    /// The column identities of a sampled check (ref_backward_sampled; empty otherwise, and with
    /// dropout or fp8 io), each [B, H_kv, 1, D]: with every row of P summing to one and every row of
    /// dS to zero, sum_j dV_jd = dV_sum_d = sum of dO_id over the group's query rows that see a key,
    /// and sum_j dK_jd = dK_sum_d = 0; M_dV_sum = sum of |dO_id| over those rows (= sum_j M_dV_jd),
    /// each times 1 + (u_f32 / u_dt)(|stats_i| + 4) for the f32 stats the backward is given (they
    /// scale the row's P: sum_j P_ij = 1 to that), and M_dK_sum >= sum_j M_dK_jd: |scale| sum_i |Q_id| (||dO_i|| max_j ||V_j|| + |D_i| + r_i),
    /// plus |scale| sum_i |Q_id| 2 sum_e |dO_ie| max_j |V_je| for the O the backward is given (D_i
    /// from an O off by its rounding makes the rows of dS sum to dO_i . (O*_i - O_i), not 0).
    Tensor dK_sum, M_dK_sum, dV_sum, M_dV_sum;
    /// fp8: the largest P (after dropout) the backward rounds onto descale_S's grid; no output (the
    /// backward graph has no Amax_S), but past that grid's range P saturates (compare.hpp).
    float p_max = 0.f;
};

/// With dropout (p > 0) O = P_d V with P_d = Z o P / (1 - p) (the quotient 1/(1-p) in f32 and
/// P_d rounded to the io dtype under emulation, as oneDNN's Dropout then TypeCast), M_O = P_d |V|;
/// stats stay those of the undropped softmax (core/dropout.hpp).
/// Scores s_ij = op(float(sum_d Q_id K_jd), scale_tensor_value(p)) (+ bias_ij), the dot
/// products summed in f32 over chunks of 32 terms and the chunks in f64 (as every product
/// here: error analysis in ref/ref_kernels.hpp), the scale op and the bias add in f32 as the
/// vendor graph does; masked keys (causal, padding) excluded. Uses in.Q, in.K, in.V and
/// in.bias (when p.mask == bias). Throws std::invalid_argument on inconsistent shapes.
RefForward ref_forward(const Problem& p, const SdpaInputs& in, const RefOptions& opt);

/// Backward from in.Q, in.K, in.V, in.bias, in.O, in.dO and in.stats, with
/// P_ij = exp(s_ij - stats_i) (0 for masked keys and for stats = +inf), D_i = sum_d dO_id O_id,
/// dS = P o (dP - D), dQ = scale*dS*K, dK = scale*dS^T*Q, dV = P^T*dO (scale: the derivative
/// of the scale op, i.e. v for mul and 1/v for div). With dropout (p > 0): dV = P_d^T dO and
/// dS = P o (Z o dP / (1 - p) - D) (core/dropout.hpp); M_dV = P_d^T |dO|. Throws
/// std::invalid_argument on inconsistent shapes.
RefBackward ref_backward(const Problem& p, const SdpaInputs& in, const RefOptions& opt);

/// ref_forward on the query rows of `s` only (--check=sample:N; ref/ref_sampled.cpp): O, stats,
/// M_O and M_stats of those rows, in s.q's order (dims with S_q = |s.q|), each bitwise what
/// ref_forward gives for that row; no amax (a maximum over every row). O(|s.q| S_kv D) work per
/// head. `in` is borrowed: the tensors the sample does not cut are moved out and given back before
/// it returns (or throws).
RefForward ref_forward_sampled(const Problem& p, SdpaInputs& in, const RefOptions& opt, const RowSample& s);

/// ref_backward on the rows of `s` only: dQ and M_dQ of its query rows (S_q = |s.q|), dK, dV, M_dK
/// and M_dV of its key rows (S_kv = |s.kv|), dMask and M_dMask of its key columns (every row of the
/// bias; last dim |s.kv|), each element what ref_backward gives from the same inputs; the column
/// identities' sums (RefBackward::dK_sum) without dropout and fp8; no amax.
/// O((|s.q| S_kv + S_q |s.kv|) D) work per head. `in` is borrowed as by ref_forward_sampled.
RefBackward ref_backward_sampled(const Problem& p, SdpaInputs& in, const RefOptions& opt, const RowSample& s);

}  // namespace sdpa
