#include "backends/onednn/onednn_graph.hpp"

#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace sdpa::onednn {

namespace {

using dnnl::graph::logical_tensor;
using dnnl::graph::op;
using ldt = logical_tensor::data_type;

ldt to_ldt(DType dt) {
    switch (dt) {
        case DType::f32: return ldt::f32;
        case DType::bf16: return ldt::bf16;
        case DType::f16: return ldt::f16;
    }
    return ldt::f32;
}

/// A strided logical tensor with the description's dims and strides (the geometry's for ports).
logical_tensor to_lt(const GraphTensor& t) { return logical_tensor(t.id, to_ldt(t.dt), t.dims, t.strides); }

/// The op kinds describe_sdpa_graph() uses.
op::kind to_kind(std::string_view k) {
    static const std::pair<std::string_view, op::kind> table[] = {{"MatMul", op::kind::MatMul},
        {"Multiply", op::kind::Multiply}, {"Divide", op::kind::Divide}, {"Add", op::kind::Add},
        {"Subtract", op::kind::Subtract}, {"SoftMax", op::kind::SoftMax}, {"Exp", op::kind::Exp},
        {"TypeCast", op::kind::TypeCast}, {"ReduceSum", op::kind::ReduceSum}};
    for (const auto& [name, kind] : table)
        if (name == k) return kind;
    throw std::invalid_argument(fmt::format("oneDNN graph builder: no op kind '{}'", k));
}

/// The attributes describe_sdpa_graph() uses, set with their oneDNN types.
void set_attr(op& o, const std::string& name, const GraphAttr& v) {
    static const std::pair<std::string_view, op::attr> table[] = {{"transpose_a", op::attr::transpose_a},
        {"transpose_b", op::attr::transpose_b}, {"axis", op::attr::axis}, {"axes", op::attr::axes},
        {"keep_dims", op::attr::keep_dims}, {"mode", op::attr::mode}};
    for (const auto& row : table) {
        if (row.first != name) continue;
        const op::attr a = row.second;  // (clang 14 cannot capture structured bindings)
        std::visit([&](const auto& x) { o.set_attr(a, x); }, v);
        return;
    }
    throw std::invalid_argument(fmt::format("oneDNN graph builder: no op attribute '{}'", name));
}

}  // namespace

std::vector<std::int64_t> mask_dims(const Problem& p) { return graph_mask_view(p).dims; }

bool has_mask_tensor(const Problem& p) { return graph_has_mask(p); }

SdpaGraph build_sdpa_graph(const Problem& p, dnnl::engine::kind kind) {
    const SdpaGraphDesc desc = describe_sdpa_graph(p);
    SdpaGraph out{dnnl::graph::graph(kind), {}, {}, 0};
    for (const GraphOp& gop : desc.ops) {
        op o(gop.id, to_kind(gop.kind), gop.name);
        for (const auto& [name, v] : gop.attrs) set_attr(o, name, v);
        for (const auto& t : gop.inputs) o.add_input(to_lt(t));
        for (const auto& t : gop.outputs) o.add_output(to_lt(t));
        out.graph.add_op(o);
        ++out.op_count;
    }
    for (const auto& [port, t] : desc.inputs) out.inputs[port] = {to_lt(t), t.dims};
    for (const auto& [port, t] : desc.outputs) out.outputs[port] = {to_lt(t), t.dims};
    return out;
}

}  // namespace sdpa::onednn
