#include "driver/emit_json.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "graph/json_export.hpp"

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
    } else {
        base = descriptor(c.prb.dims, c.prb.name);
        const std::string k = knobs(c.prb);
        if (!k.empty()) base += "_" + k;
    }
    return safe(base) + ".json";
}

std::string write_onednn_json(const Case& c, const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path path = fs::path(dir) / onednn_json_file_name(c);
    std::ofstream out(path);
    out << onednn_graph_json(c.prb);
    out.close();
    if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
    return path.string();
}

}  // namespace sdpa
