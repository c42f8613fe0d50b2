// The tensors that flow through one case: inputs from the filler, outputs from a backend.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/enum_table.hpp"
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

/// The outputs of SDPA training, in report order.
enum class Output { O, stats, dQ, dK, dV };
inline constexpr std::array<EnumName<Output>, 5> kOutputNames{{{Output::O, "O"},
    {Output::stats, "stats"}, {Output::dQ, "dQ"}, {Output::dK, "dK"}, {Output::dV, "dV"}}};
inline std::string_view format_as(Output v) { return enum_name(kOutputNames, v); }

/// What the guard bands around one vendor output buffer saw (backends/guarded_buffer.hpp):
/// bytes of the leading/trailing guard that changed, and elements still holding the NaN
/// prefill pattern after the run.
struct OutputIntegrity {
    std::size_t touched_before = 0, touched_after = 0;
    std::int64_t unwritten = 0;
    bool clean() const { return touched_before == 0 && touched_after == 0 && unwritten == 0; }
};

/// Outputs a backend produced (empty tensors for outputs the direction does not have):
/// fwd_i: O; fwd_t: O, stats; bwd: dQ, dK, dV. Shapes as in SdpaInputs; values exactly
/// representable in the io dtype (stats f32). `integrity` is indexed by Output; backends
/// without guard bands leave it clean.
struct SdpaOutputs {
    Tensor O, stats, dQ, dK, dV;
    std::array<OutputIntegrity, 5> integrity{};
    const OutputIntegrity& integrity_of(Output o) const { return integrity[static_cast<std::size_t>(o)]; }
    OutputIntegrity& integrity_of(Output o) { return integrity[static_cast<std::size_t>(o)]; }
};

}  // namespace sdpa
