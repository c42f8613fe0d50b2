// The tensors that flow through one case: inputs from the filler, outputs from a backend.
#pragma once

#include <optional>

#include "core/tensor.hpp"

namespace sdpa {

/// Inputs of an SDPA training case, all dense bhsd:
/// Q [B,H_q,S_q,D_qk], K [B,H_kv,S_kv,D_qk], V [B,H_kv,S_kv,D_v] in the io dtype;
/// bias [1|B,1|H_q,S_q,S_kv] in the mask dtype (empty unless --mask=bias);
/// bwd only: O and dO [B,H_q,S_q,D_v] in the io dtype and stats [B,H_q,S_q,1] f32, where O
/// and stats come from the reference forward on the same Q, K, V (displacement).
struct SdpaInputs {
    Tensor Q, K, V, bias, O, dO, stats;
};

/// Outputs a backend produced (empty tensors for outputs the direction does not have):
/// fwd_i: O; fwd_t: O, stats; bwd: dQ, dK, dV. Shapes as in SdpaInputs; values exactly
/// representable in the io dtype (stats f32).
struct SdpaOutputs {
    Tensor O, stats, dQ, dK, dV;
};

}  // namespace sdpa
