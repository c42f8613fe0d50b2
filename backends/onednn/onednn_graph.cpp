#include "backends/onednn/onednn_graph.hpp"

#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace sdpa::onednn {

namespace {

using dnnl::graph::logical_tensor;
using dnnl::graph::op;
using ldt = logical_tensor::data_type;

ldt to_ldt(ElemType dt) {
    switch (dt) {
        case ElemType::f32: return ldt::f32;
        case ElemType::bf16: return ldt::bf16;
        case ElemType::f16: return ldt::f16;
        case ElemType::s32: return ldt::s32;
        case ElemType::u8: return ldt::u8;
        case ElemType::s64: return ldt::s64;
        case ElemType::boolean: return ldt::boolean;
        case ElemType::e4m3: return ldt::f8_e4m3;  // never an SDPA io type here: the backend refuses fp8
        case ElemType::e5m2: return ldt::f8_e5m2;
    }
    return ldt::f32;
}

/// A strided logical tensor with the description's dims and strides (the geometry's for ports);
/// a rank-0 host scalar for the scalars the description marks host_scalar.
logical_tensor to_lt(const GraphTensor& t) {
    if (t.host_scalar)
        return logical_tensor(t.id, to_ldt(t.dt), std::vector<std::int64_t>{}, logical_tensor::layout_type::strided,
                logical_tensor::property_type::host_scalar);
    return logical_tensor(t.id, to_ldt(t.dt), t.dims, t.strides);
}

/// The op kinds describe_sdpa_graph() uses.
op::kind to_kind(std::string_view k) {
    static const std::pair<std::string_view, op::kind> table[] = {{"MatMul", op::kind::MatMul},
        {"Multiply", op::kind::Multiply}, {"Divide", op::kind::Divide}, {"Add", op::kind::Add},
        {"Subtract", op::kind::Subtract}, {"SoftMax", op::kind::SoftMax}, {"Exp", op::kind::Exp},
        {"TypeCast", op::kind::TypeCast}, {"ReduceSum", op::kind::ReduceSum}, {"Dropout", op::kind::Dropout},
        {"GenIndex", op::kind::GenIndex}, {"GreaterEqual", op::kind::GreaterEqual}, {"Select", op::kind::Select},
        {"End", op::kind::End}};
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
