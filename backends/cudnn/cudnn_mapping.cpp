#include "backends/cudnn/cudnn_mapping.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace sdpa::cudnn {

const TensorDesc* GraphDesc::find(Uid uid) const {
    for (const auto* list : {&inputs, &outputs})
        for (const auto& t : *list)
            if (t.uid == uid) return &t;
    return nullptr;
}

GraphDesc describe_graph(const Problem& p) {
    if (p.dir == Dir::fwd_bwd) throw std::invalid_argument("describe_graph: fwd_bwd is chained by the driver");
    const Dims& d = p.dims;
    const Geometry geo = geometry(p);
    GraphDesc g;
    g.backward = p.dir == Dir::bwd;
    g.generate_stats = p.dir == Dir::fwd_t;
    const float v = scale_tensor_value(p);
    g.attn_scale = p.scale_op == ScaleOp::mul ? v : 1.f / v;
    auto tensor = [&](Uid uid, Role r) { return TensorDesc{uid, fmt::format("{}", r), geo.at(r)}; };
    g.inputs.push_back(tensor(Uid::Q, Role::Q));
    g.inputs.push_back(tensor(Uid::K, Role::K));
    g.inputs.push_back(tensor(Uid::V, Role::V));
    if (geo.has(Role::bias)) g.inputs.push_back(tensor(Uid::bias, Role::bias));
    g.padding = geo.has(Role::seq_len_q);
    if (g.padding) {
        for (std::int64_t b = 0; b < d.B; ++b) {
            g.seq_len_q.push_back(static_cast<std::int32_t>(valid_q(p, b)));
            g.seq_len_kv.push_back(static_cast<std::int32_t>(valid_kv(p, b)));
        }
        g.inputs.push_back(tensor(Uid::seq_len_q, Role::seq_len_q));
        g.inputs.push_back(tensor(Uid::seq_len_kv, Role::seq_len_kv));
    }
    if (g.backward) {
        g.inputs.push_back(tensor(Uid::O, Role::O));
        g.inputs.push_back(tensor(Uid::dO, Role::dO));
        g.inputs.push_back(tensor(Uid::stats, Role::stats));
        g.outputs.push_back(tensor(Uid::dQ, Role::dQ));
        g.outputs.push_back(tensor(Uid::dK, Role::dK));
        g.outputs.push_back(tensor(Uid::dV, Role::dV));
        g.deterministic = p.deterministic;
    } else {
        g.outputs.push_back(tensor(Uid::O, Role::O));
        if (g.generate_stats) g.outputs.push_back(tensor(Uid::stats, Role::stats));
    }
    switch (p.mask) {
        case Mask::causal_tl:
            g.alignment = Alignment::top_left;
            g.right_bound = 0;
            break;
        case Mask::causal_br:
            g.alignment = Alignment::bottom_right;
            g.right_bound = 0;
            break;
        case Mask::window:
            g.alignment = Alignment::bottom_right;
            g.left_bound = p.window_left + 1;
            g.right_bound = p.window_right;
            break;
        default: break;
    }
    return g;
}

std::optional<std::string> cudnn_precheck(const Problem& p) {
    if (p.dt == DType::f32) return "cuDNN SDPA takes f16/bf16 io only (got --dt=f32)";
    return std::nullopt;
}

}  // namespace sdpa::cudnn
