// Builds the oneDNN Graph API SDPA training graphs (forward with stats, backward) for a Problem.
// Follows oneDNN's documented patterns: doc/graph_api/fusion_patterns/sdpa.md and gqa.md, and
// examples/graph/gqa_training.cpp in the oneDNN repository.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl_graph.hpp>

#include "core/problem.hpp"
#include "graph/sdpa_graph.hpp"

namespace sdpa::onednn {

/// Graph inputs and outputs that the backend binds to host data (graph/sdpa_graph.hpp).
using Port = GraphPort;

/// Logical tensor of a port, with its dims (4-D [B,H,S,D] for MHA; 5-D [B,H_kv,G,S,D] for
/// GQA/MQA, G = H_q/H_kv; strides from the geometry, graph/sdpa_graph.hpp graph_view).
struct PortTensor {
    dnnl::graph::logical_tensor lt;
    std::vector<std::int64_t> dims;
};

/// A built (not yet finalized) graph plus its external ports. Inputs appear in `inputs`,
/// outputs in `outputs`, in the order the backend binds them.
struct SdpaGraph {
    dnnl::graph::graph graph;
    std::map<Port, PortTensor> inputs;
    std::map<Port, PortTensor> outputs;
    int op_count = 0;
};

/// Graph for p.dir (fwd_i: O; fwd_t: O and stats; bwd: dQ, dK, dV): the ops of
/// describe_sdpa_graph(p) turned into dnnl::graph ops. Intermediates are f32;
/// P (forward, and before the dV matmul) and the scaled dS (before the dQ/dK matmuls) are
/// cast to the io dtype, as the documented patterns do. Causal masks are explicit additive
/// masks [1,1,S_q,S_kv] of 0 / -inf in the mask dtype (the training backward pattern takes
/// explicit masks only); the softmax uses mode inf_as_zero so fully masked rows give O = 0.
/// Every port is a strided logical tensor with its geometry's strides.
/// Throws dnnl::error when the library rejects an op.
SdpaGraph build_sdpa_graph(const Problem& p, dnnl::engine::kind kind);

/// True when the graph takes an additive mask tensor: any mask but none, or padding
/// (per-batch lengths become -inf entries of a [B,1,S_q,S_kv] mask).
bool has_mask_tensor(const Problem& p);

/// Dims of the additive mask tensor for p (empty when !has_mask_tensor(p)), 4-D or 5-D like Q
/// (graph/sdpa_graph.hpp graph_mask_view).
std::vector<std::int64_t> mask_dims(const Problem& p);

}  // namespace sdpa::onednn
