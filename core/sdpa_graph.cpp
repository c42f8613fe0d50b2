#include "core/sdpa_graph.hpp"

namespace sdpa {

namespace {

using dims_t = std::vector<std::int64_t>;

/// Shapes of one problem in the graph's rank: 4-D for MHA, 5-D [B,H_kv,G,...] for GQA/MQA.
struct Shapes {
    bool gqa = false;
    dims_t q, k, v, o, stats, score, dk_full, dv_full;

    explicit Shapes(const Dims& d) : gqa(d.H_kv != d.H_q) {
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

/// Hands out ids (one counter for tensors and ops, as oneDNN's examples do) and collects ops.
class Builder {
public:
    GraphTensor tensor(DType dt, const dims_t& dims) { return GraphTensor{next_++, dt, dims, dense_strides(dims)}; }
    GraphOp& add(std::string kind, std::string name, std::vector<GraphTensor> ins, std::vector<GraphTensor> outs,
            std::vector<std::pair<std::string, GraphAttr>> attrs = {}) {
        ops_.push_back(GraphOp{next_++, std::move(kind), std::move(name), std::move(attrs), std::move(ins), std::move(outs)});
        return ops_.back();
    }
    /// Adds an op with one output of (dt, dims) and returns that output.
    GraphTensor op1(std::string kind, std::string name, std::vector<GraphTensor> ins, DType dt, const dims_t& dims,
            std::vector<std::pair<std::string, GraphAttr>> attrs = {}) {
        GraphTensor out = tensor(dt, dims);
        add(std::move(kind), std::move(name), std::move(ins), {out}, std::move(attrs));
        return out;
    }
    std::vector<GraphOp> take() { return std::move(ops_); }

private:
    std::vector<GraphOp> ops_;
    std::size_t next_ = 1;
};

const char* scale_kind(const Problem& p) { return p.scale_op == ScaleOp::mul ? "Multiply" : "Divide"; }

}  // namespace

std::vector<std::int64_t> dense_strides(const std::vector<std::int64_t>& dims) {
    std::vector<std::int64_t> s(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
    return s;
}

bool graph_has_mask(const Problem& p) {
    return p.mask != Mask::none || !p.seq_len_q.empty() || !p.seq_len_kv.empty();
}

std::vector<std::int64_t> graph_mask_dims(const Problem& p) {
    const Dims& d = p.dims;
    if (!graph_has_mask(p)) return {};
    const bool gqa = d.H_kv != d.H_q;
    std::array<std::int64_t, 4> b{1, 1, d.S_q, d.S_kv};
    if (p.mask == Mask::bias) b = bias_dims(p);
    if (!p.seq_len_q.empty() || !p.seq_len_kv.empty()) {
        b[0] = d.B;  // padding: per-batch -inf rows and columns
        b[2] = d.S_q;
    }
    if (!gqa) return {b[0], b[1], b[2], b[3]};
    if (b[1] == 1) return {b[0], 1, 1, b[2], b[3]};
    return {b[0], d.H_kv, d.H_q / d.H_kv, b[2], b[3]};
}

SdpaGraphDesc describe_sdpa_graph(const Problem& p) {
    const Shapes s(p.dims);
    const DType io = p.dt, f32 = DType::f32;
    Builder b;
    SdpaGraphDesc g;
    auto input = [&](GraphPort port, DType dt, const dims_t& dims) {
        GraphTensor t = b.tensor(dt, dims);
        g.inputs[port] = t;
        return t;
    };
    const GraphTensor q = input(GraphPort::Q, io, s.q);
    const GraphTensor k = input(GraphPort::K, io, s.k);
    const GraphTensor v = input(GraphPort::V, io, s.v);
    const GraphTensor scale = input(GraphPort::scale, scale_dtype(p), {1});
    GraphTensor mask;
    if (graph_has_mask(p)) mask = input(GraphPort::mask, mask_dtype(p), graph_mask_dims(p));

    // scores = mask + scale_op(Q K^T, scale), all f32.
    GraphTensor scores = b.op1("MatMul", "bmm_qk", {q, k}, f32, s.score, {{"transpose_b", true}});
    scores = b.op1(scale_kind(p), "scale", {scores, scale}, f32, s.score);
    if (graph_has_mask(p)) scores = b.op1("Add", "mask_add", {scores, mask}, f32, s.score);

    if (p.dir != Dir::bwd) {
        const GraphTensor probs = b.tensor(io, s.score);
        std::vector<GraphTensor> sm_out{probs};
        if (p.dir == Dir::fwd_t) {
            const GraphTensor stats = b.tensor(f32, s.stats);
            sm_out.push_back(stats);
            g.outputs[GraphPort::stats] = stats;
        }
        b.add("SoftMax", "softmax", {scores}, sm_out, {{"axis", std::int64_t{-1}}, {"mode", std::string("inf_as_zero")}});
        g.outputs[GraphPort::O] = b.op1("MatMul", "bmm_pv", {probs, v}, io, s.o);
    } else {
        const GraphTensor o = input(GraphPort::O, io, s.o);
        const GraphTensor d_o = input(GraphPort::dO, io, s.o);
        const GraphTensor stats = input(GraphPort::stats, f32, s.stats);
        const std::int64_t last = s.gqa ? 4 : 3;

        // P = exp(scores - stats), recomputed from the forward's stats.
        const GraphTensor shifted = b.op1("Subtract", "sub_stats", {scores, stats}, f32, s.score);
        const GraphTensor probs = b.op1("Exp", "exp", {shifted}, f32, s.score);
        GraphTensor probs_io = probs;
        if (io != f32) probs_io = b.op1("TypeCast", "cast_p", {probs}, io, s.score);

        // dV = P^T dO (summed over the group for GQA).
        GraphTensor dv = b.op1("MatMul", "bmm_dv", {probs_io, d_o}, io, s.dv_full, {{"transpose_a", true}});
        // dP = dO V^T; D = rowsum(O * dO); dS = P * (dP - D).
        const GraphTensor dp = b.op1("MatMul", "bmm_dp", {d_o, v}, f32, s.score, {{"transpose_b", true}});
        const GraphTensor o_do = b.op1("Multiply", "mul_o_do", {o, d_o}, f32, s.o);
        const GraphTensor dsum = b.op1("ReduceSum", "rowsum_o_do", {o_do}, f32, s.stats,
                {{"axes", std::vector<std::int64_t>{last}}, {"keep_dims", true}});
        const GraphTensor dp_c = b.op1("Subtract", "sub_dp_d", {dp, dsum}, f32, s.score);
        const GraphTensor ds = b.op1("Multiply", "mul_p_dpd", {probs, dp_c}, f32, s.score);
        const GraphTensor ds_scaled = b.op1(scale_kind(p), "scale_ds", {ds, scale}, f32, s.score);
        GraphTensor ds_io = ds_scaled;
        if (io != f32) ds_io = b.op1("TypeCast", "cast_ds", {ds_scaled}, io, s.score);
        // dQ = dS K; dK = dS^T Q (summed over the group for GQA).
        const GraphTensor dq = b.op1("MatMul", "bmm_dq", {ds_io, k}, io, s.q);
        GraphTensor dk = b.op1("MatMul", "bmm_dk", {ds_io, q}, io, s.dk_full, {{"transpose_a", true}});
        if (s.gqa) {
            auto reduce = [&](const GraphTensor& x, const dims_t& dims, const char* name) {
                return b.op1("ReduceSum", name, {x}, io, dims,
                        {{"axes", std::vector<std::int64_t>{2}}, {"keep_dims", true}});
            };
            dk = reduce(dk, s.k, "reduce_dk");
            dv = reduce(dv, s.v, "reduce_dv");
        }
        g.outputs[GraphPort::dQ] = dq;
        g.outputs[GraphPort::dK] = dk;
        g.outputs[GraphPort::dV] = dv;
    }
    g.ops = b.take();
    return g;
}

}  // namespace sdpa
