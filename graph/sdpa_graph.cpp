#include "graph/sdpa_graph.hpp"

#include <stdexcept>

namespace sdpa {

namespace {

using dims_t = std::vector<std::int64_t>;

/// Hands out ids (one counter for tensors and ops, as oneDNN's examples do) and collects ops.
class Builder {
public:
    /// A dense intermediate.
    GraphTensor tensor(ElemType dt, const dims_t& dims) { return GraphTensor{next_++, dt, dims, dense_strides(dims)}; }
    /// A port with the strides of its geometry view.
    GraphTensor tensor(ElemType dt, const GraphView& v) { return GraphTensor{next_++, dt, v.dims, v.strides}; }
    /// A rank-0 host scalar.
    GraphTensor scalar(ElemType dt) { return GraphTensor{next_++, dt, {}, {}, true}; }
    GraphOp& add(std::string kind, std::string name, std::vector<GraphTensor> ins, std::vector<GraphTensor> outs,
            std::vector<std::pair<std::string, GraphAttr>> attrs = {}) {
        ops_.push_back(GraphOp{next_++, std::move(kind), std::move(name), std::move(attrs), std::move(ins), std::move(outs)});
        return ops_.back();
    }
    /// Adds an op with one output and returns that output.
    GraphTensor op1(std::string kind, std::string name, std::vector<GraphTensor> ins, GraphTensor out,
            std::vector<std::pair<std::string, GraphAttr>> attrs = {}) {
        add(std::move(kind), std::move(name), std::move(ins), {out}, std::move(attrs));
        return out;
    }
    std::vector<GraphOp> take() { return std::move(ops_); }

private:
    std::vector<GraphOp> ops_;
    std::size_t next_ = 1;
};

const char* scale_kind(const Problem& p) { return p.scale_op == ScaleOp::mul ? "Multiply" : "Divide"; }

bool gqa(const Problem& p) { return p.dims.H_kv != p.dims.H_q; }

}  // namespace

std::optional<Role> port_role(const Problem& p, GraphPort port) {
    switch (port) {
        case GraphPort::Q: return Role::Q;
        case GraphPort::K: return Role::K;
        case GraphPort::V: return Role::V;
        case GraphPort::O: return Role::O;
        case GraphPort::dO: return Role::dO;
        case GraphPort::stats: return Role::stats;
        case GraphPort::dQ: return Role::dQ;
        case GraphPort::dK: return Role::dK;
        case GraphPort::dV: return Role::dV;
        case GraphPort::dMask: return Role::dMask;
        case GraphPort::mask: return graph_mask_is_bias(p) ? std::optional<Role>(Role::bias) : std::nullopt;
        case GraphPort::scale:
        case GraphPort::dropout_seed:
        case GraphPort::dropout_offset:
        case GraphPort::dropout_p:
        case GraphPort::mask_fill:
        case GraphPort::causal_s_kv:
        case GraphPort::causal_s_q: return std::nullopt;
    }
    return std::nullopt;
}

GraphView graph_view(const Problem& p, const TensorGeom& t) {
    const auto& n = t.dims;
    const auto& s = t.strides;
    if (!gqa(p)) return {{n[0], n[1], n[2], n[3]}, {s[0], s[1], s[2], s[3]}};
    const std::int64_t G = p.dims.H_q / p.dims.H_kv;
    if (n[1] == p.dims.H_q) return {{n[0], p.dims.H_kv, G, n[2], n[3]}, {s[0], saturating_mul(G, s[1]), s[1], s[2], s[3]}};
    return {{n[0], n[1], 1, n[2], n[3]}, {s[0], s[1], s[1], s[2], s[3]}};
}

bool graph_has_mask(const Problem& p) { return !p.implicit_mask && !merged_mask_dims(p).empty(); }

bool graph_mask_is_bias(const Problem& p) {
    return p.mask == Mask::bias && p.seq_len_q.empty() && p.seq_len_kv.empty();
}

GraphView graph_mask_view(const Problem& p) {
    if (!graph_has_mask(p)) return {};
    if (graph_mask_is_bias(p)) return graph_view(p, geometry(p).at(Role::bias));
    const dims_t m = merged_mask_dims(p);
    TensorGeom t;
    t.dims = {m[0], m[1], m[2], m[3]};
    const dims_t st = dense_strides(m);
    t.strides = {st[0], st[1], st[2], st[3]};
    return graph_view(p, t);
}

namespace {

/// One describe_sdpa_graph in steps: the problem, its geometry, the graph so far and the tensors
/// the steps share. The steps run in the graph's order (inputs, scores, then forward or backward):
/// ids count up as tensors and ops are made.
struct GraphSteps {
    static constexpr ElemType f32 = ElemType::f32;
    const Problem& p;
    const Geometry geo;
    const ElemType io;
    const GraphView score;  ///< the scores' view: the dims of every score-shaped intermediate
    Builder b;
    SdpaGraphDesc g;
    GraphTensor q, k, v, scale, mask;
    std::vector<GraphTensor> drop_args;  ///< the Dropout ops' seed, offset and probability

    explicit GraphSteps(const Problem& prb)
        : p(prb), geo(geometry(prb)), io(elem_type(prb.dt)), score(graph_view(prb, geo.at(Role::scores))) {}

    /// A port's tensor: the view of its geometry role.
    GraphTensor port(Role r) {
        const TensorGeom& t = geo.at(r);
        return b.tensor(t.type, graph_view(p, t));
    }
    /// Records `t` as the graph's input `pt` and returns it.
    GraphTensor input(GraphPort pt, GraphTensor t) {
        g.inputs[pt] = t;
        return t;
    }
    /// Dropout: Z o x / (1-p) on a score-shaped f32 tensor x (x itself without dropout).
    GraphTensor dropout(const GraphTensor& x, const char* name) {
        if (!p.dropout) return x;
        std::vector<GraphTensor> ins{x};
        ins.insert(ins.end(), drop_args.begin(), drop_args.end());
        return b.op1("Dropout", name, ins, b.tensor(f32, score.dims));
    }

    /// The inputs both directions take: Q, K, V, scale, the mask and the dropout scalars.
    void inputs() {
        q = input(GraphPort::Q, port(Role::Q));
        k = input(GraphPort::K, port(Role::K));
        v = input(GraphPort::V, port(Role::V));
        scale = input(GraphPort::scale, p.scale_host_scalar ? b.scalar(elem_type(scale_dtype(p)))
                                                            : b.tensor(elem_type(scale_dtype(p)), dims_t{1}));
        if (graph_has_mask(p)) mask = input(GraphPort::mask, b.tensor(elem_type(mask_dtype(p)), graph_mask_view(p)));
        // The three scalars shared by every Dropout op.
        if (p.dropout) {
            auto scalar = [&](ElemType dt) { return p.dropout_device_scalars ? b.tensor(dt, dims_t{1}) : b.scalar(dt); };
            drop_args = {input(GraphPort::dropout_seed, scalar(ElemType::s64)),
                input(GraphPort::dropout_offset, scalar(ElemType::s64)), input(GraphPort::dropout_p, scalar(f32))};
        }
    }

    /// scores = mask + scale_op(Q K^T, scale), all f32; then the implicit causal mask, if any.
    GraphTensor add_scores() {
        GraphTensor scores = b.op1("MatMul", "bmm_qk", {q, k}, b.tensor(f32, score.dims), {{"transpose_b", true}});
        scores = b.op1(scale_kind(p), "scale", {scores, scale}, b.tensor(f32, score.dims));
        if (graph_has_mask(p)) scores = b.op1("Add", "mask_add", {scores, mask}, b.tensor(f32, score.dims));
        return p.implicit_mask ? implicit_mask(scores) : scores;
    }

    /// keep = row (+ S_kv - S_q for causal_br) >= column; scores = keep ? scores : -inf.
    GraphTensor implicit_mask(const GraphTensor& scores) {
        const ElemType s32 = ElemType::s32;
        GraphTensor row = b.op1("GenIndex", "causal_row", {scores}, b.tensor(s32, score.dims),
                {{"axis", std::int64_t{-2}}});
        if (p.mask == Mask::causal_br) {
            row = b.op1("Add", "causal_add_s_kv", {row, input(GraphPort::causal_s_kv, b.scalar(s32))},
                    b.tensor(s32, score.dims));
            row = b.op1("Subtract", "causal_sub_s_q", {row, input(GraphPort::causal_s_q, b.scalar(s32))},
                    b.tensor(s32, score.dims));
        }
        const GraphTensor col = b.op1("GenIndex", "causal_col", {scores}, b.tensor(s32, score.dims),
                {{"axis", std::int64_t{-1}}});
        const GraphTensor keep = b.op1("GreaterEqual", "causal_keep", {row, col}, b.tensor(ElemType::boolean, score.dims));
        const GraphTensor fill = input(GraphPort::mask_fill, p.scale_host_scalar ? b.scalar(f32) : b.tensor(f32, dims_t{1}));
        return b.op1("Select", "causal_select", {keep, scores, fill}, b.tensor(f32, score.dims));
    }

    /// O (and stats for fwd_t). With dropout the SoftMax writes f32 P; Dropout, then TypeCast to
    /// the io dtype.
    void forward(const GraphTensor& scores) {
        const GraphTensor probs = b.tensor(p.dropout ? f32 : io, score.dims);
        std::vector<GraphTensor> sm_out{probs};
        if (p.dir == Dir::fwd_t) {
            const GraphTensor stats = port(Role::stats);
            sm_out.push_back(stats);
            g.outputs[GraphPort::stats] = stats;
        }
        b.add("SoftMax", "softmax", {scores}, sm_out, {{"axis", std::int64_t{-1}}, {"mode", std::string("inf_as_zero")}});
        GraphTensor pv_in = probs;
        if (p.dropout) {
            pv_in = dropout(probs, "dropout");
            if (io != f32) pv_in = b.op1("TypeCast", "cast_p", {pv_in}, b.tensor(io, score.dims));
        }
        g.outputs[GraphPort::O] = b.op1("MatMul", "bmm_pv", {pv_in, v}, port(Role::O));
    }

    /// dQ, dK, dV (and dMask) from O, dO and stats.
    void backward(const GraphTensor& scores) {
        const GraphTensor o = input(GraphPort::O, port(Role::O));
        const GraphTensor d_o = input(GraphPort::dO, port(Role::dO));
        const GraphTensor stats = input(GraphPort::stats, port(Role::stats));
        // dK, dV per query head (before the group ReduceSum): K's and V's dims with Q's heads.
        dims_t dk_full = k.dims, dv_full = v.dims;
        if (gqa(p)) dk_full[2] = dv_full[2] = q.dims[2];

        // P = exp(scores - stats), recomputed from the forward's stats.
        const GraphTensor shifted = b.op1("Subtract", "sub_stats", {scores, stats}, b.tensor(f32, score.dims));
        const GraphTensor probs = b.op1("Exp", "exp", {shifted}, b.tensor(f32, score.dims));
        GraphTensor probs_io = dropout(probs, "dropout_p");
        if (io != f32) probs_io = b.op1("TypeCast", "cast_p", {probs_io}, b.tensor(io, score.dims));

        // dV = P^T dO (P_d^T dO with dropout; summed over the group for GQA).
        GraphTensor dv = b.op1("MatMul", "bmm_dv", {probs_io, d_o}, gqa(p) ? b.tensor(io, dv_full) : port(Role::dV),
                {{"transpose_a", true}});
        const GraphTensor ds = grad_scores(probs, o, d_o);
        if (p.dmask) dmask(ds);
        const GraphTensor ds_scaled = b.op1(scale_kind(p), "scale_ds", {ds, scale}, b.tensor(f32, score.dims));
        GraphTensor ds_io = ds_scaled;
        if (io != f32) ds_io = b.op1("TypeCast", "cast_ds", {ds_scaled}, b.tensor(io, score.dims));
        // dQ = dS K; dK = dS^T Q (summed over the group for GQA).
        const GraphTensor dq = b.op1("MatMul", "bmm_dq", {ds_io, k}, port(Role::dQ));
        GraphTensor dk = b.op1("MatMul", "bmm_dk", {ds_io, q}, gqa(p) ? b.tensor(io, dk_full) : port(Role::dK),
                {{"transpose_a", true}});
        if (gqa(p)) {
            auto reduce = [&](const GraphTensor& x, Role r, const char* name) {
                return b.op1("ReduceSum", name, {x}, port(r), {{"axes", std::vector<std::int64_t>{2}}, {"keep_dims", true}});
            };
            dk = reduce(dk, Role::dK, "reduce_dk");
            dv = reduce(dv, Role::dV, "reduce_dv");
        }
        g.outputs[GraphPort::dQ] = dq;
        g.outputs[GraphPort::dK] = dk;
        g.outputs[GraphPort::dV] = dv;
    }

    /// dS = P * (dP - D): dP = dO V^T (Z o dP / (1-p) with dropout), D = rowsum(O * dO).
    GraphTensor grad_scores(const GraphTensor& probs, const GraphTensor& o, const GraphTensor& d_o) {
        const auto last = static_cast<std::int64_t>(score.dims.size()) - 1;
        // The per-row vector D = rowsum(O * dO) has the shape of stats; O * dO that of O.
        dims_t row = score.dims, o_dims = o.dims;
        row.back() = 1;
        const GraphTensor dp = dropout(
                b.op1("MatMul", "bmm_dp", {d_o, v}, b.tensor(f32, score.dims), {{"transpose_b", true}}), "dropout_dp");
        const GraphTensor o_do = b.op1("Multiply", "mul_o_do", {o, d_o}, b.tensor(f32, o_dims));
        const GraphTensor dsum = b.op1("ReduceSum", "rowsum_o_do", {o_do}, b.tensor(f32, row),
                {{"axes", std::vector<std::int64_t>{last}}, {"keep_dims", true}});
        const GraphTensor dp_c = b.op1("Subtract", "sub_dp_d", {dp, dsum}, b.tensor(f32, score.dims));
        return b.op1("Multiply", "mul_p_dpd", {probs, dp_c}, b.tensor(f32, score.dims));
    }

    /// dMask = dS summed over the bias's broadcast axes (End on dS when there are none).
    void dmask(const GraphTensor& ds) {
        const GraphView mv = graph_view(p, geo.at(Role::dMask));
        std::vector<std::int64_t> axes;
        for (std::size_t a = 0; a < mv.dims.size(); ++a)
            if (mv.dims[a] == 1 && score.dims[a] != 1) axes.push_back(static_cast<std::int64_t>(a));
        if (axes.empty()) {
            b.add("End", "end_dmask", {ds}, {});
            g.outputs[GraphPort::dMask] = ds;
        } else {
            g.outputs[GraphPort::dMask] = b.op1("ReduceSum", "reduce_dmask", {ds}, port(Role::dMask),
                    {{"axes", axes}, {"keep_dims", true}});
        }
    }
};

}  // namespace

SdpaGraphDesc describe_sdpa_graph(const Problem& p) {
    // What a oneDNN graph cannot say: fp8 with per-tensor descales and amax outputs, ragged tensors.
    if (is_fp8(p.dt))
        throw std::invalid_argument(fmt::format("the oneDNN graph has no fp8 SDPA with per-tensor descales and amax "
                "outputs (--dt={})", p.dt));
    if (p.ragged)
        throw std::invalid_argument("a oneDNN graph's logical tensors have one stride per dimension: no ragged (THD) "
                "tensors (--ragged=true)");
    GraphSteps s(p);
    s.inputs();
    const GraphTensor scores = s.add_scores();
    if (p.dir != Dir::bwd)
        s.forward(scores);
    else
        s.backward(scores);
    s.g.ops = s.b.take();
    return s.g;
}

}  // namespace sdpa
