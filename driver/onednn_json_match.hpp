// Internals of the oneDNN graph JSON import: matching the SDPA training forward and backward
// patterns on a parsed graph (see driver/onednn_json_import.hpp for the patterns).
#pragma once

#include "driver/onednn_json_graph.hpp"

namespace sdpa::graph_json {

/// What the match found: the tensors at the pattern's ports and facts about the graph.
struct Match {
    Dir dir = Dir::fwd_t;
    ScaleOp scale_op = ScaleOp::mul;
    std::map<GraphPort, RawTensor> in, out;
    std::vector<std::pair<const RawOp*, const RawTensor*>> io_typed;  ///< (op, its tensor) that must have the io dtype
    std::vector<std::pair<const RawOp*, std::size_t>> f32_typed;  ///< (op, output index) that must be f32
};

/// Matches the forward or backward SDPA training pattern, marking the ops it uses in `g`.
/// Throws ImportError naming the op (id, kind, name) that broke the match.
Match match(Graph& g);

}  // namespace sdpa::graph_json
