// A vendor-neutral description of the SDPA training graphs sdpabench builds: ops with ids,
// kinds, names, attributes and their input/output tensors, in oneDNN Graph API vocabulary.
// The oneDNN backend turns it into dnnl::graph objects; the JSON exporter writes it in
// benchdnn's graph format. One builder, so both always describe the same graph.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/enum_table.hpp"
#include "core/geometry.hpp"
#include "core/problem.hpp"

namespace sdpa {

/// External tensors of an SDPA graph (inputs Q..stats and the scalars, outputs O..dV).
/// dropout_seed, dropout_offset (s64) and dropout_p (f32) are the scalars of the Dropout ops
/// (oneDNN's Dropout op: inputs src, seed, offset, probability). The implicit causal mask
/// (Problem::implicit_mask) takes mask_fill (f32, -inf: the Select's value for hidden keys)
/// and for causal_br causal_s_kv and causal_s_q (s32 host scalars S_kv and S_q, added to and
/// subtracted from the row index, as benchdnn fills them). dMask is the output of the bias
/// gradient (Problem::dmask).
enum class GraphPort {
    Q, K, V, scale, mask, O, dO, stats, dQ, dK, dV, dropout_seed, dropout_offset, dropout_p, mask_fill, causal_s_kv,
    causal_s_q, dMask
};

/// Value of an op attribute, typed as the oneDNN Graph API types them: bool, s64, f32,
/// string, s64[] (e.g. ReduceSum axes), f32[].
using GraphAttr = std::variant<bool, std::int64_t, float, std::string, std::vector<std::int64_t>, std::vector<float>>;

/// One logical tensor: id (unique among tensors and ops), element type, dims and strides (in
/// elements): the geometry's strides for the ports (core/geometry.hpp), dense row-major for
/// the intermediates; rank 0 for a host scalar (oneDNN's property_type host_scalar).
struct GraphTensor {
    std::size_t id = 0;
    ElemType dt = ElemType::f32;
    std::vector<std::int64_t> dims, strides;
    bool host_scalar = false;
    friend bool operator==(const GraphTensor&, const GraphTensor&) = default;
};

/// One op: id, oneDNN Graph op kind ("MatMul", "SoftMax", ...), name, attributes in a fixed
/// order, input and output tensors.
struct GraphOp {
    std::size_t id = 0;
    std::string kind, name;
    std::vector<std::pair<std::string, GraphAttr>> attrs;
    std::vector<GraphTensor> inputs, outputs;
};

/// A whole graph: ops in execution (topological) order and the external ports.
struct SdpaGraphDesc {
    std::vector<GraphOp> ops;
    std::map<GraphPort, GraphTensor> inputs, outputs;
};

/// "Q", "mask", "dropout seed", ...: each port as messages and the bound-tensor list name it (the
/// role's name for a port with a role).
inline constexpr auto kGraphPortNames = std::to_array<EnumName<GraphPort>>({{GraphPort::Q, "Q"},
    {GraphPort::K, "K"}, {GraphPort::V, "V"}, {GraphPort::scale, "scale"}, {GraphPort::mask, "mask"},
    {GraphPort::O, "O"}, {GraphPort::dO, "dO"}, {GraphPort::stats, "stats"}, {GraphPort::dQ, "dQ"},
    {GraphPort::dK, "dK"}, {GraphPort::dV, "dV"}, {GraphPort::dropout_seed, "dropout seed"},
    {GraphPort::dropout_offset, "dropout offset"}, {GraphPort::dropout_p, "dropout probability"},
    {GraphPort::mask_fill, "implicit mask fill"}, {GraphPort::causal_s_kv, "causal_br S_kv"},
    {GraphPort::causal_s_q, "causal_br S_q"}, {GraphPort::dMask, "dMask"}});

/// A port's name in kGraphPortNames.
inline std::string_view port_name(GraphPort port) { return enum_name(kGraphPortNames, port); }
inline std::string_view format_as(GraphPort port) { return port_name(port); }

/// The geometry role behind a port: Q, K, V, O, dO, stats, dQ, dK, dV as such; the mask is
/// the bias when the graph's mask is the bias itself (graph_mask_is_bias); nullopt otherwise
/// (the scale, a merged mask).
std::optional<Role> port_role(const Problem& p, GraphPort port);

/// A role's tensor in the graph's rank: 4-D as the geometry gives it for MHA; for GQA/MQA the
/// 5-D view [B, H_kv, G, S, D] (head h = h_kv * G + g) of a tensor with H_q heads, or
/// [B, H, 1, S, D] of one with H_kv heads or a broadcast head (the same memory either way).
struct GraphView {
    std::vector<std::int64_t> dims, strides;
};
GraphView graph_view(const Problem& p, const TensorGeom& t);

/// True when the graph takes an additive mask tensor: any mask but none (causal and window
/// masks become explicit 0 / -inf tensors), or padding lengths (per-batch -inf rows/columns).
bool graph_has_mask(const Problem& p);

/// True when the graph's mask tensor is the bias itself, with the bias's geometry (--mask=bias
/// without padding); otherwise the mask is a dense tensor of merged_mask_dims(p) that the
/// backend builds (bias + -inf for causal, window and padding).
bool graph_mask_is_bias(const Problem& p);

/// The graph's mask tensor (dims and strides in the graph's rank; empty dims when
/// !graph_has_mask(p)): graph_view of the bias when graph_mask_is_bias(p), else of a dense
/// merged_mask_dims(p) tensor.
GraphView graph_mask_view(const Problem& p);

/// The graph for p.dir (fwd_i: O; fwd_t: O and stats; bwd: dQ, dK, dV; a step's problem,
/// driver/run_case.hpp step_problem: fwd_bwd is the driver's list of two steps), following oneDNN's
/// documented SDPA training patterns (doc/graph_api/fusion_patterns/sdpa.md, gqa.md): 4-D
/// [B,H,S,D] tensors for MHA, 5-D [B,H_kv,G,S,D] for GQA/MQA with ReduceSum over G for dK/dV;
/// every port has the dims and strides of its geometry role (graph_view).
/// Intermediates are f32; P (forward, and before the dV matmul) and the scaled dS (before
/// the dQ/dK matmuls) are in the io dtype. Causal masks become explicit additive masks of
/// 0 / -inf in the mask dtype; SoftMax uses mode inf_as_zero. Ids count up from 1.
/// With p.dmask the backward also outputs dMask: dS itself (an End op on it, oneDNN's mask
/// gradient output) when the bias has the scores' shape, else ReduceSum of dS over the bias's
/// broadcast axes (keep_dims) into a tensor of the bias's view.
/// With p.implicit_mask, the causal mask is built in the graph instead (oneDNN's implicit causal
/// mask, doc/graph_api/fusion_patterns/sdpa.md): GenIndex on the scores' rows (axis -2) [+ S_kv
/// - S_q for causal_br], GenIndex on the columns (axis -1), GreaterEqual(row, column), and
/// Select(keep, scores, mask_fill).
/// With p.dropout (core/dropout.hpp), the documented Dropout ops (seed, offset, probability:
/// host scalars, or [1] tensors with p.dropout_device_scalars): forward after the SoftMax (whose P is then f32, cast to the io dtype after the
/// Dropout), backward on P before the dV matmul and on dP before the subtraction of D, as
/// oneDNN's SDPA training patterns with dropout place them.
/// Throws std::invalid_argument for fp8 io and ragged tensors (no oneDNN graph says them).
SdpaGraphDesc describe_sdpa_graph(const Problem& p);

}  // namespace sdpa
