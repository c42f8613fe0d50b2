// --emit-onednn-json: one graph JSON file per case (graph/json_export.hpp gives the text), named
// after the case.
#pragma once

#include <string>
#include <vector>

#include "driver/case.hpp"

namespace sdpa {

/// File name for case c: its name (or descriptor) plus the non-default knobs, with every
/// character outside [A-Za-z0-9._-] replaced by '_', and ".json". E.g.
/// "b1hq2sq64d64_--dir_bwd_--dt_bf16.json"; for an imported graph: file stem, descriptor,
/// and "_dt-X" / "_seed-N" when --dt / --seed were given, "_rw-HASH" with per-id or shape rewrites.
std::string onednn_json_file_name(const Case& c);

/// Writes onednn_graph_json(c.prb) into directory `dir` (created if missing) under
/// onednn_json_file_name(c); a fwd_bwd case writes its two graphs, the fwd_t one as NAME_fwd.json
/// and the bwd one as NAME_bwd.json. Returns the paths written. Throws std::runtime_error naming
/// the path when one cannot be written.
std::vector<std::string> write_onednn_json(const Case& c, const std::string& dir);

}  // namespace sdpa
