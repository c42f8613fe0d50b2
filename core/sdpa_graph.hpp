// A vendor-neutral description of the SDPA training graphs sdpabench builds: ops with ids,
// kinds, names, attributes and their input/output tensors, in oneDNN Graph API vocabulary.
// The oneDNN backend turns it into dnnl::graph objects; the JSON exporter writes it in
// benchdnn's graph format. One builder, so both always describe the same graph.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/problem.hpp"

namespace sdpa {

/// External tensors of an SDPA graph (inputs Q..stats, outputs O..dV).
enum class GraphPort { Q, K, V, scale, mask, O, dO, stats, dQ, dK, dV };

/// Value of an op attribute, typed as the oneDNN Graph API types them: bool, s64, f32,
/// string, s64[] (e.g. ReduceSum axes), f32[].
using GraphAttr = std::variant<bool, std::int64_t, float, std::string, std::vector<std::int64_t>, std::vector<float>>;

/// One logical tensor: id (unique among tensors and ops), data type, dims and dense
/// row-major strides (in elements).
struct GraphTensor {
    std::size_t id = 0;
    DType dt = DType::f32;
    std::vector<std::int64_t> dims, strides;
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

/// Dense row-major strides of `dims` (elements).
std::vector<std::int64_t> dense_strides(const std::vector<std::int64_t>& dims);

/// Dims of the additive mask tensor in the graph (empty when !graph_has_mask(p)): 4-D
/// bias_dims(p) for MHA; 5-D [1|B, 1|H_kv, 1|G, 1|S_q, S_kv] for GQA/MQA (G = H_q/H_kv).
/// Causal and window masks are [1,1,S_q,S_kv] (or [1,1,1,S_q,S_kv]); padding makes the batch
/// dim B and the query dim S_q.
std::vector<std::int64_t> graph_mask_dims(const Problem& p);

/// True when the graph takes an additive mask tensor: any mask but none (causal and window
/// masks become explicit 0 / -inf tensors), or padding lengths (per-batch -inf rows/columns).
bool graph_has_mask(const Problem& p);

/// The graph for p.dir (fwd_i: O; fwd_t: O and stats; bwd: dQ, dK, dV), following oneDNN's
/// documented SDPA training patterns (doc/graph_api/fusion_patterns/sdpa.md, gqa.md): 4-D
/// bhsd tensors for MHA, 5-D [B,H_kv,G,S,D] for GQA/MQA with ReduceSum over G for dK/dV.
/// Intermediates are f32; P (forward, and before the dV matmul) and the scaled dS (before
/// the dQ/dK matmuls) are in the io dtype. Causal masks become explicit additive masks of
/// 0 / -inf in the mask dtype; SoftMax uses mode inf_as_zero. Ids count up from 1.
SdpaGraphDesc describe_sdpa_graph(const Problem& p);

}  // namespace sdpa
