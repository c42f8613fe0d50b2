#include "backends/onednn/onednn_graph.hpp"

#include <string_view>

namespace sdpa::onednn {

namespace {

using dnnl::graph::logical_tensor;
using dnnl::graph::op;
using dims_t = std::vector<std::int64_t>;
using ldt = logical_tensor::data_type;

ldt to_ldt(DType dt) {
    switch (dt) {
        case DType::f32: return ldt::f32;
        case DType::bf16: return ldt::bf16;
        case DType::f16: return ldt::f16;
    }
    return ldt::f32;
}

/// Shapes of one problem in the graph's rank: 4-D for MHA, 5-D [B,H_kv,G,...] for GQA/MQA.
struct Shapes {
    bool gqa = false;
    dims_t q, k, v, o, stats, score, dk_full, dv_full;

    Shapes(const Dims& d) : gqa(d.H_kv != d.H_q) {
        const std::int64_t G = d.H_q / d.H_kv;
        // [B, heads, s, last] or [B, H_kv, G|1, s, last]; kv tensors have one head per group.
        auto mk = [&](std::int64_t s, std::int64_t last, bool kv) {
            if (!gqa) return dims_t{d.B, kv ? d.H_kv : d.H_q, s, last};
            return dims_t{d.B, d.H_kv, kv ? 1 : G, s, last};
        };
        q = mk(d.S_q, d.D_qk, false);
        k = mk(d.S_kv, d.D_qk, true);
        v = mk(d.S_kv, d.D_v, true);
        o = mk(d.S_q, d.D_v, false);
        stats = mk(d.S_q, 1, false);
        score = mk(d.S_q, d.S_kv, false);
        dk_full = mk(d.S_kv, d.D_qk, false);  // per query head, before the group ReduceSum
        dv_full = mk(d.S_kv, d.D_v, false);
    }
};

/// Assigns ids and collects ops; every logical tensor is strided with known dims.
class Builder {
public:
    explicit Builder(dnnl::engine::kind kind) : g_(kind) {}

    logical_tensor lt(ldt dt, const dims_t& dims) {
        return logical_tensor(next_++, dt, dims, logical_tensor::layout_type::strided);
    }
    logical_tensor add(op::kind kind, std::string_view name, const std::vector<logical_tensor>& ins,
            const std::vector<logical_tensor>& outs,
            const std::vector<std::pair<op::attr, bool>>& bool_attrs = {}) {
        op o(next_++, kind, std::string(name));
        for (const auto& [a, v] : bool_attrs) o.set_attr<bool>(a, v);
        finish(o, ins, outs);
        return outs.front();
    }
    void finish(op& o, const std::vector<logical_tensor>& ins, const std::vector<logical_tensor>& outs) {
        o.add_inputs(ins);
        o.add_outputs(outs);
        g_.add_op(o);
        ++ops_;
    }
    op make(op::kind kind, std::string_view name) { return op(next_++, kind, std::string(name)); }
    dnnl::graph::graph& graph() { return g_; }
    int ops() const { return ops_; }

private:
    dnnl::graph::graph g_;
    std::size_t next_ = 1;
    int ops_ = 0;
};

/// scores = mask + scale_op(Q K^T, scale), all f32. Shared by forward and backward.
logical_tensor masked_scores(Builder& b, const Problem& p, const Shapes& s, const logical_tensor& q,
        const logical_tensor& k, const logical_tensor& scale, const logical_tensor* mask) {
    auto score = b.add(op::kind::MatMul, "bmm_qk", {q, k}, {b.lt(ldt::f32, s.score)},
            {{op::attr::transpose_b, true}});
    const auto scale_kind = p.scale_op == ScaleOp::mul ? op::kind::Multiply : op::kind::Divide;
    auto scaled = b.add(scale_kind, "scale", {score, scale}, {b.lt(ldt::f32, s.score)});
    if (!mask) return scaled;
    return b.add(op::kind::Add, "mask_add", {scaled, *mask}, {b.lt(ldt::f32, s.score)});
}

}  // namespace

bool has_mask_tensor(const Problem& p) {
    return p.mask != Mask::none || !p.seq_len_q.empty() || !p.seq_len_kv.empty();
}

std::vector<std::int64_t> mask_dims(const Problem& p) {
    const Dims& d = p.dims;
    if (!has_mask_tensor(p)) return {};
    const bool gqa = d.H_kv != d.H_q;
    std::int64_t mb = 1, mh = 1;
    if (p.mask == Mask::bias) {
        mb = p.bias_shape == BiasShape::one ? 1 : d.B;
        mh = p.bias_shape == BiasShape::bh ? d.H_q : 1;
    }
    if (!p.seq_len_q.empty() || !p.seq_len_kv.empty()) mb = d.B;
    if (!gqa) return {mb, mh, d.S_q, d.S_kv};
    if (mh == 1) return {mb, 1, 1, d.S_q, d.S_kv};
    return {mb, d.H_kv, d.H_q / d.H_kv, d.S_q, d.S_kv};
}

SdpaGraph build_sdpa_graph(const Problem& p, dnnl::engine::kind kind) {
    const Shapes s(p.dims);
    const ldt io = to_ldt(p.dt);
    Builder b(kind);
    SdpaGraph out{dnnl::graph::graph(kind), {}, {}, 0};

    auto input = [&](Port port, ldt dt, const dims_t& dims) {
        auto t = b.lt(dt, dims);
        out.inputs[port] = {t, dims};
        return t;
    };
    auto q = input(Port::Q, io, s.q);
    auto k = input(Port::K, io, s.k);
    auto v = input(Port::V, io, s.v);
    auto scale = input(Port::scale, io, {1});
    logical_tensor mask;
    if (has_mask_tensor(p)) mask = input(Port::mask, to_ldt(mask_dtype(p)), mask_dims(p));
    const logical_tensor* mask_ptr = has_mask_tensor(p) ? &mask : nullptr;
    auto scores = masked_scores(b, p, s, q, k, scale, mask_ptr);

    if (p.dir != Dir::bwd) {
        auto probs = b.lt(io, s.score);
        op softmax = b.make(op::kind::SoftMax, "softmax");
        softmax.set_attr<std::int64_t>(op::attr::axis, -1);
        softmax.set_attr<std::string>(op::attr::mode, "inf_as_zero");
        std::vector<logical_tensor> sm_out{probs};
        if (p.dir == Dir::fwd_t) {
            auto stats = b.lt(ldt::f32, s.stats);
            sm_out.push_back(stats);
            out.outputs[Port::stats] = {stats, s.stats};
        }
        b.finish(softmax, {scores}, sm_out);
        auto o = b.add(op::kind::MatMul, "bmm_pv", {probs, v}, {b.lt(io, s.o)});
        out.outputs[Port::O] = {o, s.o};
    } else {
        auto o = input(Port::O, io, s.o);
        auto d_o = input(Port::dO, io, s.o);
        auto stats = input(Port::stats, ldt::f32, s.stats);
        const int last = s.gqa ? 4 : 3;

        // P = exp(scores - stats), recomputed from the forward's stats.
        auto shifted = b.add(op::kind::Subtract, "sub_stats", {scores, stats}, {b.lt(ldt::f32, s.score)});
        auto probs = b.add(op::kind::Exp, "exp", {shifted}, {b.lt(ldt::f32, s.score)});
        auto probs_io = probs;
        if (io != ldt::f32) probs_io = b.add(op::kind::TypeCast, "cast_p", {probs}, {b.lt(io, s.score)});

        // dV = P^T dO (summed over the group for GQA).
        auto dv = b.add(op::kind::MatMul, "bmm_dv", {probs_io, d_o}, {b.lt(io, s.dv_full)},
                {{op::attr::transpose_a, true}});
        // dP = dO V^T; D = rowsum(O * dO); dS = P * (dP - D).
        auto dp = b.add(op::kind::MatMul, "bmm_dp", {d_o, v}, {b.lt(ldt::f32, s.score)},
                {{op::attr::transpose_b, true}});
        auto o_do = b.add(op::kind::Multiply, "mul_o_do", {o, d_o}, {b.lt(ldt::f32, s.o)});
        op rowsum = b.make(op::kind::ReduceSum, "rowsum_o_do");
        rowsum.set_attr<std::vector<std::int64_t>>(op::attr::axes, {last});
        rowsum.set_attr<bool>(op::attr::keep_dims, true);
        auto dsum = b.lt(ldt::f32, s.stats);
        b.finish(rowsum, {o_do}, {dsum});
        auto dp_c = b.add(op::kind::Subtract, "sub_dp_d", {dp, dsum}, {b.lt(ldt::f32, s.score)});
        auto ds = b.add(op::kind::Multiply, "mul_p_dpd", {probs, dp_c}, {b.lt(ldt::f32, s.score)});
        const auto scale_kind = p.scale_op == ScaleOp::mul ? op::kind::Multiply : op::kind::Divide;
        auto ds_scaled = b.add(scale_kind, "scale_ds", {ds, scale}, {b.lt(ldt::f32, s.score)});
        auto ds_io = ds_scaled;
        if (io != ldt::f32) ds_io = b.add(op::kind::TypeCast, "cast_ds", {ds_scaled}, {b.lt(io, s.score)});
        // dQ = dS K; dK = dS^T Q (summed over the group for GQA).
        auto dq = b.add(op::kind::MatMul, "bmm_dq", {ds_io, k}, {b.lt(io, s.q)});
        auto dk = b.add(op::kind::MatMul, "bmm_dk", {ds_io, q}, {b.lt(io, s.dk_full)},
                {{op::attr::transpose_a, true}});
        if (s.gqa) {
            auto reduce = [&](const logical_tensor& x, const dims_t& dims, std::string_view name) {
                op r = b.make(op::kind::ReduceSum, name);
                r.set_attr<std::vector<std::int64_t>>(op::attr::axes, {2});
                r.set_attr<bool>(op::attr::keep_dims, true);
                auto y = b.lt(io, dims);
                b.finish(r, {x}, {y});
                return y;
            };
            dk = reduce(dk, s.k, "reduce_dk");
            dv = reduce(dv, s.v, "reduce_dv");
        }
        out.outputs[Port::dQ] = {dq, s.q};
        out.outputs[Port::dK] = {dk, s.k};
        out.outputs[Port::dV] = {dv, s.v};
    }
    out.op_count = b.ops();
    out.graph = std::move(b.graph());
    return out;
}

}  // namespace sdpa::onednn
