// Helpers shared by the oneDNN graph tests (test_onednn_json*.cpp, test_onednn_graph.cpp): the upstream graph
// folder, an import of JSON text, sizes, and lookups of ops in a parsed graph.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/json_import.hpp"

#include "../test_helpers.hpp"

#ifndef SDPABENCH_SOURCE_DIR
#error "SDPABENCH_SOURCE_DIR (the project root) must be defined for this test"
#endif

namespace sdpa::json_test {

using nlohmann::json;
using test::make_problem;

/// benchdnn's graph inputs (../shared next to the project; tests skip when it is absent).
inline const std::filesystem::path kUpstreamMha = std::filesystem::path(SDPABENCH_SOURCE_DIR) / ".." / "shared" /
        "upstream-cases" / "benchdnn-graph" / "complex_fusion" / "mha";

/// Imports `text` as a file named "g.json".
inline GraphImport import_text(const std::string& text, const GraphRewrites& rw = {}, std::uint64_t seed = 1) {
    return import_onednn_json_text(text, "g.json", rw, seed);
}

inline constexpr Dims kMha{2, 4, 4, 16, 24, 32, 16};
inline constexpr Dims kGqa{2, 8, 2, 16, 24, 32, 16};

/// Every op of `kind`, in file order.
inline std::vector<json*> ops_of_kind(json& g, const std::string& kind) {
    std::vector<json*> v;
    for (json& op : g["graph"])
        if (op["kind"] == kind) v.push_back(&op);
    return v;
}
/// The op named `name`, or nullptr.
inline json* op_named(json& g, const std::string& name) {
    for (json& op : g["graph"])
        if (op["name"] == name) return &op;
    return nullptr;
}

}  // namespace sdpa::json_test
