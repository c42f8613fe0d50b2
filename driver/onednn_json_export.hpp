// Writes the graph sdpabench builds for oneDNN (core/sdpa_graph.hpp) as a JSON file in the
// format of oneDNN's graph dump and benchdnn's --graph driver (--case=FILE.json), so a case
// can be handed to oneDNN's own tools.
#pragma once

#include <string>

#include "core/sdpa_graph.hpp"
#include "driver/case.hpp"

namespace sdpa {

/// The JSON text (2-space indent) of describe_sdpa_graph(p): "version", "engine_kind"
/// ("cpu"), "fpmath_mode" ("strict"), "fpmath_mode_apply_to_int", "input_ports",
/// "output_ports" and "graph" (ops with id, name, kind, attrs {type, value}, inputs/outputs
/// {id, dtype, shape, stride, layout_type "strided", property_type "undef"}). With p.dropout,
/// the Dropout ops and their seed and offset (s64) and probability (f32) inputs, shape [],
/// stride [], property_type "host_scalar"; the values are not part of the file (an import
/// chooses them, driver/onednn_json_import.hpp).
std::string onednn_graph_json(const Problem& p);

/// File name for case c: its name (or descriptor) plus the non-default knobs, with every
/// character outside [A-Za-z0-9._-] replaced by '_', and ".json". E.g.
/// "b1hq2sq64d64_--dir_bwd_--dt_bf16.json"; for an imported graph: file stem, descriptor,
/// and "_dt-X" / "_seed-N" when --dt / --seed were given.
std::string onednn_json_file_name(const Case& c);

/// Writes onednn_graph_json(c.prb) into directory `dir` (created if missing) under
/// onednn_json_file_name(c). Returns the path written. Throws std::runtime_error naming the
/// path when it cannot be written.
std::string write_onednn_json(const Case& c, const std::string& dir);

}  // namespace sdpa
