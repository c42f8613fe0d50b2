#include "graph/json_graph.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa::graph_json {

namespace {

/// True when `v` is a JSON integer that fits T (nlohmann converts a float such as 1e44 to an
/// integer type with undefined behaviour, so integers are checked before get<T>()).
template <class T>
bool fits_integer(const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    if (!v.is_number_integer()) return false;
    const std::int64_t x = v.get<std::int64_t>();
    return std::is_signed_v<T> || x >= 0;
}

/// Reads `key` of object `j` as T, or fails naming `what` and the key.
template <class T>
T get(const json& j, const char* key, const std::string& what) {
    if (!j.is_object() || !j.contains(key)) invalid(fmt::format("{}: missing \"{}\"", what, key));
    const json& v = j.at(key);
    bool ok = true;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) ok = fits_integer<T>(v);
    if constexpr (std::is_same_v<T, dims_t>)
        ok = v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return fits_integer<std::int64_t>(e); });
    if (!ok) invalid(fmt::format("{}: \"{}\" has the wrong type or range ({})", what, key, v.dump()));
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
    t.property = j.contains("property_type") ? get<std::string>(j, "property_type", w) : "undef";
    if (!property_types().count(t.property))
        invalid(fmt::format("{}: property_type '{}' is not one of {}", w, t.property, property_type_list()));
    // oneDNN's dump writes one INT64_MIN for strides it leaves undefined.
    const bool undefined = t.stride.size() == 1 && t.stride[0] == std::numeric_limits<std::int64_t>::min();
    if (!t.stride.empty() && !undefined && t.stride.size() != t.shape.size())
        invalid(fmt::format("{}: stride [{}] has rank {} but shape [{}] has rank {}", w, fmt::join(t.stride, ","),
                t.stride.size(), fmt::join(t.shape, ","), t.shape.size()));
    return t;
}

}  // namespace

namespace {
constexpr std::array<std::string_view, 4> kPropertyTypes{"undef", "variable", "constant", "host_scalar"};
}  // namespace

const std::set<std::string>& property_types() {
    static const std::set<std::string> kSet(kPropertyTypes.begin(), kPropertyTypes.end());
    return kSet;
}

const std::string& property_type_list() {
    static const std::string kList = fmt::format("{}", fmt::join(kPropertyTypes, ", "));
    return kList;
}

RawOp& op_by_id(std::vector<RawOp>& ops, std::size_t id, std::string_view knob) {
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const RawOp& op) { return op.id == id; });
    if (it == ops.end()) invalid(fmt::format("--{}: no op {} in the graph", knob, id));
    return *it;
}

void check_tensors(const std::vector<RawOp>& ops) {
    std::map<std::size_t, std::pair<const RawTensor*, const RawOp*>> first;
    for (const RawOp& op : ops)
        for (const auto* list : {&op.ins, &op.outs})
            for (const RawTensor& t : *list) {
                const auto [it, fresh] = first.emplace(t.id, std::pair{&t, &op});
                if (fresh) continue;
                const RawTensor& u = *it->second.first;
                if (u.dtype != t.dtype || u.shape != t.shape)
                    invalid(fmt::format("tensor {} is {} [{}] in {} but {} [{}] in {} (one tensor, one description)",
                            t.id, u.dtype, fmt::join(u.shape, ","), it->second.second->where(), t.dtype,
                            fmt::join(t.shape, ","), op.where()));
            }
}

std::vector<RawOp> parse_ops(const json& root) {
    if (!root.is_object()) invalid("the top level is not a JSON object");
    if (!root.contains("graph") || !root["graph"].is_array()) invalid("missing \"graph\" (an array of ops)");
    // engine_kind and version are ignored (the case runs on the backend's engine); the math
    // mode changes the numbers, so only strict is accepted.
    if (root.contains("fpmath_mode")) {
        const json& m = root["fpmath_mode"];
        if (!m.is_string()) invalid(fmt::format("\"fpmath_mode\" is not a string ({})", m.dump()));
        if (m.get<std::string>() != "strict")
            unimplemented(fmt::format("fpmath_mode={} is not supported (strict only)", m.get<std::string>()));
    }
    std::vector<RawOp> ops;
    std::size_t n = 0;
    // Inputs and outputs per op kind (oneDNN Graph API op definitions); the matcher relies on them.
    const auto check_arity = [](const RawOp& op) {
        static const std::map<std::string, std::array<std::size_t, 4>> arity{{"MatMul", {2, 2, 1, 1}},
            {"Multiply", {2, 2, 1, 1}}, {"Divide", {2, 2, 1, 1}}, {"Add", {2, 2, 1, 1}}, {"Subtract", {2, 2, 1, 1}},
            {"SoftMax", {1, 1, 1, 2}}, {"Exp", {1, 1, 1, 1}}, {"TypeCast", {1, 1, 1, 1}}, {"ReduceSum", {1, 1, 1, 1}},
            {"SoftMaxBackward", {2, 2, 1, 1}}, {"End", {1, 1, 0, 0}},
            // Dropout: src, seed, offset, probability -> dst [, mask] (the mask is UNIMPLEMENTED).
            {"Dropout", {4, 4, 1, 2}}};
        const auto it = arity.find(op.kind);
        if (it == arity.end()) return;  // an unknown kind is UNIMPLEMENTED before matching
        const auto [in_lo, in_hi, out_lo, out_hi] = it->second;
        if (op.ins.size() < in_lo || op.ins.size() > in_hi || op.outs.size() < out_lo || op.outs.size() > out_hi)
            invalid(fmt::format("{}: a {} op takes {}{} input(s) and {}{} output(s), this one has {} and {}", op.where(),
                    op.kind, in_lo, in_hi != in_lo ? fmt::format("-{}", in_hi) : "", out_lo,
                    out_hi != out_lo ? fmt::format("-{}", out_hi) : "", op.ins.size(), op.outs.size()));
    };
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
        check_arity(op);
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

bool known_kind(const std::string& k) {
    static const std::set<std::string> kinds{"MatMul", "Multiply", "Divide", "Add", "Subtract", "SoftMax", "Exp",
        "TypeCast", "ReduceSum", "SoftMaxBackward", "End", "Dropout", "GenIndex", "GreaterEqual", "Select"};
    return kinds.count(k) != 0;
}

}  // namespace sdpa::graph_json
