// Input fill policies. Seeded and reproducible: the same Problem gives the same bytes.
#pragma once

#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// Fills Q, K, V (all directions), dO (bwd) and the bias (mask = bias) for `p`:
///  - exact: small integers (benchdnn style). Q and K take values in [-2, 2] with a density
///    that keeps |q.k| <= 2^24 for any D_qk, so every dot product of QK^T is exact in f32;
///    V and dO take integers in [-2, 2]; bias takes integers in [-4, 0].
///  The bias has dims bias_dims(p); p.mask_fill other than random overrides its values
///  (zero: all 0; causal_last_row: 0 / -inf, see MaskFill).
///  - normal: N(0, 1) rounded to the io dtype (bias: N(0,1) rounded to the mask dtype).
/// Each tensor has its own stream derived from (p.seed, tensor id), so changing one tensor's
/// shape does not change another's values. O and stats are left empty (see displace()).
SdpaInputs fill_inputs(const Problem& p);

/// Displacement for bwd: computes O and stats with the reference forward from the filled
/// Q, K, V (same mask and scale), rounds O to the io dtype, keeps stats in f32 (+inf for
/// fully masked rows), and stores both into `in`, so the vendor and the reference see the
/// same bytes. No-op for the forward directions.
void displace(const Problem& p, SdpaInputs& in);

}  // namespace sdpa
