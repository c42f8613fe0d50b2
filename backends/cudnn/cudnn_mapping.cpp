#include "backends/cudnn/cudnn_mapping.hpp"

#include <stdexcept>

namespace sdpa::cudnn {

namespace {

TensorType io_type(DType dt) {
    switch (dt) {
        case DType::bf16: return TensorType::bf16;
        case DType::f16: return TensorType::f16;
        default: return TensorType::f32;
    }
}

TensorDesc strided(Uid uid, std::string name, std::array<std::int64_t, 4> dims, Layout layout, TensorType t) {
    return TensorDesc{uid, std::move(name), dims, layout_strides(dims, layout), t};
}

}  // namespace

std::int64_t TensorDesc::span() const {
    std::int64_t last = 0;
    for (std::size_t k = 0; k < 4; ++k) last += (dims[k] - 1) * strides[k];
    return last + 1;
}

const TensorDesc* GraphDesc::find(Uid uid) const {
    for (const auto* list : {&inputs, &outputs})
        for (const auto& t : *list)
            if (t.uid == uid) return &t;
    return nullptr;
}

std::array<std::int64_t, 4> layout_strides(const std::array<std::int64_t, 4>& d, Layout layout) {
    if (layout == Layout::bshd) return {d[2] * d[1] * d[3], d[3], d[1] * d[3], 1};
    return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

GraphDesc describe_graph(const Problem& p) {
    if (p.dir == Dir::fwd_bwd) throw std::invalid_argument("describe_graph: fwd_bwd is chained by the driver");
    const Dims& d = p.dims;
    const TensorType io = io_type(p.dt);
    const Layout L = p.layout;
    GraphDesc g;
    g.backward = p.dir == Dir::bwd;
    g.generate_stats = p.dir == Dir::fwd_t;
    const float v = scale_tensor_value(p);
    g.attn_scale = p.scale_op == ScaleOp::mul ? v : 1.f / v;

    const std::array<std::int64_t, 4> q{d.B, d.H_q, d.S_q, d.D_qk}, k{d.B, d.H_kv, d.S_kv, d.D_qk},
            vv{d.B, d.H_kv, d.S_kv, d.D_v}, o{d.B, d.H_q, d.S_q, d.D_v}, st{d.B, d.H_q, d.S_q, 1};
    g.inputs.push_back(strided(Uid::Q, "Q", q, L, io));
    g.inputs.push_back(strided(Uid::K, "K", k, L, io));
    g.inputs.push_back(strided(Uid::V, "V", vv, L, io));
    if (p.mask == Mask::bias) {
        const std::array<std::int64_t, 4> bd{p.bias_shape == BiasShape::one ? 1 : d.B,
            p.bias_shape == BiasShape::bh ? d.H_q : 1, d.S_q, d.S_kv};
        g.inputs.push_back(strided(Uid::bias, "bias", bd, Layout::bhsd, io_type(mask_dtype(p))));
    }
    g.padding = !p.seq_len_q.empty() || !p.seq_len_kv.empty();
    if (g.padding) {
        for (std::int64_t b = 0; b < d.B; ++b) {
            g.seq_len_q.push_back(static_cast<std::int32_t>(valid_q(p, b)));
            g.seq_len_kv.push_back(static_cast<std::int32_t>(valid_kv(p, b)));
        }
        const std::array<std::int64_t, 4> sd{d.B, 1, 1, 1};
        g.inputs.push_back(strided(Uid::seq_len_q, "seq_len_q", sd, Layout::bhsd, TensorType::i32));
        g.inputs.push_back(strided(Uid::seq_len_kv, "seq_len_kv", sd, Layout::bhsd, TensorType::i32));
    }
    // Stats are [B,H_q,S_q,1] f32, dense bhsd in every layout (as cuDNN's samples use them).
    const TensorDesc stats = strided(Uid::stats, "stats", st, Layout::bhsd, TensorType::f32);
    if (g.backward) {
        g.inputs.push_back(strided(Uid::O, "O", o, L, io));
        g.inputs.push_back(strided(Uid::dO, "dO", o, L, io));
        g.inputs.push_back(stats);
        g.outputs.push_back(strided(Uid::dQ, "dQ", q, L, io));
        g.outputs.push_back(strided(Uid::dK, "dK", k, L, io));
        g.outputs.push_back(strided(Uid::dV, "dV", vv, L, io));
        g.deterministic = p.deterministic;
    } else {
        g.outputs.push_back(strided(Uid::O, "O", o, L, io));
        if (g.generate_stats) g.outputs.push_back(stats);
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
