#include "graph/json_match.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/geometry.hpp"

namespace sdpa::graph_json {

namespace {

/// Attribute checks: every attribute of `op` must be one of `allowed`.
void allow_attrs(const RawOp& op, std::initializer_list<const char*> allowed) {
    for (const auto& [name, v] : op.attrs.items()) {
        bool ok = false;
        for (const char* a : allowed) ok = ok || name == a;
        if (!ok) unimplemented(fmt::format("{}: attribute '{}' is not supported", op.where(), name));
        if (!v.is_object() || !v.contains("value"))
            invalid(fmt::format("{}: attribute '{}' has no \"value\"", op.where(), name));
    }
}
const json* attr(const RawOp& op, const char* name) {
    if (!op.attrs.contains(name)) return nullptr;
    const json& a = op.attrs.at(name);
    if (!a.is_object() || !a.contains("value"))
        invalid(fmt::format("{}: attribute '{}' has no \"value\"", op.where(), name));
    return &a.at("value");
}
bool attr_bool(const RawOp& op, const char* name) {
    const json* v = attr(op, name);
    if (!v) return false;
    if (v->is_boolean()) return v->get<bool>();
    if (v->is_number_integer()) return v->get<std::int64_t>() != 0;
    invalid(fmt::format("{}: attribute '{}' is not a bool ({})", op.where(), name, v->dump()));
}
std::string attr_str(const RawOp& op, const char* name, const std::string& def) {
    const json* v = attr(op, name);
    if (!v) return def;
    if (!v->is_string()) invalid(fmt::format("{}: attribute '{}' is not a string ({})", op.where(), name, v->dump()));
    return v->get<std::string>();
}
/// Binary ops: only numpy broadcasting.
void check_binary(const RawOp& op) {
    allow_attrs(op, {"auto_broadcast"});
    if (const auto b = attr_str(op, "auto_broadcast", "numpy"); b != "numpy")
        unimplemented(fmt::format("{}: auto_broadcast={} is not supported (numpy only)", op.where(), b));
    if (op.ins.size() != 2 || op.outs.size() != 1)
        invalid(fmt::format("{}: needs 2 inputs and 1 output", op.where()));
}
/// MatMul with the expected transposes; accumulation_mode must be strict.
void check_matmul(const RawOp& op, bool ta, bool tb, std::string_view role) {
    if (op.kind != "MatMul") invalid(fmt::format("{}: expected the {} MatMul here", op.where(), role));
    allow_attrs(op, {"transpose_a", "transpose_b", "accumulation_mode"});
    if (op.ins.size() != 2 || op.outs.size() != 1) unimplemented(fmt::format("{}: a MatMul with bias or extra outputs is not supported", op.where()));
    if (attr_bool(op, "transpose_a") != ta || attr_bool(op, "transpose_b") != tb)
        unimplemented(fmt::format("{}: the {} MatMul needs transpose_a={} transpose_b={} (got {} {})", op.where(), role,
                ta ? 1 : 0, tb ? 1 : 0, attr_bool(op, "transpose_a") ? 1 : 0, attr_bool(op, "transpose_b") ? 1 : 0));
    if (const auto m = attr_str(op, "accumulation_mode", "strict"); m != "strict")
        unimplemented(fmt::format("{}: accumulation_mode={} is not supported (strict only)", op.where(), m));
}
/// ReduceSum over `axis` with keep_dims.
void check_reduce(const RawOp& op, std::int64_t axis, std::int64_t rank) {
    if (op.kind != "ReduceSum") invalid(fmt::format("{}: expected a ReduceSum here", op.where()));
    allow_attrs(op, {"axes", "keep_dims"});
    const json* axes = attr(op, "axes");
    dims_t a;
    if (axes && axes->is_array())
        for (const json& e : *axes) {
            if (!e.is_number_integer()) invalid(fmt::format("{}: axes must be integers ({})", op.where(), axes->dump()));
            a.push_back(e.get<std::int64_t>());
        }
    for (auto& x : a)
        if (x < 0) x += rank;
    if (a != dims_t{axis} || !attr_bool(op, "keep_dims"))
        unimplemented(fmt::format("{}: needs axes=[{}] and keep_dims=1", op.where(), axis));
}

/// The op that consumes t with kind in `kinds`, among t's consumers (nullptr if none).
const RawOp* consumer_of_kind(const Graph& g, const RawTensor& t, std::initializer_list<const char*> kinds) {
    for (const RawOp* c : g.consumers(t))
        for (const char* k : kinds)
            if (c->kind == k) return c;
    return nullptr;
}

/// `t`, or the output of the TypeCast that consumes it (marked used): P and dS as the MatMuls
/// after them read them.
const RawTensor* through_typecast(Graph& g, const RawTensor* t) {
    const RawOp* tc = consumer_of_kind(g, *t, {"TypeCast"});
    if (!tc) return t;
    allow_attrs(*tc, {});
    g.use(*tc);
    return &tc->outs[0];
}

/// The output of `op` (dK or dV per query head), or of the ReduceSum over the GQA group (axis
/// 2 of the 5-D form, keep_dims) that consumes it, marked used.
const RawTensor& through_group_reduce(Graph& g, const RawOp& op) {
    const auto c = g.consumers(op.outs[0]);
    if (c.size() != 1 || c[0]->kind != "ReduceSum") return op.outs[0];
    check_reduce(*c[0], 2, static_cast<std::int64_t>(c[0]->ins[0].shape.size()));
    g.use(*c[0]);
    return c[0]->outs[0];
}

/// The other input of a binary op (the one that is not tensor `id`).
const RawTensor& other_input(const RawOp& op, std::size_t id) { return op.ins[0].id == id ? op.ins[1] : op.ins[0]; }

/// The rule a misplaced Dropout breaks (graph/sdpa_graph.hpp describe_sdpa_graph places them).
constexpr const char* kDropoutPlaces =
        "sdpabench's SDPA graphs drop out only P (the SoftMax output in the forward, the Exp output before the dV "
        "MatMul in the backward) and dP (the dO*V^T MatMul output, before the subtraction of D)";

/// True when Dropout `op` is at a place describe_sdpa_graph() can give one: on the first output
/// of a SoftMax, on the output of an Exp, or on the output of a MatMul when the Dropout then
/// feeds exactly one Subtract or SoftMaxBackward (dP before D). The walk in match() checks that
/// these ops are the pattern's.
bool dropout_in_place(const Graph& g, const RawOp& op) {
    const RawOp* src = g.producer(op.ins[0]);
    if (!src) return false;
    if (src->kind == "SoftMax") return op.ins[0].id == src->outs[0].id;
    if (src->kind == "Exp") return true;
    if (src->kind != "MatMul") return false;
    const auto c = g.consumers(op.outs[0]);
    return c.size() == 1 && (c[0]->kind == "Subtract" || c[0]->kind == "SoftMaxBackward");
}

/// Fails UNIMPLEMENTED naming Dropout `op`, what it drops out, and kDropoutPlaces.
[[noreturn]] void misplaced_dropout(const Graph& g, const RawOp& op) {
    const RawOp* src = g.producer(op.ins[0]);
    const std::string on = src ? fmt::format("the output {} of {}", op.ins[0].id, src->where())
                               : fmt::format("graph input tensor {}", op.ins[0].id);
    unimplemented(fmt::format("{}: a Dropout on {} is not supported: {}", op.where(), on, kDropoutPlaces));
}

/// Takes Dropout `op` (inputs src, seed, offset, probability) at a place the walk matched: no
/// attributes, no mask output, seed, offset and probability graph inputs shared by every
/// Dropout of the graph (the first one taken sets m.in[GraphPort::dropout_*]; their dtypes and
/// shapes are checked against describe_sdpa_graph by the caller), an f32 output. Marks it used.
/// Fails UNIMPLEMENTED naming the op and the tensor.
void take_dropout(Graph& g, Match& m, const RawOp& op) {
    allow_attrs(op, {});
    if (op.outs.size() != 1)
        unimplemented(fmt::format("{}: the mask output (tensor {}) of Dropout is not supported", op.where(), op.outs[1].id));
    static constexpr std::pair<GraphPort, const char*> kScalars[] = {
        {GraphPort::dropout_seed, "seed"}, {GraphPort::dropout_offset, "offset"}, {GraphPort::dropout_p, "probability"}};
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& [port, what] = kScalars[i];
        const RawTensor& t = op.ins[i + 1];
        if (!g.is_input(t))
            unimplemented(fmt::format("{}: its {} (tensor {}) is computed inside the graph (a graph input is needed)",
                    op.where(), what, t.id));
        const auto [it, first] = m.in.emplace(port, t);
        if (!first && it->second.id != t.id)
            unimplemented(fmt::format("{}: its {} is tensor {}, another Dropout's is tensor {} (sdpabench's Dropout ops "
                                      "share one seed, offset and probability)", op.where(), what, t.id, it->second.id));
    }
    // One tensor in two roles would tie the seed to the offset (or the probability to either).
    for (std::size_t i = 1; i < 4; ++i)
        for (std::size_t j = i + 1; j < 4; ++j)
            if (op.ins[i].id == op.ins[j].id)
                invalid(fmt::format("{}: its {} and {} are the same tensor {} (three separate inputs are needed)",
                        op.where(), kScalars[i - 1].second, kScalars[j - 1].second, op.ins[i].id));
    m.f32_typed.emplace_back(&op, 0);
    g.use(op);
}

/// GenIndex `op` over axis `axis` (-1 columns, -2 rows, also spelled rank-1 / rank-2) of a
/// tensor of the scores' shape `shape`: true when it is one.
bool gen_index_on(const RawOp* op, const dims_t& shape, std::int64_t axis) {
    if (!op || op->kind != "GenIndex" || op->ins.size() != 1 || op->outs.size() != 1) return false;
    allow_attrs(*op, {"axis"});
    const json* a = attr(*op, "axis");
    if (!a || !a->is_number_integer()) invalid(fmt::format("{}: GenIndex needs an integer axis", op->where()));
    const auto rank = static_cast<std::int64_t>(shape.size());
    std::int64_t ax = a->get<std::int64_t>();
    if (ax < 0) ax += rank;
    return op->ins[0].shape == shape && ax == rank + axis;
}

/// The implicit causal mask on the scaled scores `scores` (oneDNN's pattern, see match()):
/// takes its ops and inputs into `m` (m.implicit_causal, GraphPort::mask_fill, causal_s_kv,
/// causal_s_q) and returns the Select's output, the masked scores. Fails UNIMPLEMENTED naming the
/// op for a Select or GenIndex form other than the causal one.
const RawTensor* take_implicit_causal(Graph& g, Match& m, const RawOp& sel, const RawTensor& scores) {
    allow_attrs(sel, {"auto_broadcast"});
    if (sel.ins.size() != 3 || sel.outs.size() != 1 || sel.ins[1].id != scores.id)
        unimplemented(fmt::format("{}: a Select on the scores must be Select(keep, scores, fill) (the implicit causal "
                                  "mask)", sel.where()));
    const RawOp* ge = g.producer(sel.ins[0]);
    if (!ge || ge->kind != "GreaterEqual" || ge->ins.size() != 2)
        unimplemented(fmt::format("{}: its condition (tensor {}) is not GreaterEqual(row index, column index): only the "
                                  "implicit causal mask is supported", sel.where(), sel.ins[0].id));
    check_binary(*ge);
    const RawTensor& fill = sel.ins[2];
    if (!g.is_input(fill)) unimplemented(fmt::format("{}: the fill value (tensor {}) is computed in the graph", sel.where(), fill.id));
    const dims_t& shape = scores.shape;
    const RawOp* col = g.producer(ge->ins[1]);
    if (!gen_index_on(col, shape, -1)) {
        if (gen_index_on(g.producer(ge->ins[0]), shape, -1))
            unimplemented(fmt::format("{}: compares column >= row, which keeps keys at and after each query (an upper "
                                      "triangle); causal masks keep row >= column", ge->where()));
        unimplemented(fmt::format("{}: its second input (tensor {}) is not GenIndex over the scores' last axis (the "
                                  "column index)", ge->where(), ge->ins[1].id));
    }
    const RawOp* row = g.producer(ge->ins[0]);
    std::vector<const RawOp*> used{&sel, ge, col};
    Mask kind = Mask::causal_tl;
    if (!gen_index_on(row, shape, -2)) {
        // causal_br: (row + S_kv) - S_q, both scalars graph inputs.
        const RawOp* sub = row;
        const RawOp* add = sub && sub->kind == "Subtract" && sub->ins.size() == 2 ? g.producer(sub->ins[0]) : nullptr;
        const RawOp* r = add && add->kind == "Add" && add->ins.size() == 2 ? g.producer(add->ins[0]) : nullptr;
        if (add && !gen_index_on(r, shape, -2)) r = g.producer(add->ins[1]);
        if (!gen_index_on(r, shape, -2))
            unimplemented(fmt::format("{}: its first input (tensor {}) is neither GenIndex over the scores' rows "
                                      "(causal_tl) nor (that + S_kv) - S_q (causal_br)", ge->where(), ge->ins[0].id));
        check_binary(*add);
        check_binary(*sub);
        const RawTensor& s_kv = other_input(*add, r->outs[0].id);
        const RawTensor& s_q = sub->ins[1];
        for (const RawTensor* t : {&s_kv, &s_q})
            if (!g.is_input(*t))
                unimplemented(fmt::format("{}: the sequence length (tensor {}) is computed in the graph", sub->where(), t->id));
        m.in[GraphPort::causal_s_kv] = s_kv;
        m.in[GraphPort::causal_s_q] = s_q;
        used.insert(used.end(), {add, sub});
        row = r;
        kind = Mask::causal_br;
    }
    used.push_back(row);
    for (const RawOp* op : used) g.use(*op);
    m.in[GraphPort::mask_fill] = fill;
    m.implicit_causal = kind;
    m.f32_typed.emplace_back(&sel, 0);
    return &sel.outs[0];
}

/// What the steps of one walk share: the graph, the match being built, and the ops and tensors
/// one step finds and a later one needs.
struct Walk {
    Graph& g;
    Match m{};
    const RawOp* qk = nullptr;          ///< the Q*K^T MatMul
    const RawOp* sc = nullptr;          ///< the scale op on its output
    const RawTensor* scores = nullptr;  ///< the scaled [and masked] scores
    const RawOp* from = nullptr;        ///< the op whose output `scores` is
    // The backward's steps.
    const RawOp* ex = nullptr;                                      ///< P = Exp(scores - stats)
    const RawTensor *p32 = nullptr, *p_io = nullptr;                ///< P in f32; P as the dV MatMul reads it
    const RawOp* drop_p = nullptr;                                  ///< the Dropout on P, if any
    const RawOp* dv = nullptr;                                      ///< dV = P^T dO
    const RawTensor* d_o = nullptr;                                 ///< dO
    const RawOp* dp = nullptr;                                      ///< dP = dO V^T
    const RawTensor* dp_t = nullptr;                                ///< dP as D is subtracted from it
    const RawOp* drop_dp = nullptr;                                 ///< the Dropout on dP, if any
    const RawOp *ds_op = nullptr, *ds_scale = nullptr;              ///< dS; dS scaled like the scores
    const RawTensor* ds_io = nullptr;                               ///< scaled dS as dQ and dK read it
};

/// An op outside the patterns (e.g. the inference graphs' Dequantize, StaticReshape or
/// StaticTranspose) in an SDPA graph is UNIMPLEMENTED naming the op. Step 0 asks this of a graph
/// with a SoftMax, find_qk() again once the Q*K^T MatMul is found (a backward has no SoftMax).
void reject_foreign_ops(Walk& w) {
    Graph& g = w.g;
    const bool attention = w.qk || std::any_of(g.ops().begin(), g.ops().end(), [](const RawOp& op) {
        return op.kind == "SoftMax" || op.kind == "SoftMaxBackward";
    });
    if (attention)
        for (const RawOp& op : g.ops())
            if (!known_kind(op.kind))
                unimplemented(fmt::format("{}: op kind {} is not part of the SDPA training patterns sdpabench reads{}",
                        op.where(), op.kind,
                        op.kind.find("uantize") != std::string::npos ? " (quantized attention graphs are not modelled)" : ""));
}

/// Step 1: the Q*K^T MatMul of two graph inputs whose output a graph input scales; then every
/// op kind and every Dropout's place checked.
void find_qk(Walk& w) {
    Graph& g = w.g;
    const RawOp*& qk = w.qk;
    const RawOp*& sc = w.sc;
    const RawOp* qk_dropout = nullptr;  // a Dropout between Q*K^T and the scale, for the error
    for (const RawOp& op : g.ops()) {
        if (op.kind != "MatMul" || op.ins.size() != 2 || op.outs.size() != 1) continue;
        if (!g.is_input(op.ins[0]) || !g.is_input(op.ins[1])) continue;
        const auto cons = g.consumers(op.outs[0]);
        if (cons.size() == 1 && cons[0]->kind == "Dropout" && !cons[0]->outs.empty())
            for (const RawOp* c : g.consumers(cons[0]->outs[0]))
                if (c->kind == "Multiply" || c->kind == "Divide") qk_dropout = cons[0];
        if (cons.size() != 1 || (cons[0]->kind != "Multiply" && cons[0]->kind != "Divide")) continue;
        if (cons[0]->ins.size() != 2 || !g.is_input(other_input(*cons[0], op.outs[0].id))) continue;
        qk = &op;
        sc = cons[0];
        break;
    }
    if (!qk && qk_dropout) misplaced_dropout(g, *qk_dropout);
    if (!qk)
        invalid("not an SDPA training graph: no MatMul of two graph inputs whose output is multiplied or divided "
                "by a graph input (the scale)");
    reject_foreign_ops(w);
    for (const RawOp& op : g.ops())
        if (op.kind == "Dropout" && !dropout_in_place(g, op)) misplaced_dropout(g, op);
}

/// The Q*K^T MatMul's inputs, Q and K; K given transposed taken back to [.., S_kv, D_qk].
void take_qk(Walk& w) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawOp* qk = w.qk;
    // K^T given already transposed (transpose_b=false, K of shape [.., D_qk, S_kv], the ViT form):
    // the same memory as K [.., S_kv, D_qk] with the last two strides swapped, K's layout in the
    // geometry model (core/geometry.hpp; --strides=K:bhds when dense).
    const bool k_transposed = !attr_bool(*qk, "transpose_b") && !attr_bool(*qk, "transpose_a");
    check_matmul(*qk, false, !k_transposed, "Q*K^T");
    g.use(*qk);
    m.in[GraphPort::Q] = qk->ins[0];
    m.in[GraphPort::K] = qk->ins[1];
    if (k_transposed) {
        RawTensor& k = m.in[GraphPort::K];
        if (k.shape.size() < 2) invalid(fmt::format("{}: K (tensor {}) has rank {}", qk->where(), k.id, k.shape.size()));
        if (k.stride.size() != k.shape.size() || k.layout != "strided") {
            k.stride = dense_strides(k.shape);
            k.layout = "strided";
        }
        const std::size_t n = k.shape.size();
        std::swap(k.shape[n - 1], k.shape[n - 2]);
        std::swap(k.stride[n - 1], k.stride[n - 2]);
        m.k_transposed = true;
    }
    m.f32_typed.emplace_back(qk, 0);
}

/// Step 2: the scale op (Multiply or Divide by the scale tensor).
void take_scale(Walk& w) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawOp* qk = w.qk;
    const RawOp* sc = w.sc;
    check_binary(*sc);
    if (sc->kind == "Divide" && sc->ins[0].id != qk->outs[0].id)
        invalid(fmt::format("{}: divides the scale by the scores (scores / scale expected)", sc->where()));
    m.scale_op = sc->kind == "Multiply" ? ScaleOp::mul : ScaleOp::div;
    m.in[GraphPort::scale] = other_input(*sc, qk->outs[0].id);
    m.f32_typed.emplace_back(sc, 0);
    g.use(*sc);
    w.scores = &sc->outs[0];
    w.from = sc;
}

/// Step 3: the optional implicit causal mask or additive mask; returns the op that consumes
/// the (masked) scores: the SoftMax of a forward, the stats Subtract of a backward.
const RawOp* take_mask(Walk& w) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawOp* sc = w.sc;
    const RawTensor*& scores = w.scores;
    const RawOp*& from = w.from;
    for (const RawOp* c : g.consumers(*scores))
        if (c->kind == "Select") {
            const RawOp& sel = *c;
            scores = take_implicit_causal(g, m, sel, *scores);
            for (const RawOp* u : g.consumers(sc->outs[0]))
                if (!g.used(*u))
                    unimplemented(fmt::format("{}: the scaled scores feed {} besides the implicit causal mask",
                            sc->where(), u->where()));
            from = &sel;
            break;
        }
    const RawOp* next = &g.sole_consumer(*scores, *from, "scaled scores");
    if (next->kind == "Add") {
        if (m.implicit_causal)
            unimplemented(fmt::format("{}: a mask tensor added to the implicitly masked scores is not supported (the "
                                      "implicit causal mask or a mask tensor, not both)", next->where()));
        check_binary(*next);
        const RawTensor& mask = other_input(*next, scores->id);
        if (!g.is_input(mask))
            unimplemented(fmt::format("{}: the mask is computed inside the graph (implicit masks are not supported)",
                    next->where()));
        // numpy broadcasting aligns the last dims: a mask of lower rank ([S_kv], [1,S_kv]) is
        // the same tensor with leading dims of 1.
        RawTensor& mk = m.in[GraphPort::mask] = mask;
        if (mk.shape.size() < scores->shape.size() && !mk.shape.empty()) {
            const std::size_t pad = scores->shape.size() - mk.shape.size();
            const bool strided = mk.stride.size() + pad == scores->shape.size();
            const std::int64_t outer = strided ? saturating_mul(mk.shape[0], mk.stride[0]) : 0;
            mk.shape.insert(mk.shape.begin(), pad, 1);
            if (strided) mk.stride.insert(mk.stride.begin(), pad, outer);
        }
        m.f32_typed.emplace_back(next, 0);
        g.use(*next);
        scores = &next->outs[0];
        next = &g.sole_consumer(*scores, *next, "masked scores");
    }
    return next;
}

/// The forward from its SoftMax `sm`: [stats output], [Dropout [TypeCast]], P*V.
void take_forward(Walk& w, const RawOp& sm) {
    Graph& g = w.g;
    Match& m = w.m;
    // Forward: SoftMax [+ stats] -> MatMul with V.
    allow_attrs(sm, {"axis", "mode"});
    const json* axis = attr(sm, "axis");
    const auto rank = static_cast<std::int64_t>(sm.ins[0].shape.size());
    const std::int64_t ax = axis && axis->is_number_integer() ? axis->get<std::int64_t>() : 1;
    if (ax != -1 && ax != rank - 1) unimplemented(fmt::format("{}: axis={} (the last axis is needed)", sm.where(), ax));
    // mode=none differs from inf_as_zero only in fully masked rows, which need a mask.
    if (const auto mode = attr_str(sm, "mode", "none");
            mode != "inf_as_zero" && !(mode == "none" && !m.in.count(GraphPort::mask) && !m.implicit_causal))
        unimplemented(fmt::format("{}: mode={} is not supported with a mask (inf_as_zero only: fully masked rows "
                                  "give 0)", sm.where(), mode));
    if (sm.outs.empty() || sm.outs.size() > 2) invalid(fmt::format("{}: needs 1 or 2 outputs", sm.where()));
    g.use(sm);
    m.dir = sm.outs.size() == 2 ? Dir::fwd_t : Dir::fwd_i;
    if (m.dir == Dir::fwd_t) {
        m.out[GraphPort::stats] = sm.outs[1];
        m.f32_typed.emplace_back(&sm, 1);
        if (!g.consumers(sm.outs[1]).empty())
            unimplemented(fmt::format("{}: the stats output feeds other ops", sm.where()));
    }
    // P as the P*V MatMul reads it: the SoftMax output in the io dtype, or with dropout the
    // f32 SoftMax output -> Dropout (f32) -> [TypeCast to the io dtype].
    const RawTensor* p_in = &sm.outs[0];
    const RawOp* after = &g.sole_consumer(sm.outs[0], sm, "P");
    if (after->kind == "Dropout") {
        take_dropout(g, m, *after);
        m.f32_typed.emplace_back(&sm, 0);
        p_in = &after->outs[0];
        after = &g.sole_consumer(*p_in, *after, "dropped P");
        if (after->kind == "TypeCast") {
            allow_attrs(*after, {});
            g.use(*after);
            p_in = &after->outs[0];
            after = &g.sole_consumer(*p_in, *after, "dropped P in the io dtype");
        }
    }
    const RawOp& pv = *after;
    check_matmul(pv, false, false, "P*V");
    if (pv.ins[0].id != p_in->id || !g.is_input(pv.ins[1]))
        invalid(fmt::format("{}: expected P times a graph input (V)", pv.where()));
    m.io_typed.emplace_back(&pv, &pv.ins[0]);
    g.use(pv);
    m.in[GraphPort::V] = pv.ins[1];
    m.out[GraphPort::O] = pv.outs[0];
}

/// The backward's P = Exp(scores - stats) from the stats Subtract `sub`, then P as the dV MatMul
/// reads it: [Dropout (f32)] -> [TypeCast to the io dtype].
void take_p(Walk& w, const RawOp& sub) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawOp* qk = w.qk;
    m.dir = Dir::bwd;
    if (m.k_transposed)
        unimplemented(fmt::format("{}: a backward graph with K given transposed (transpose_b=0) is not supported",
                qk->where()));
    check_binary(sub);
    g.use(sub);
    m.in[GraphPort::stats] = sub.ins[1];
    m.f32_typed.emplace_back(&sub, 0);
    w.ex = &g.sole_consumer(sub.outs[0], sub, "scores - stats");
    const RawOp& ex = *w.ex;
    if (ex.kind != "Exp") invalid(fmt::format("{}: expected Exp after the stats Subtract", ex.where()));
    allow_attrs(ex, {});
    g.use(ex);
    m.f32_typed.emplace_back(&ex, 0);
    w.p32 = &ex.outs[0];
    const RawTensor& p32 = *w.p32;
    const RawTensor*& p_io = w.p_io;
    p_io = &p32;
    const RawOp*& drop_p = w.drop_p;
    drop_p = consumer_of_kind(g, p32, {"Dropout"});
    if (drop_p) {
        take_dropout(g, m, *drop_p);
        p_io = &drop_p->outs[0];
    }
    p_io = through_typecast(g, p_io);
}

/// dV = P^T dO [ReduceSum over the group].
void take_dv(Walk& w) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawOp*& dv = w.dv;
    dv = consumer_of_kind(g, *w.p_io, {"MatMul"});
    if (!dv) invalid(fmt::format("{}: P feeds no MatMul (dV = P^T * dO expected)", w.ex->where()));
    check_matmul(*dv, true, false, "dV = P^T*dO");
    if (dv->ins[0].id != w.p_io->id || !g.is_input(dv->ins[1])) invalid(fmt::format("{}: expected P^T times dO", dv->where()));
    g.use(*dv);
    w.d_o = &dv->ins[1];
    const RawTensor& d_o = *w.d_o;
    m.in[GraphPort::dO] = d_o;
    m.out[GraphPort::dV] = through_group_reduce(g, *dv);
}

/// dP = dO V^T [Dropout], with the rule that a backward drops out both P and dP or neither.
void take_dp(Walk& w) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawOp*& dp = w.dp;
    const RawTensor& d_o = *w.d_o;
    const RawOp* dv = w.dv;
    for (const RawOp* c : g.consumers(d_o))
        if (c->kind == "MatMul" && c != dv) dp = c;
    if (!dp) invalid(fmt::format("{}: dO feeds no second MatMul (dP = dO * V^T expected)", dv->where()));
    check_matmul(*dp, false, true, "dP = dO*V^T");
    if (dp->ins[0].id != d_o.id || !g.is_input(dp->ins[1])) invalid(fmt::format("{}: expected dO times V^T", dp->where()));
    g.use(*dp);
    m.in[GraphPort::V] = dp->ins[1];
    m.f32_typed.emplace_back(dp, 0);
    // With dropout, dP is dropped out (Z o dP / (1-p)) before D is subtracted.
    const RawTensor*& dp_t = w.dp_t;
    dp_t = &dp->outs[0];
    const RawOp*& drop_dp = w.drop_dp;
    drop_dp = &g.sole_consumer(*dp_t, *dp, "dP");
    if (drop_dp->kind == "Dropout") {
        take_dropout(g, m, *drop_dp);
        dp_t = &drop_dp->outs[0];
    } else {
        drop_dp = nullptr;
    }
    const RawOp* drop_p = w.drop_p;
    if (drop_p && !drop_dp)
        unimplemented(fmt::format("{}: the backward drops out P but not dP ({} feeds {}); sdpabench's backward with "
                                  "dropout has a Dropout on both", drop_p->where(), dp->where(),
                g.sole_consumer(*dp_t, *dp, "dP").where()));
    if (drop_dp && !drop_p)
        unimplemented(fmt::format("{}: the backward drops out dP but not P ({} feeds no Dropout); sdpabench's backward "
                                  "with dropout has a Dropout on both", drop_dp->where(), w.ex->where()));
}

/// dS = SoftMaxBackward(dP, P) (the older form), with the undropped P.
const RawOp* take_softmax_backward(Walk& w, const RawOp& sbw) {
    allow_attrs(sbw, {"axis"});
    const RawTensor& p32 = *w.p32;
    if (sbw.ins.size() != 2 || sbw.ins[0].id != w.dp_t->id ||
            (sbw.ins[1].id != p32.id && (w.drop_p || sbw.ins[1].id != w.p_io->id)))
        invalid(fmt::format("{}: expected SoftMaxBackward(dP, P){}", sbw.where(),
                w.drop_p ? fmt::format(" with the dropped dP (tensor {}) and the undropped P (tensor {})", w.dp_t->id,
                                   p32.id)
                         : ""));
    return &sbw;
}

/// dS = P * (dP - D) with D = ReduceSum(O * dO) over the last axis (keep_dims), from the
/// Subtract `sub`; O is taken as a graph input.
const RawOp* take_ds_from_d(Walk& w, const RawOp& sub) {
    Graph& g = w.g;
    const RawTensor* dp_t = w.dp_t;
    const RawTensor& d_o = *w.d_o;
    if (sub.kind != "Subtract") invalid(fmt::format("{}: expected dP - D (Subtract) here", sub.where()));
    check_binary(sub);
    // Subtract is not commutative: D - dP would flip the sign of every gradient.
    if (sub.ins[0].id != dp_t->id)
        invalid(fmt::format("{}: computes D - dP (dP, tensor {}, is the second input); the SDPA backward is "
                            "dP - D", sub.where(), dp_t->id));
    const RawTensor& dsum = other_input(sub, dp_t->id);
    const RawOp* red = g.producer(dsum);
    if (!red) invalid(fmt::format("{}: D must be computed as ReduceSum(O * dO)", sub.where()));
    check_reduce(*red, static_cast<std::int64_t>(red->ins[0].shape.size()) - 1,
            static_cast<std::int64_t>(red->ins[0].shape.size()));
    const RawOp* mul = g.producer(red->ins[0]);
    if (!mul || mul->kind != "Multiply") invalid(fmt::format("{}: D must be ReduceSum(O * dO)", red->where()));
    check_binary(*mul);
    const RawTensor& o = other_input(*mul, d_o.id);
    if (o.id == d_o.id || !g.is_input(o)) invalid(fmt::format("{}: expected O * dO", mul->where()));
    w.m.in[GraphPort::O] = o;
    for (const RawOp* op : {red, mul, &sub}) {
        g.use(*op);
        w.m.f32_typed.emplace_back(op, 0);
    }
    const RawOp* ds = &g.sole_consumer(sub.outs[0], sub, "dP - D");
    if (ds->kind != "Multiply" || other_input(*ds, sub.outs[0].id).id != w.p32->id)
        invalid(fmt::format("{}: expected P * (dP - D)", ds->where()));
    check_binary(*ds);
    return ds;
}

/// dS = P * (dP - rowsum(O * dO)), or SoftMaxBackward(dP, P), with the undropped P.
void take_ds(Walk& w) {
    const RawOp& after_dp = w.g.sole_consumer(*w.dp_t, w.drop_dp ? *w.drop_dp : *w.dp, w.drop_dp ? "dropped dP" : "dP");
    w.ds_op = after_dp.kind == "SoftMaxBackward" ? take_softmax_backward(w, after_dp) : take_ds_from_d(w, after_dp);
    w.g.use(*w.ds_op);
    w.m.f32_typed.emplace_back(w.ds_op, 0);
}

/// dS scaled like the scores [TypeCast], and the optional dMask: End on dS (dS itself, the
/// bias's shape), or ReduceSum of dS over the bias's broadcast axes.
void take_ds_scale(Walk& w) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawOp* ds_op = w.ds_op;
    const RawOp* sc = w.sc;
    const RawOp*& ds_scale = w.ds_scale;
    for (const RawOp* c : g.consumers(ds_op->outs[0])) {
        if (c->kind == "End") {
            if (!c->outs.empty() || c->ins.size() != 1) invalid(fmt::format("{}: End has one input and no output", c->where()));
            g.use(*c);
            m.out[GraphPort::dMask] = ds_op->outs[0];
        }
        if (c->kind == "ReduceSum") {
            allow_attrs(*c, {"axes", "keep_dims"});
            if (!attr_bool(*c, "keep_dims") || c->outs.size() != 1)
                unimplemented(fmt::format("{}: the mask gradient's ReduceSum needs keep_dims=1", c->where()));
            g.use(*c);
            m.out[GraphPort::dMask] = c->outs[0];  // its shape is checked against the bias's in derive()
        }
        if (c->kind == "Multiply" || c->kind == "Divide") ds_scale = c;
    }
    if (!ds_scale || ds_scale->kind != sc->kind || other_input(*ds_scale, ds_op->outs[0].id).id != m.in[GraphPort::scale].id)
        invalid(fmt::format("{}: dS must be scaled like the scores ({} by tensor {})", ds_op->where(), sc->kind,
                m.in[GraphPort::scale].id));
    check_binary(*ds_scale);
    g.use(*ds_scale);
    m.f32_typed.emplace_back(ds_scale, 0);
    const RawTensor*& ds_io = w.ds_io;
    ds_io = &ds_scale->outs[0];
    ds_io = through_typecast(g, ds_io);
}

/// dQ = dS K; dK = dS^T Q [ReduceSum over the group].
void take_dq_dk(Walk& w) {
    Graph& g = w.g;
    Match& m = w.m;
    const RawTensor* ds_io = w.ds_io;
    const RawOp* ds_scale = w.ds_scale;
    const RawOp* dv = w.dv;
    const RawOp* dq = nullptr;
    const RawOp* dk = nullptr;
    for (const RawOp* c : g.consumers(*ds_io))
        if (c->kind == "MatMul") (attr_bool(*c, "transpose_a") ? dk : dq) = c;
    if (!dq || !dk) invalid(fmt::format("{}: scaled dS must feed the dQ and dK MatMuls", ds_scale->where()));
    check_matmul(*dq, false, false, "dQ = dS*K");
    check_matmul(*dk, true, false, "dK = dS^T*Q");
    if (dq->ins[1].id != m.in[GraphPort::K].id) invalid(fmt::format("{}: dQ must multiply dS by K", dq->where()));
    if (dk->ins[1].id != m.in[GraphPort::Q].id) invalid(fmt::format("{}: dK must multiply dS^T by Q", dk->where()));
    g.use(*dq);
    g.use(*dk);
    m.out[GraphPort::dQ] = dq->outs[0];
    m.out[GraphPort::dK] = through_group_reduce(g, *dk);
    for (const RawOp* op : {dv, dq, dk}) {
        m.io_typed.emplace_back(op, &op->ins[0]);
        m.io_typed.emplace_back(op, &op->outs[0]);
    }
}

/// The walk behind match(): the pattern from the Q*K^T MatMul to the outputs, one step per
/// graph form.
Match walk(Graph& g) {
    Walk w{g};
    reject_foreign_ops(w);
    find_qk(w);
    take_qk(w);
    take_scale(w);
    const RawOp* next = take_mask(w);
    if (next->kind == "SoftMax") {
        take_forward(w, *next);
        return w.m;
    }
    const RawTensor* scores = w.scores;
    if (next->kind != "Subtract" || next->ins.size() != 2 || next->ins[0].id != scores->id || !g.is_input(next->ins[1]))
        invalid(fmt::format("{}: not an SDPA training pattern: the scores must feed SoftMax (forward) or Subtract of "
                            "the stats (backward)",
                next->where()));

    take_p(w, *next);
    take_dv(w);
    take_dp(w);
    take_ds(w);
    take_ds_scale(w);
    take_dq_dk(w);
    return w.m;
}

}  // namespace

Match match(Graph& g) {
    Match m = walk(g);
    // A Dropout at an accepted kind of place that the walk did not take (e.g. on an Exp that is
    // not the backward's P) is still one sdpabench's graphs do not have.
    for (const RawOp& op : g.ops())
        if (op.kind == "Dropout" && !g.used(op)) misplaced_dropout(g, op);
    return m;
}

}  // namespace sdpa::graph_json
