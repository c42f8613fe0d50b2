// Writes the graph sdpabench builds for oneDNN (graph/sdpa_graph.hpp) as JSON text in the
// format of oneDNN's graph dump and benchdnn's --graph driver (--case=FILE.json), so a case
// can be handed to oneDNN's own tools (driver/emit_json.hpp writes the files).
#pragma once

#include <string>

#include "graph/sdpa_graph.hpp"

namespace sdpa {

/// The JSON text (2-space indent) of describe_sdpa_graph(p): "version", "engine_kind"
/// ("cpu"), "fpmath_mode" ("strict"), "fpmath_mode_apply_to_int", "input_ports",
/// "output_ports" and "graph" (ops with id, name, kind, attrs {type, value}, inputs/outputs
/// {id, dtype, shape, stride, layout_type "strided", property_type "undef"}). With p.dropout,
/// the Dropout ops and their seed and offset (s64) and probability (f32) inputs, shape [],
/// stride [], property_type "host_scalar"; the values are not part of the file (an import
/// chooses them, graph/json_import.hpp).
std::string onednn_graph_json(const Problem& p);

}  // namespace sdpa
