#include "graph/json_export.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sdpa {

namespace {

using nlohmann::ordered_json;

/// Graph JSON version written (the oneDNN release whose dump format this follows).
constexpr const char* kGraphJsonVersion = "3.13.2";

ordered_json tensor_json(const GraphTensor& t) {
    ordered_json j;
    j["id"] = t.id;
    j["dtype"] = fmt::format("{}", t.dt);
    j["shape"] = t.dims;
    j["stride"] = t.strides;
    j["layout_type"] = "strided";
    j["property_type"] = t.host_scalar ? "host_scalar" : "undef";  // host_scalar: a scalar of shape []
    return j;
}

/// {"type": ..., "value": ...} as oneDNN's serializer writes attributes (bools as 0/1).
ordered_json attr_json(const GraphAttr& v) {
    ordered_json j;
    std::visit([&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
            j["type"] = "bool";
            j["value"] = x ? 1 : 0;
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
            j["type"] = "s64";
            j["value"] = x;
        } else if constexpr (std::is_same_v<T, float>) {
            j["type"] = "f32";
            j["value"] = x;
        } else if constexpr (std::is_same_v<T, std::string>) {
            j["type"] = "string";
            j["value"] = x;
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            j["type"] = "s64[]";
            j["value"] = x;
        } else {
            j["type"] = "f32[]";
            j["value"] = x;
        }
    }, v);
    return j;
}


}  // namespace

std::string onednn_graph_json(const Problem& p) {
    const SdpaGraphDesc g = describe_sdpa_graph(p);
    ordered_json j;
    j["version"] = kGraphJsonVersion;
    j["engine_kind"] = "cpu";
    j["fpmath_mode"] = "strict";
    j["fpmath_mode_apply_to_int"] = "false";
    std::vector<std::size_t> in_ports, out_ports;
    for (const auto& [port, t] : g.inputs) in_ports.push_back(t.id);
    for (const auto& [port, t] : g.outputs) out_ports.push_back(t.id);
    j["input_ports"] = in_ports;
    j["output_ports"] = out_ports;
    ordered_json ops = ordered_json::array();
    for (const GraphOp& op : g.ops) {
        ordered_json o;
        o["id"] = op.id;
        o["name"] = op.name;
        o["kind"] = op.kind;
        o["attrs"] = ordered_json::object();
        for (const auto& [name, v] : op.attrs) o["attrs"][name] = attr_json(v);
        o["inputs"] = ordered_json::array();
        for (const auto& t : op.inputs) o["inputs"].push_back(tensor_json(t));
        o["outputs"] = ordered_json::array();
        for (const auto& t : op.outputs) o["outputs"].push_back(tensor_json(t));
        ops.push_back(std::move(o));
    }
    j["graph"] = std::move(ops);
    return j.dump(2) + "\n";
}

}  // namespace sdpa
