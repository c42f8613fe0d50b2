#include "driver/emit_json.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "graph/json_export.hpp"
#include "driver/knobs.hpp"
#include "driver/run_case.hpp"

namespace sdpa {

namespace {

std::string safe(std::string_view s) {
    std::string out;
    for (const char ch : s)
        out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-') ? ch : '_';
    return out;
}

}  // namespace

std::string onednn_json_file_name(const Case& c) {
    std::string base;
    if (!c.graph_file.empty()) {  // imported: file stem, sizes after rewrites, the knobs that change it
        base = std::filesystem::path(c.graph_file).stem().string() + "_" + descriptor(c.prb.dims);
        if (c.graph_dt) base += fmt::format("_dt-{}", *c.graph_dt);
        if (c.prb.seed != Problem{}.seed) base += fmt::format("_seed-{}", c.prb.seed);
        // The per-id rewrites and --in-shapes strides are too long for a name: their FNV-1a hash
        // keeps the files of one line's expansion apart.
        const std::string rw = c.dt_ids + '|' + c.op_kinds + '|' + c.op_attrs + '|' + c.properties + '|' + c.in_shapes;
        if (rw != "||||") {
            std::uint64_t h = 0xcbf29ce484222325ull;
            for (const char ch : rw) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
            base += fmt::format("_rw-{:016x}", h);
        }
    } else {
        base = descriptor(c.prb.dims, c.prb.name);
        const std::string k = knobs(c.prb);
        if (!k.empty()) base += "_" + k;
    }
    return safe(base) + ".json";
}

std::vector<std::string> write_onednn_json(const Case& c, const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::vector<std::pair<std::string, Problem>> graphs;
    const std::string name = onednn_json_file_name(c);
    if (const auto dirs = directions(c.prb.dir); dirs.size() > 1) {  // a graph per direction: NAME_fwd, NAME_bwd
        const std::string stem = name.substr(0, name.size() - 5);
        for (const Dir d : dirs) graphs.emplace_back(stem + (d == Dir::bwd ? "_bwd.json" : "_fwd.json"), step_problem(c.prb, d));
    } else {
        graphs.emplace_back(name, c.prb);
    }
    std::vector<std::string> paths;
    for (const auto& [file, p] : graphs) {
        const fs::path path = fs::path(dir) / file;
        const std::string text = onednn_graph_json(p);  // first: a graph that cannot be said leaves no file
        std::ofstream out(path);
        out << text;
        out.close();
        if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
        paths.push_back(path.string());
    }
    return paths;
}

}  // namespace sdpa
