#include "driver/onednn_json_import.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/sdpa_graph.hpp"

namespace sdpa {

namespace {

using nlohmann::json;
using dims_t = std::vector<std::int64_t>;

/// A rejected import: status and message (without the "FILE: error: " prefix). Thrown and
/// caught inside this file only.
struct ImportError {
    Status status;
    std::string msg;
};

[[noreturn]] void invalid(std::string msg) { throw ImportError{Status::invalid_arguments, std::move(msg)}; }
[[noreturn]] void unimplemented(std::string msg) { throw ImportError{Status::unimplemented, std::move(msg)}; }

/// One logical tensor as the file gives it.
struct RawTensor {
    std::size_t id = 0;
    std::string dtype, layout;
    dims_t shape, stride;
};

/// One op as the file gives it.
struct RawOp {
    std::size_t id = 0;
    std::string name, kind;
    json attrs;
    std::vector<RawTensor> ins, outs;

    std::string where() const { return fmt::format("op {} ({} '{}')", id, kind, name); }
};

/// Reads `key` of object `j` as T, or fails naming `what` and the key.
template <class T>
T get(const json& j, const char* key, const std::string& what) {
    if (!j.is_object() || !j.contains(key)) invalid(fmt::format("{}: missing \"{}\"", what, key));
    try {
        return j.at(key).get<T>();
    } catch (const json::exception&) {
        invalid(fmt::format("{}: \"{}\" has the wrong type ({})", what, key, j.at(key).dump()));
    }
}

RawTensor parse_tensor(const json& j, const std::string& what) {
    RawTensor t;
    t.id = get<std::size_t>(j, "id", what);
    const std::string w = fmt::format("{}: tensor {}", what, t.id);
    t.dtype = get<std::string>(j, "dtype", w);
    t.shape = get<dims_t>(j, "shape", w);
    if (j.contains("stride")) t.stride = get<dims_t>(j, "stride", w);
    t.layout = j.contains("layout_type") ? get<std::string>(j, "layout_type", w) : "strided";
    return t;
}

std::vector<RawOp> parse_ops(const json& root) {
    if (!root.is_object()) invalid("the top level is not a JSON object");
    if (!root.contains("graph") || !root["graph"].is_array()) invalid("missing \"graph\" (an array of ops)");
    std::vector<RawOp> ops;
    std::size_t n = 0;
    for (const json& o : root["graph"]) {
        const std::string what = fmt::format("graph[{}]", n++);
        RawOp op;
        op.id = get<std::size_t>(o, "id", what);
        op.kind = get<std::string>(o, "kind", what);
        op.name = o.contains("name") ? get<std::string>(o, "name", what) : "";
        op.attrs = o.contains("attrs") ? o["attrs"] : json::object();
        if (!op.attrs.is_object()) invalid(fmt::format("{}: \"attrs\" is not an object", op.where()));
        for (const json& t : get<json>(o, "inputs", op.where())) op.ins.push_back(parse_tensor(t, op.where()));
        for (const json& t : get<json>(o, "outputs", op.where())) op.outs.push_back(parse_tensor(t, op.where()));
        ops.push_back(std::move(op));
    }
    if (ops.empty()) invalid("\"graph\" has no ops");
    return ops;
}

/// Kahn's algorithm over producer -> consumer edges; fails on a tensor produced twice or a cycle.
std::vector<RawOp> topo_sort(std::vector<RawOp> ops) {
    std::map<std::size_t, std::size_t> producer;
    std::set<std::size_t> op_ids;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (!op_ids.insert(ops[i].id).second) invalid(fmt::format("{}: op id {} is used twice", ops[i].where(), ops[i].id));
        for (const auto& t : ops[i].outs)
            if (!producer.emplace(t.id, i).second)
                invalid(fmt::format("{}: tensor {} is produced by two ops", ops[i].where(), t.id));
    }
    std::vector<std::size_t> indeg(ops.size(), 0);
    std::vector<std::vector<std::size_t>> next(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i)
        for (const auto& t : ops[i].ins)
            if (const auto it = producer.find(t.id); it != producer.end()) {
                next[it->second].push_back(i);
                ++indeg[i];
            }
    std::vector<std::size_t> ready, order;
    for (std::size_t i = ops.size(); i-- > 0;)
        if (indeg[i] == 0) ready.push_back(i);
    while (!ready.empty()) {
        const std::size_t i = ready.back();
        ready.pop_back();
        order.push_back(i);
        for (const std::size_t j : next[i])
            if (--indeg[j] == 0) ready.push_back(j);
    }
    if (order.size() != ops.size())
        for (std::size_t i = 0; i < ops.size(); ++i)
            if (indeg[i] != 0) invalid(fmt::format("{}: the graph has a cycle through this op", ops[i].where()));
    std::vector<RawOp> sorted;
    for (const std::size_t i : order) sorted.push_back(std::move(ops[i]));
    return sorted;
}

std::optional<DType> float_dtype(const std::string& s) {
    for (const auto& [v, n] : kDTypeNames)
        if (n == s) return v;
    return std::nullopt;
}

/// Op kinds that take part in the SDPA training patterns.
bool known_kind(const std::string& k) {
    static const std::set<std::string> kinds{"MatMul", "Multiply", "Divide", "Add", "Subtract", "SoftMax", "Exp",
        "TypeCast", "ReduceSum", "SoftMaxBackward", "End"};
    return kinds.count(k) != 0;
}

/// The graph with producer/consumer lookups and the set of ops the match used.
class Graph {
public:
    explicit Graph(std::vector<RawOp> ops) : ops_(std::move(ops)) {
        for (std::size_t i = 0; i < ops_.size(); ++i) {
            for (const auto& t : ops_[i].outs) producer_[t.id] = i;
            for (const auto& t : ops_[i].ins) consumers_[t.id].push_back(i);
        }
    }
    const std::vector<RawOp>& ops() const { return ops_; }
    bool is_input(const RawTensor& t) const { return !producer_.count(t.id); }
    std::vector<const RawOp*> consumers(const RawTensor& t) const {
        std::vector<const RawOp*> v;
        if (const auto it = consumers_.find(t.id); it != consumers_.end())
            for (const std::size_t i : it->second) v.push_back(&ops_[i]);
        return v;
    }
    /// The single consumer of t; fails naming `from` when there is none or several.
    const RawOp& sole_consumer(const RawTensor& t, const RawOp& from, std::string_view what) const {
        const auto c = consumers(t);
        if (c.size() != 1)
            invalid(fmt::format("{}: its output {} ({}) has {} consumers, the SDPA pattern needs exactly 1", from.where(),
                    t.id, what, c.size()));
        return *c.front();
    }
    void use(const RawOp& op) { used_.insert(op.id); }
    bool used(const RawOp& op) const { return used_.count(op.id) != 0; }

private:
    std::vector<RawOp> ops_;
    std::map<std::size_t, std::size_t> producer_;
    std::map<std::size_t, std::vector<std::size_t>> consumers_;
    std::set<std::size_t> used_;
};

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
    return op.attrs.contains(name) ? &op.attrs[name]["value"] : nullptr;
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
    if (axes && axes->is_array()) a = axes->get<dims_t>();
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

/// The other input of a binary op (the one that is not tensor `id`).
const RawTensor& other_input(const RawOp& op, std::size_t id) { return op.ins[0].id == id ? op.ins[1] : op.ins[0]; }

/// What the match found: the tensors at the pattern's ports and facts about the graph.
struct Match {
    Dir dir = Dir::fwd_t;
    ScaleOp scale_op = ScaleOp::mul;
    std::map<GraphPort, RawTensor> in, out;
    std::vector<std::pair<const RawOp*, const RawTensor*>> io_typed;  ///< (op, its tensor) that must have the io dtype
    std::vector<std::pair<const RawOp*, std::size_t>> f32_typed;  ///< (op, output index) that must be f32
};

Match match(Graph& g) {
    Match m;
    // 1. The QK^T MatMul: both inputs from outside, output scaled by a graph input.
    const RawOp* qk = nullptr;
    const RawOp* sc = nullptr;
    for (const RawOp& op : g.ops()) {
        if (op.kind != "MatMul" || op.ins.size() != 2 || op.outs.size() != 1) continue;
        if (!g.is_input(op.ins[0]) || !g.is_input(op.ins[1])) continue;
        const auto cons = g.consumers(op.outs[0]);
        if (cons.size() != 1 || (cons[0]->kind != "Multiply" && cons[0]->kind != "Divide")) continue;
        if (cons[0]->ins.size() != 2 || !g.is_input(other_input(*cons[0], op.outs[0].id))) continue;
        qk = &op;
        sc = cons[0];
        break;
    }
    if (!qk)
        invalid("not an SDPA training graph: no MatMul of two graph inputs whose output is multiplied or divided "
                "by a graph input (the scale)");
    for (const RawOp& op : g.ops())
        if (!known_kind(op.kind))
            unimplemented(fmt::format("{}: op kind {} is not part of the SDPA training patterns sdpabench reads", op.where(),
                    op.kind));
    check_matmul(*qk, false, true, "Q*K^T");
    g.use(*qk);
    m.in[GraphPort::Q] = qk->ins[0];
    m.in[GraphPort::K] = qk->ins[1];
    m.f32_typed.emplace_back(qk, 0);

    // 2. The scale.
    check_binary(*sc);
    if (sc->kind == "Divide" && sc->ins[0].id != qk->outs[0].id)
        invalid(fmt::format("{}: divides the scale by the scores (scores / scale expected)", sc->where()));
    m.scale_op = sc->kind == "Multiply" ? ScaleOp::mul : ScaleOp::div;
    m.in[GraphPort::scale] = other_input(*sc, qk->outs[0].id);
    m.f32_typed.emplace_back(sc, 0);
    g.use(*sc);
    const RawTensor* scores = &sc->outs[0];

    // 3. Optional additive mask.
    const RawOp* next = &g.sole_consumer(*scores, *sc, "scaled scores");
    if (next->kind == "Add") {
        check_binary(*next);
        const RawTensor& mask = other_input(*next, scores->id);
        if (!g.is_input(mask))
            unimplemented(fmt::format("{}: the mask is computed inside the graph (implicit masks are not supported)",
                    next->where()));
        m.in[GraphPort::mask] = mask;
        m.f32_typed.emplace_back(next, 0);
        g.use(*next);
        scores = &next->outs[0];
        next = &g.sole_consumer(*scores, *next, "masked scores");
    }

    if (next->kind == "SoftMax") {
        // Forward: SoftMax [+ stats] -> MatMul with V.
        const RawOp& sm = *next;
        allow_attrs(sm, {"axis", "mode"});
        const json* axis = attr(sm, "axis");
        const auto rank = static_cast<std::int64_t>(sm.ins[0].shape.size());
        const std::int64_t ax = axis && axis->is_number_integer() ? axis->get<std::int64_t>() : 1;
        if (ax != -1 && ax != rank - 1) unimplemented(fmt::format("{}: axis={} (the last axis is needed)", sm.where(), ax));
        if (const auto mode = attr_str(sm, "mode", "none"); mode != "inf_as_zero")
            unimplemented(fmt::format("{}: mode={} is not supported (inf_as_zero only: fully masked rows give 0)",
                    sm.where(), mode));
        if (sm.outs.empty() || sm.outs.size() > 2) invalid(fmt::format("{}: needs 1 or 2 outputs", sm.where()));
        g.use(sm);
        m.dir = sm.outs.size() == 2 ? Dir::fwd_t : Dir::fwd_i;
        if (m.dir == Dir::fwd_t) {
            m.out[GraphPort::stats] = sm.outs[1];
            m.f32_typed.emplace_back(&sm, 1);
            if (!g.consumers(sm.outs[1]).empty())
                unimplemented(fmt::format("{}: the stats output feeds other ops", sm.where()));
        }
        m.io_typed.emplace_back(&sm, &sm.outs[0]);
        const RawOp& pv = g.sole_consumer(sm.outs[0], sm, "P");
        check_matmul(pv, false, false, "P*V");
        if (pv.ins[0].id != sm.outs[0].id || !g.is_input(pv.ins[1]))
            invalid(fmt::format("{}: expected P times a graph input (V)", pv.where()));
        g.use(pv);
        m.in[GraphPort::V] = pv.ins[1];
        m.out[GraphPort::O] = pv.outs[0];
        return m;
    }
    if (next->kind != "Subtract" || next->ins.size() != 2 || next->ins[0].id != scores->id || !g.is_input(next->ins[1]))
        invalid(fmt::format("{}: not an SDPA training pattern: the scores must feed SoftMax (forward) or Subtract of "
                            "the stats (backward)",
                next->where()));

    // Backward: P = Exp(scores - stats).
    m.dir = Dir::bwd;
    const RawOp& sub = *next;
    check_binary(sub);
    g.use(sub);
    m.in[GraphPort::stats] = sub.ins[1];
    m.f32_typed.emplace_back(&sub, 0);
    const RawOp& ex = g.sole_consumer(sub.outs[0], sub, "scores - stats");
    if (ex.kind != "Exp") invalid(fmt::format("{}: expected Exp after the stats Subtract", ex.where()));
    allow_attrs(ex, {});
    g.use(ex);
    m.f32_typed.emplace_back(&ex, 0);
    const RawTensor& p32 = ex.outs[0];
    const RawTensor* p_io = &p32;
    if (const RawOp* tc = consumer_of_kind(g, p32, {"TypeCast"})) {
        allow_attrs(*tc, {});
        g.use(*tc);
        p_io = &tc->outs[0];
    }
    // dV = P^T dO.
    const RawOp* dv = consumer_of_kind(g, *p_io, {"MatMul"});
    if (!dv) invalid(fmt::format("{}: P feeds no MatMul (dV = P^T * dO expected)", ex.where()));
    check_matmul(*dv, true, false, "dV = P^T*dO");
    if (dv->ins[0].id != p_io->id || !g.is_input(dv->ins[1])) invalid(fmt::format("{}: expected P^T times dO", dv->where()));
    g.use(*dv);
    const RawTensor& d_o = dv->ins[1];
    m.in[GraphPort::dO] = d_o;
    const RawOp* dv_out = dv;
    if (const auto c = g.consumers(dv->outs[0]); c.size() == 1 && c[0]->kind == "ReduceSum") {
        check_reduce(*c[0], 2, static_cast<std::int64_t>(c[0]->ins[0].shape.size()));
        g.use(*c[0]);
        dv_out = c[0];
    }
    m.out[GraphPort::dV] = dv_out->outs[0];
    // dP = dO V^T.
    const RawOp* dp = nullptr;
    for (const RawOp* c : g.consumers(d_o))
        if (c->kind == "MatMul" && c != dv) dp = c;
    if (!dp) invalid(fmt::format("{}: dO feeds no second MatMul (dP = dO * V^T expected)", dv->where()));
    check_matmul(*dp, false, true, "dP = dO*V^T");
    if (dp->ins[0].id != d_o.id || !g.is_input(dp->ins[1])) invalid(fmt::format("{}: expected dO times V^T", dp->where()));
    g.use(*dp);
    m.in[GraphPort::V] = dp->ins[1];
    m.f32_typed.emplace_back(dp, 0);
    // dS = P * (dP - rowsum(O * dO)), or SoftMaxBackward(dP, P).
    const RawOp& after_dp = g.sole_consumer(dp->outs[0], *dp, "dP");
    const RawOp* ds_op = nullptr;
    if (after_dp.kind == "SoftMaxBackward") {
        allow_attrs(after_dp, {"axis"});
        if (after_dp.ins.size() != 2 || (after_dp.ins[1].id != p_io->id && after_dp.ins[1].id != p32.id))
            invalid(fmt::format("{}: expected SoftMaxBackward(dP, P)", after_dp.where()));
        ds_op = &after_dp;
    } else {
        if (after_dp.kind != "Subtract") invalid(fmt::format("{}: expected dP - D (Subtract) here", after_dp.where()));
        check_binary(after_dp);
        const RawTensor& dsum = other_input(after_dp, dp->outs[0].id);
        const RawOp* red = nullptr;
        for (const RawOp& op : g.ops())
            for (const auto& t : op.outs)
                if (t.id == dsum.id) red = &op;
        if (!red) invalid(fmt::format("{}: D must be computed as ReduceSum(O * dO)", after_dp.where()));
        check_reduce(*red, static_cast<std::int64_t>(red->ins[0].shape.size()) - 1,
                static_cast<std::int64_t>(red->ins[0].shape.size()));
        const RawOp* mul = nullptr;
        for (const RawOp& op : g.ops())
            for (const auto& t : op.outs)
                if (t.id == red->ins[0].id) mul = &op;
        if (!mul || mul->kind != "Multiply") invalid(fmt::format("{}: D must be ReduceSum(O * dO)", red->where()));
        check_binary(*mul);
        const RawTensor& o = other_input(*mul, d_o.id);
        if (o.id == d_o.id || !g.is_input(o)) invalid(fmt::format("{}: expected O * dO", mul->where()));
        m.in[GraphPort::O] = o;
        for (const RawOp* op : {red, mul, &after_dp}) {
            g.use(*op);
            m.f32_typed.emplace_back(op, 0);
        }
        ds_op = &g.sole_consumer(after_dp.outs[0], after_dp, "dP - D");
        if (ds_op->kind != "Multiply" || other_input(*ds_op, after_dp.outs[0].id).id != p32.id)
            invalid(fmt::format("{}: expected P * (dP - D)", ds_op->where()));
        check_binary(*ds_op);
    }
    g.use(*ds_op);
    m.f32_typed.emplace_back(ds_op, 0);
    // Scale of dS (the same op kind and scale tensor as the forward), optional dMask (End).
    const RawOp* ds_scale = nullptr;
    for (const RawOp* c : g.consumers(ds_op->outs[0])) {
        if (c->kind == "End")
            unimplemented(fmt::format("{}: dMask output (End on dS) is not supported", c->where()));
        if (c->kind == "Multiply" || c->kind == "Divide") ds_scale = c;
    }
    if (!ds_scale || ds_scale->kind != sc->kind || other_input(*ds_scale, ds_op->outs[0].id).id != m.in[GraphPort::scale].id)
        invalid(fmt::format("{}: dS must be scaled like the scores ({} by tensor {})", ds_op->where(), sc->kind,
                m.in[GraphPort::scale].id));
    check_binary(*ds_scale);
    g.use(*ds_scale);
    m.f32_typed.emplace_back(ds_scale, 0);
    const RawTensor* ds_io = &ds_scale->outs[0];
    if (const RawOp* tc = consumer_of_kind(g, *ds_io, {"TypeCast"})) {
        allow_attrs(*tc, {});
        g.use(*tc);
        ds_io = &tc->outs[0];
    }
    // dQ = dS K; dK = dS^T Q [ReduceSum over the group].
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
    const RawOp* dk_out = dk;
    if (const auto c = g.consumers(dk->outs[0]); c.size() == 1 && c[0]->kind == "ReduceSum") {
        check_reduce(*c[0], 2, static_cast<std::int64_t>(c[0]->ins[0].shape.size()));
        g.use(*c[0]);
        dk_out = c[0];
    }
    m.out[GraphPort::dK] = dk_out->outs[0];
    for (const RawOp* op : {dv, dq, dk}) {
        m.io_typed.emplace_back(op, &op->ins[0]);
        m.io_typed.emplace_back(op, &op->outs[0]);
    }
    return m;
}

/// Parses "AxBxC" (or "scalar": rank 0) into dims; false when malformed.
bool parse_dims(std::string_view s, dims_t& out) {
    out.clear();
    if (s == "scalar") return true;
    std::size_t pos = 0;
    while (true) {
        const std::size_t x = s.find('x', pos);
        const std::string_view part = s.substr(pos, x == s.npos ? s.npos : x - pos);
        std::int64_t v = 0;
        const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v < 0) return false;
        out.push_back(v);
        if (x == s.npos) return true;
        pos = x + 1;
    }
}

/// One --in-shapes entry.
struct ShapeRewrite {
    std::size_t id = 0;
    std::optional<dims_t> shape;
    std::string tag;                  ///< letters, or empty
    std::optional<dims_t> strides;
};

std::vector<ShapeRewrite> parse_in_shapes(std::string_view text, std::string* err) {
    std::vector<ShapeRewrite> out;
    if (text.empty()) return out;
    std::size_t pos = 0;
    while (true) {
        const std::size_t plus = text.find('+', pos);
        const std::string_view e = text.substr(pos, plus == text.npos ? text.npos : plus - pos);
        const std::size_t colon = e.find(':');
        ShapeRewrite r;
        const std::string_view id = e.substr(0, colon);
        const auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), r.id);
        if (colon == e.npos || id.empty() || ec != std::errc() || ptr != id.data() + id.size()) {
            *err = fmt::format("'{}' is not ID:SHAPE[*STRIDES|*TAG]", e);
            return {};
        }
        const std::string_view v = e.substr(colon + 1);
        const std::size_t star = v.find('*');
        const std::string_view shape = v.substr(0, star);
        if (!shape.empty()) {
            dims_t d;
            if (!parse_dims(shape, d)) {
                *err = fmt::format("'{}': '{}' is not a shape like 2x16x384x64", e, shape);
                return {};
            }
            r.shape = d;
        }
        if (star != v.npos) {
            const std::string_view lay = v.substr(star + 1);
            dims_t d;
            if (!lay.empty() && std::all_of(lay.begin(), lay.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
                r.tag = std::string(lay);
            else if (parse_dims(lay, d) && !d.empty())
                r.strides = d;
            else {
                *err = fmt::format("'{}': '{}' is neither a tag (abcd) nor strides (AxBxC)", e, lay);
                return {};
            }
        } else if (shape.empty()) {
            *err = fmt::format("'{}' gives no shape", e);
            return {};
        }
        out.push_back(std::move(r));
        if (plus == text.npos) return out;
        pos = plus + 1;
    }
}

/// True when `stride` is dense row-major for `shape` (dims of size 1 may have any stride).
bool dense(const dims_t& shape, const dims_t& stride) {
    if (stride.empty()) return true;
    if (stride.size() != shape.size()) return false;
    const dims_t want = dense_strides(shape);
    for (std::size_t i = 0; i < shape.size(); ++i)
        if (shape[i] != 1 && stride[i] != want[i]) return false;
    return true;
}

/// Applies --in-shapes to every occurrence of the named boundary tensors.
void rewrite_shapes(std::vector<RawOp>& ops, std::string_view text) {
    std::string err;
    const auto rws = parse_in_shapes(text, &err);
    if (!err.empty()) invalid(fmt::format("--in-shapes: {}", err));
    std::set<std::size_t> produced, consumed;
    for (const auto& op : ops) {
        for (const auto& t : op.outs) produced.insert(t.id);
        for (const auto& t : op.ins) consumed.insert(t.id);
    }
    for (const auto& r : rws) {
        const bool boundary = !produced.count(r.id) || !consumed.count(r.id);
        if (!produced.count(r.id) && !consumed.count(r.id)) invalid(fmt::format("--in-shapes: no tensor {} in the graph", r.id));
        if (!boundary) invalid(fmt::format("--in-shapes: tensor {} is internal to the graph", r.id));
        for (auto& op : ops)
            for (auto* ts : {&op.ins, &op.outs})
                for (auto& t : *ts) {
                    if (t.id != r.id) continue;
                    if (r.shape) t.shape = *r.shape;
                    t.stride = dense_strides(t.shape);
                    if (!r.tag.empty()) {
                        std::string id_tag;
                        for (std::size_t i = 0; i < t.shape.size(); ++i) id_tag += static_cast<char>('a' + i);
                        if (r.tag != id_tag)
                            unimplemented(fmt::format("--in-shapes: tensor {}: tag {} is not dense row-major ({})", r.id,
                                    r.tag, id_tag));
                    }
                    if (r.strides) {
                        if (!dense(t.shape, *r.strides))
                            unimplemented(fmt::format("--in-shapes: tensor {}: strides {} are not dense row-major for {}",
                                    r.id, fmt::join(*r.strides, "x"), fmt::join(t.shape, "x")));
                    }
                }
    }
}

std::string shape_str(const dims_t& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

/// Derives the problem from the matched ports and checks every port against the graph
/// sdpabench would build for it.
Problem derive(const Match& m, bool check_outputs, std::uint64_t seed) {
    const RawTensor& q = m.in.at(GraphPort::Q);
    const RawTensor& k = m.in.at(GraphPort::K);
    const RawTensor& v = m.in.at(GraphPort::V);
    Problem p;
    p.dir = m.dir;
    p.scale_op = m.scale_op;
    p.seed = seed;
    Dims& d = p.dims;
    if (q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4) {
        if (k.shape[1] != q.shape[1])
            unimplemented(fmt::format("tensor {} (K): {} heads broadcast against {} query heads in 4-D; use the 5-D GQA form",
                    k.id, k.shape[1], q.shape[1]));
        d = Dims{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
    } else if (q.shape.size() == 5 && k.shape.size() == 5 && v.shape.size() == 5) {
        d = Dims{q.shape[0], q.shape[1] * q.shape[2], k.shape[1], q.shape[3], k.shape[3], q.shape[4], v.shape[4]};
        if (k.shape[2] != 1 || v.shape[2] != 1)
            unimplemented(fmt::format("tensor {} (K) / {} (V): the 5-D GQA form needs a group dim of 1 for K and V", k.id, v.id));
    } else {
        unimplemented(fmt::format("tensor {} (Q): rank {} with K rank {}, V rank {} (4-D MHA or 5-D GQA expected)", q.id,
                q.shape.size(), k.shape.size(), v.shape.size()));
    }
    for (const auto& [name, x] : {std::pair{"B", d.B}, {"H_q", d.H_q}, {"H_kv", d.H_kv}, {"S_q", d.S_q}, {"S_kv", d.S_kv},
             {"D_qk", d.D_qk}, {"D_v", d.D_v}})
        if (x <= 0) invalid(fmt::format("tensor {} (Q) / {} (K) / {} (V): {} = {} must be positive", q.id, k.id, v.id, name, x));
    const auto io = float_dtype(q.dtype);
    if (!io) unimplemented(fmt::format("tensor {} (Q): dtype {} (f32, bf16 or f16 expected)", q.id, q.dtype));
    p.dt = *io;
    const RawTensor& sc = m.in.at(GraphPort::scale);
    const auto sdt = float_dtype(sc.dtype);
    if (!sdt) unimplemented(fmt::format("tensor {} (scale): dtype {} is not supported", sc.id, sc.dtype));
    if (*sdt != p.dt) p.scale_dt = *sdt;
    std::int64_t n = 1;
    for (auto x : sc.shape) n *= x;
    if (n != 1) unimplemented(fmt::format("tensor {} (scale): shape {} is not one value", sc.id, shape_str(sc.shape)));
    p.scale = benchdnn_scale(p.scale_op, seed);

    if (const auto it = m.in.find(GraphPort::mask); it != m.in.end()) {
        const RawTensor& mk = it->second;
        const auto mdt = float_dtype(mk.dtype);
        if (!mdt) unimplemented(fmt::format("tensor {} (mask): dtype {} is not supported", mk.id, mk.dtype));
        p.mask = Mask::bias;
        if (*mdt != p.dt) p.mask_dt = *mdt;
        const dims_t& s = mk.shape;
        const bool gqa = d.H_kv != d.H_q;
        const std::int64_t G = d.H_q / d.H_kv;
        // The scores' shape in the graph's rank; the mask must broadcast to it (numpy rules).
        const dims_t scores = gqa ? dims_t{d.B, d.H_kv, G, d.S_q, d.S_kv} : dims_t{d.B, d.H_q, d.S_q, d.S_kv};
        bool fits = s.size() == scores.size();
        for (std::size_t i = 0; fits && i < s.size(); ++i) fits = s[i] == 1 || s[i] == scores[i];
        if (!fits || s.back() != d.S_kv)
            invalid(fmt::format("tensor {} (mask): shape {} does not broadcast to the scores {} (B={} H_q={} H_kv={} "
                                "S_q={} S_kv={})",
                    mk.id, shape_str(s), shape_str(scores), d.B, d.H_q, d.H_kv, d.S_q, d.S_kv));
        const std::int64_t mb = s[0], ms = s[s.size() - 2];
        std::int64_t mh = s[1];
        if (gqa) {
            if (s[1] * s[2] != 1 && s[1] * s[2] != d.H_q)
                unimplemented(fmt::format("tensor {} (mask): shape {} broadcasts over only one of H_kv and G (per-head "
                                          "or shared masks only)", mk.id, shape_str(s)));
            mh = s[1] * s[2];
        }
        const bool per_b = mb == d.B && d.B > 1, per_h = mh == d.H_q && d.H_q > 1, row = ms == 1;
        static constexpr BiasShape full[2][2] = {{BiasShape::one, BiasShape::h}, {BiasShape::b, BiasShape::bh}};
        static constexpr BiasShape rows[2][2] = {{BiasShape::one_row, BiasShape::h_row}, {BiasShape::b_row, BiasShape::bh_row}};
        p.bias_shape = (row ? rows : full)[per_b][per_h];
        // benchdnn: a mask with one row (S_q dim 1) is a padding mask, filled with zeros;
        // any other is causal with the last row fully masked.
        p.mask_fill = row ? MaskFill::zero : MaskFill::causal_last_row;
    }

    // Every port against the graph sdpabench builds for p (shapes, dtypes, dense strides).
    const SdpaGraphDesc want = describe_sdpa_graph(p);
    auto check = [&](GraphPort port, const RawTensor& t, const GraphTensor& w, bool shape) {
        const std::string_view names[] = {"Q", "K", "V", "scale", "mask", "O", "dO", "stats", "dQ", "dK", "dV"};
        const auto pname = names[static_cast<std::size_t>(port)];
        if (shape && t.shape != w.dims && port != GraphPort::scale)
            invalid(fmt::format("tensor {} ({}): shape {} does not match {} implied by Q {}, K {}, V {}", t.id, pname,
                    shape_str(t.shape), shape_str(w.dims), shape_str(q.shape), shape_str(k.shape), shape_str(v.shape)));
        if (t.dtype != fmt::format("{}", w.dt))
            unimplemented(fmt::format("tensor {} ({}): dtype {} (sdpabench's graph has {} here)", t.id, pname, t.dtype, w.dt));
        if (t.layout == "strided" && !dense(t.shape, t.stride))
            unimplemented(fmt::format("tensor {} ({}): strides {} are not dense row-major for shape {}", t.id, pname,
                    shape_str(t.stride), shape_str(t.shape)));
        if (t.layout != "strided" && t.layout != "undef" && t.layout != "any")
            unimplemented(fmt::format("tensor {} ({}): layout_type {} is not supported", t.id, pname, t.layout));
    };
    for (const auto& [port, t] : m.in) {
        if (port == GraphPort::O && !want.inputs.count(port)) continue;
        check(port, t, want.inputs.at(port), true);
    }
    for (const auto& [port, t] : m.out) check(port, t, want.outputs.at(port), check_outputs);
    for (const auto& [op, idx] : m.f32_typed)
        if (op->outs.size() > idx && op->outs[idx].dtype != "f32")
            unimplemented(fmt::format("{}: output {} has dtype {} (f32 expected for this intermediate)", op->where(),
                    op->outs[idx].id, op->outs[idx].dtype));
    for (const auto& [op, t] : m.io_typed)
        if (t->dtype != fmt::format("{}", p.dt))
            unimplemented(fmt::format("{}: tensor {} has dtype {} (the io dtype {} expected)", op->where(), t->id,
                    t->dtype, p.dt));
    return p;
}

/// 1-based line and column of byte offset `pos` in `text`.
std::pair<std::size_t, std::size_t> line_col(std::string_view text, std::size_t pos) {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return {line, col};
}

}  // namespace

float benchdnn_scale(ScaleOp op, std::uint64_t seed) {
    // benchdnn's fill of a scale input: a power of two, at most 1 for Multiply, above 1 for Divide.
    static constexpr float kMul[] = {0.25f, 0.5f, 1.f}, kDiv[] = {2.f, 4.f, 8.f};
    std::uint64_t h = (seed + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    return (op == ScaleOp::mul ? kMul : kDiv)[h % 3];
}

std::optional<std::string> check_in_shapes(std::string_view text) {
    std::string err;
    parse_in_shapes(text, &err);
    if (err.empty()) return std::nullopt;
    return err;
}

GraphImport import_onednn_json_text(std::string_view text, const std::string& file, const GraphRewrites& rw,
        std::uint64_t seed) {
    GraphImport r;
    json root;
    try {
        root = json::parse(text);
    } catch (const json::parse_error& e) {
        // e.byte is the 1-based offset of the last byte read: report where parsing stopped.
        const auto [line, col] = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
        // nlohmann's message reads "[json.exception.parse_error.101] parse error at line L,
        // column C: WHAT"; keep WHAT (the position is reported from e.byte above).
        std::string what = e.what();
        if (const auto p = what.find("parse error"); p != std::string::npos) {
            what = what.substr(p);
            if (const auto c = what.find(": "); c != std::string::npos) what = what.substr(c + 2);
        }
        r.status = Status::invalid_arguments;
        r.error = fmt::format("{}: error: malformed JSON at line {}, column {}: {}", file, line, col, what);
        return r;
    }
    try {
        std::vector<RawOp> ops = parse_ops(root);
        rewrite_shapes(ops, rw.in_shapes);
        Graph g(topo_sort(std::move(ops)));
        const Match m = match(g);
        for (const RawOp& op : g.ops())
            if (!g.used(op)) invalid(fmt::format("{}: not part of the SDPA training pattern", op.where()));
        Problem p = derive(m, rw.in_shapes.empty(), seed);
        if (rw.dt) {
            p.dt = *rw.dt;
            p.mask_dt.reset();
            p.scale_dt.reset();
        }
        if (rw.mb > 0) p.dims.B = rw.mb;
        std::string name = std::filesystem::path(file).stem().string();
        for (char& ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') ch = '_';
        p.name = name;
        if (auto err = validate(p)) invalid(*err);
        r.prb = std::move(p);
    } catch (const ImportError& e) {
        r.status = e.status;
        r.error = fmt::format("{}: error: {}", file, e.msg);
    }
    return r;
}

GraphImport import_onednn_json(const std::string& path, const GraphRewrites& rw, std::uint64_t seed) {
    std::ifstream in(path, std::ios::binary);
    if (!in || std::filesystem::is_directory(path)) {
        GraphImport r;
        r.status = Status::invalid_arguments;
        r.error = fmt::format("{}: error: cannot open the graph file", path);
        return r;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return import_onednn_json_text(ss.str(), path, rw, seed);
}

}  // namespace sdpa
