// The tolerance model (compare/README.md): per-element bound
//   |X - X_ref| <= c * u_X * (M_X + max(M_X) / 1024)
// with the magnitudes M_X computed by the reference.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/dtype.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {


/// Constants of the bound for one (dtype, output).
struct Tolerance {
    double c;  ///< safety factor on u_X (calibrated per dtype and output: compare/tolerance.cpp)
    double u;  ///< unit roundoff of the output's storage type
    /// Absolute error no magnitude can rule out: f16's subnormal spacing 2^-24 (a stored value
    /// cannot be closer than half of it: f16 dV of tiny dO); for f32 and bf16 the smallest
    /// normal 2^-126, as a CPU kernel may flush subnormals to zero (FTZ/DAZ); for fp8 half the
    /// smallest subnormal in codes (the check multiplies it by the output's descale). The bound is
    /// c * (u_eff * (M + max(M)/1024) + tiny).
    double tiny = 0;
};

/// Row of the tolerance table for (io dtype, output), calibrated with scripts/calibrate.sh
/// (compare/README.md). Stats are f32 whatever the io dtype.
Tolerance tolerance(DType io, Output out);

/// Effective u_X: the storage roundoff plus an f32 accumulation term u_f32 * sqrt(K) for a
/// reduction of length K (S_kv for O and dQ; S_q * H_q/H_kv for dK and dV), which matters for f32.
double effective_u(const Tolerance& t, std::int64_t reduction_length);

/// False for the io dtypes whose rows were not calibrated against a vendor (fp8: docs/knobs_types.md#fp8).
bool calibrated(DType io);

}  // namespace sdpa
