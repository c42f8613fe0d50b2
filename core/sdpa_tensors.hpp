// The tensors that flow through one case: inputs from the filler, outputs from a backend.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_table.hpp"
#include "core/layout.hpp"
#include "core/tensor.hpp"

namespace sdpa {

/// Inputs of an SDPA training case as dense host tensors with the dims of their geometry roles
/// (core/geometry.hpp): Q, K, V in the io dtype; bias in the mask dtype (empty unless
/// --mask=bias); bwd only: O and dO in the io dtype and stats f32, where O and stats come from
/// the reference forward on the same Q, K, V (displacement). The vendor's buffers have the
/// geometry's strides (backends/strided_buffer.hpp); these host tensors hold what they hold.
struct SdpaInputs {
    Tensor Q, K, V, bias, O, dO, stats;
    /// The tensor of input role r, or nullptr for a role that is never an input here.
    Tensor* of(Role r) {
        switch (r) {
            case Role::Q: return &Q;
            case Role::K: return &K;
            case Role::V: return &V;
            case Role::bias: return &bias;
            case Role::O: return &O;
            case Role::dO: return &dO;
            case Role::stats: return &stats;
            default: return nullptr;
        }
    }
    const Tensor* of(Role r) const { return const_cast<SdpaInputs*>(this)->of(r); }
};

/// The outputs of SDPA training, in report order.
/// dMask: the gradient of the bias (Problem::dmask), f32 in the bias's shape. amax: fp8 only, the
/// absolute maxima the graph outputs before the output scaling (core/fp8.hpp), f32 [1,1,1,k] in
/// cuDNN's order (kAmaxFwd, kAmaxBwd).
enum class Output { O, stats, dQ, dK, dV, dMask, amax };
/// The geometry role of an output.
constexpr Role role_of(Output o) {
    switch (o) {
        case Output::O: return Role::O;
        case Output::stats: return Role::stats;
        case Output::dQ: return Role::dQ;
        case Output::dK: return Role::dK;
        case Output::dV: return Role::dV;
        case Output::dMask: return Role::dMask;
        case Output::amax: return Role::amax;
    }
    return Role::O;
}
/// The outputs in report order, each spelled as its geometry role (kRoleNames).
inline constexpr auto kOutputNames = [] {
    constexpr std::array outputs{Output::O, Output::stats, Output::dQ, Output::dK, Output::dV, Output::dMask, Output::amax};
    std::array<EnumName<Output>, outputs.size()> t{};
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = {outputs[i], enum_name(kRoleNames, role_of(outputs[i]))};
    return t;
}();
inline constexpr std::size_t kOutputCount = kOutputNames.size();
/// The entries of the amax output: forward Amax_S (of P, before scale_S) and Amax_O; backward
/// Amax_dQ, Amax_dK, Amax_dV and Amax_dP (of the scaled dS, before scale_dP), as cuDNN's
/// Graph::sdpa_fp8 and sdpa_fp8_backward return them.
inline constexpr std::array<std::string_view, 2> kAmaxFwd{"S", "O"};
inline constexpr std::array<std::string_view, 4> kAmaxBwd{"dQ", "dK", "dV", "dP"};
inline std::string_view format_as(Output v) { return enum_name(kOutputNames, v); }
/// The output of a geometry role; nullopt for a role that is never an output.
constexpr std::optional<Output> output_of(Role r) {
    for (const auto& row : kOutputNames)
        if (role_of(row.value) == r) return row.value;
    return std::nullopt;
}

/// What the guard bands around one vendor output buffer saw (backends/guarded_buffer.hpp):
/// bytes of the leading/trailing guard that changed, logical elements still holding the NaN
/// prefill pattern after the run, and elements of the stride gaps (memory between strided rows
/// that belongs to no logical element) that no longer hold it, with the first one's offset and
/// a description of where it is.
struct OutputIntegrity {
    std::size_t touched_before = 0, touched_after = 0;
    std::int64_t unwritten = 0;
    std::int64_t gap_written = 0;
    std::int64_t first_gap = -1;
    std::string first_gap_where;
    bool clean() const { return touched_before == 0 && touched_after == 0 && unwritten == 0 && gap_written == 0; }
};

/// Outputs a backend produced (empty tensors for outputs the direction does not have):
/// fwd_i: O; fwd_t: O, stats; bwd: dQ, dK, dV (and dMask with Problem::dmask). Dense, with the dims of their geometry roles; values exactly
/// representable in the io dtype (stats f32). `integrity` is indexed by Output; backends
/// without guard bands leave it clean.
struct SdpaOutputs {
    Tensor O, stats, dQ, dK, dV, dMask, amax;
    std::array<OutputIntegrity, kOutputCount> integrity{};
    Tensor& of(Output o) {
        switch (o) {
            case Output::O: return O;
            case Output::stats: return stats;
            case Output::dQ: return dQ;
            case Output::dK: return dK;
            case Output::dV: return dV;
            case Output::dMask: return dMask;
            case Output::amax: return amax;
        }
        return O;
    }
    const Tensor& of(Output o) const { return const_cast<SdpaOutputs*>(this)->of(o); }
    const OutputIntegrity& integrity_of(Output o) const { return integrity[static_cast<std::size_t>(o)]; }
    OutputIntegrity& integrity_of(Output o) { return integrity[static_cast<std::size_t>(o)]; }
};

}  // namespace sdpa
