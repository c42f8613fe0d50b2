// Input fill policies. Seeded and reproducible: the same Problem gives the same bytes.
#pragma once

#include "core/geometry.hpp"
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

struct RefQK;  // ref/sdpa_ref.hpp

/// Fills Q, K, V (all directions), dO (bwd) and the bias (mask = bias) for `p`:
///  - exact: small integers (benchdnn style). Q and K take values in [-2, 2] with a density
///    that keeps |q.k| <= 2^24 for any D_qk, so every dot product of QK^T is exact in f32;
///    V and dO take integers in [-2, 2]; bias takes integers in [-4, 0].
///  Every tensor has the dims of its geometry role (core/geometry.hpp); the bias (dims
///  bias_dims(p)) gets p.mask_fill's values when that is not random
///  (zero: all 0; causal_last_row: 0 / -inf, see MaskFill).
///  - normal: N(0, 1) rounded to the io dtype (bias: N(0,1) rounded to the mask dtype).
///  - peaky: N(0, 3^2) rounded to the io dtype for Q, K, V, dO (near one-hot softmax rows);
///    bias as normal.
///  - sparse: 80% zeros, the rest integers in {-2, -1, 1, 2} (Q, K, V, dO); bias as exact.
///  - lse_underflow, spike_k, tile_spikes: exact, then plant_adversarial() plants its pattern.
/// Each tensor has its own stream derived from (p.seed, tensor id), so changing one tensor's
/// shape does not change another's values. O and stats are left empty (see displace()). Inputs
/// whose strides alias (stride 0, overlapping rows) are then folded (fold_aliases), so the host
/// tensors hold exactly what the vendor's strided buffers can hold.
SdpaInputs fill_inputs(const Problem& p);

/// Makes `host` (dense, dims t.dims) consistent with t's strides: every logical element that
/// shares a memory offset with an earlier one (row-major order) takes that element's value, as
/// a vendor reading the aliased buffer sees it (an expanded K with stride 0 over the batch holds
/// batch 0's values for every batch). No-op when t does not overlap.
void fold_aliases(const TensorGeom& t, Tensor& host);

/// Plants the pattern of an adversarial family into exact-filled inputs (no-op otherwise):
///  - lse_underflow: K integers in [1, 2] (all positive); every query row i with i % 4 == 1 is
///    -a * sign(scale) in every channel, a the smallest integer with a * |scale| * D_qk >=
///    100 + ln(S_kv), so all its scores are <= -(100 + ln S_kv) and its LSE < -88.7
///    (exp(LSE) underflows f32). Other rows stay exact.
///  - spike_k: K channel D_qk / 2 is 70 for every key; dO is N(0, 1) * 1e-8 rounded to the io
///    dtype (1e-4 for f16, whose normal range ends at 6e-5).
///  - tile_spikes: spike t = 0.. at key positions 63, 64, 127, 128 and S_kv - 1 (those < S_kv,
///    distinct): K[j_t, t % D_qk] = 16; query row i gets Q[i, t % D_qk] = 16 with
///    t = i % (number of spikes), so each row has one dominant key at a tile boundary.
void plant_adversarial(const Problem& p, SdpaInputs& in);

/// Displacement for bwd: computes O and stats with the reference forward from the filled
/// Q, K, V (same mask and scale; without the magnitudes, which only a check needs), rounds O to
/// the io dtype (fp8: onto its grid scaled by descale_O, saturating), keeps stats in f32 (+inf
/// for fully masked rows), and stores both into `in` (folded like the fill when their strides
/// alias), so the vendor and the reference see the same bytes. With `qk`, leaves there the Q and
/// K work the reference backward takes on these inputs (ref/sdpa_ref.hpp RefQK). Returns how many
/// O values saturated (fp8 only: past the io type's range at descale_O; the case then tells
/// little). No-op (0) for the forward directions.
std::int64_t displace(const Problem& p, SdpaInputs& in, const DropoutMask* mask = nullptr, RefQK* qk = nullptr);

}  // namespace sdpa
