#include "graph/json_rewrite.hpp"

#include "core/keyed_list.hpp"
#include "core/parse_number.hpp"

#include "core/geometry.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <type_traits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa::graph_json {

namespace {

/// Parses "AxBxC" (or "scalar": rank 0) into dims; false when malformed.
bool parse_dims(std::string_view s, dims_t& out) {
    out.clear();
    if (s == "scalar") return true;
    std::size_t pos = 0;
    while (true) {
        const std::size_t x = s.find('x', pos);
        const std::string_view part = s.substr(pos, x == s.npos ? s.npos : x - pos);
        const auto v = parse_number<std::int64_t>(part);
        if (!v || *v < 0) return false;
        out.push_back(*v);
        if (x == s.npos) return true;
        pos = x + 1;
    }
}

}  // namespace

namespace {

/// One entry of an "ID:VALUE[+ID:VALUE...]" knob: the entry as written, its id (nullopt when
/// there is no ':' or the part before it is not an unsigned integer) and the text after the ':'.
struct IdEntry {
    std::string_view whole;
    std::optional<std::size_t> id;
    std::string_view value;
};

/// Splits `text` at '+' and each entry at its first ':' (no entries for empty text).
std::vector<IdEntry> split_id_entries(std::string_view text) {
    std::vector<IdEntry> out;
    if (text.empty()) return out;
    for (const KeyedItem& item : split_keyed_list(text)) {
        IdEntry e;
        e.whole = item.whole;
        if (item.keyed) {
            e.id = parse_number<std::size_t>(item.key);
            e.value = item.value;
        }
        out.push_back(e);
    }
    return out;
}

}  // namespace

std::vector<ShapeRewrite> parse_in_shapes(std::string_view text, std::string* err) {
    std::vector<ShapeRewrite> out;
    for (const IdEntry& ie : split_id_entries(text)) {
        const std::string_view e = ie.whole;
        if (!ie.id) {
            *err = fmt::format("'{}' is not ID:SHAPE[*STRIDES|*TAG]", e);
            return {};
        }
        ShapeRewrite r;
        r.id = *ie.id;
        const std::string_view v = ie.value;
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
    }
    return out;
}

std::string memory_tag(const dims_t& shape, const dims_t& stride) {
    std::string tag;
    for (std::size_t i = 0; i < shape.size(); ++i) tag += static_cast<char>('a' + i);
    if (stride.size() != shape.size()) return tag;
    std::stable_sort(tag.begin(), tag.end(), [&](char x, char y) { return stride[x - 'a'] > stride[y - 'a']; });
    return tag;
}

dims_t tag_strides(const dims_t& shape, const std::string& tag) {
    dims_t s(shape.size(), 1);
    std::int64_t n = 1;
    for (std::size_t k = tag.size(); k-- > 0;) {
        const auto dim = static_cast<std::size_t>(tag[k] - 'a');
        s[dim] = n;
        n = saturating_mul(n, std::max<std::int64_t>(shape[dim], 1));
    }
    return s;
}

std::vector<IdRewrite> parse_id_rewrites(std::string_view text, std::string* err) {
    std::vector<IdRewrite> out;
    for (const IdEntry& e : split_id_entries(text)) {
        const bool word = !e.value.empty() && std::all_of(e.value.begin(), e.value.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
        });
        if (!e.id || !word) {
            *err = fmt::format("'{}' is not ID:VALUE", e.whole);
            return {};
        }
        out.push_back(IdRewrite{*e.id, std::string(e.value)});
    }
    return out;
}

namespace {

/// The entries of `text` (a per-id knob `knob`), each value checked against `allowed` (error
/// "unknown WHAT 'V'" plus `hint`), written into field `field` of every occurrence of its tensor.
void retag_tensors(std::vector<RawOp>& ops, std::string_view text, std::string_view knob,
        const std::set<std::string>& allowed, std::string_view what, std::string_view hint,
        std::string RawTensor::*field) {
    std::string err;
    const auto rws = parse_id_rewrites(text, &err);
    if (!err.empty()) invalid(fmt::format("--{}: {}", knob, err));
    for (const auto& r : rws) {
        if (!allowed.count(r.value))
            invalid(fmt::format("--{}: tensor {}: unknown {} '{}'{}", knob, r.id, what, r.value, hint));
        bool found = false;
        for (auto& op : ops)
            for (auto* ts : {&op.ins, &op.outs})
                for (auto& t : *ts)
                    if (t.id == r.id) {
                        t.*field = r.value;
                        found = true;
                    }
        if (!found) invalid(fmt::format("--{}: no tensor {} in the graph", knob, r.id));
    }
}

}  // namespace

void rewrite_dtypes(std::vector<RawOp>& ops, std::string_view text) {
    // oneDNN graph's data type names (dnnl_graph_types.h logical_tensor data types).
    static const std::set<std::string> kTypes{"undef", "f32", "f16", "bf16", "s8", "u8", "s32", "s64", "boolean",
        "f8_e4m3", "f8_e5m2", "f4_e2m1", "f4_e3m0", "u4", "s4", "e8m0"};
    retag_tensors(ops, text, "dt", kTypes, "data type", "", &RawTensor::dtype);
}

void rewrite_properties(std::vector<RawOp>& ops, std::string_view text) {
    retag_tensors(ops, text, "tensor-property", property_types(), "property", fmt::format(" ({})", property_type_list()),
            &RawTensor::property);
}

void rewrite_op_kinds(std::vector<RawOp>& ops, std::string_view text) {
    std::string err;
    const auto rws = parse_id_rewrites(text, &err);
    if (!err.empty()) invalid(fmt::format("--op-kind: {}", err));
    for (const auto& r : rws)
        if (RawOp& op = op_by_id(ops, r.id, "op-kind"); r.value != "undef") op.kind = r.value;
}

std::vector<AttrRewrite> parse_op_attrs(std::string_view text, std::string* err) {
    std::vector<AttrRewrite> out;
    auto all = [](std::string_view s, auto pred) {
        return !s.empty() && std::all_of(s.begin(), s.end(), [&](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || pred(ch);
        });
    };
    for (const IdEntry& e : split_id_entries(text)) {
        const auto bad = [&] {
            *err = fmt::format("'{}' is not ID:ATTR:VALUE[*ATTR:VALUE...]", e.whole);
            return std::vector<AttrRewrite>{};
        };
        if (!e.id) return bad();
        std::size_t pos = 0;
        while (true) {  // ATTR:VALUE pieces separated by '*'
            const std::size_t star = e.value.find('*', pos);
            const std::string_view piece = e.value.substr(pos, star == e.value.npos ? e.value.npos : star - pos);
            const std::size_t colon = piece.find(':');
            if (colon == piece.npos) return bad();
            const std::string_view name = piece.substr(0, colon), value = piece.substr(colon + 1);
            if (!all(name, [](char) { return false; }) ||
                    !all(value, [](char ch) { return ch == '-' || ch == '.'; }))
                return bad();
            out.push_back(AttrRewrite{*e.id, std::string(name), std::string(value)});
            if (star == e.value.npos) break;
            pos = star + 1;
        }
    }
    return out;
}

namespace {

/// `s` split at 'x' into numbers of type T ("1x1x96x1"), or nullopt when a piece is not one.
template <typename T>
std::optional<std::vector<T>> parse_number_list(std::string_view s) {
    std::vector<T> out;
    std::size_t pos = 0;
    while (true) {
        const std::size_t x = s.find('x', pos);
        const auto v = parse_number<T>(s.substr(pos, x == s.npos ? s.npos : x - pos));
        if (!v) return std::nullopt;
        out.push_back(*v);
        if (x == s.npos) return out;
        pos = x + 1;
    }
}

/// The oneDNN attribute type of a value written for an attribute the op does not have.
std::string infer_attr_type(std::string_view v) {
    if (parse_number<std::int64_t>(v)) return "s64";
    if (v.find('x') != v.npos && parse_number_list<std::int64_t>(v)) return "s64[]";
    if (parse_number<float>(v)) return "f32";
    return "string";
}

}  // namespace

void rewrite_op_attrs(std::vector<RawOp>& ops, std::string_view text) {
    std::string err;
    const auto rws = parse_op_attrs(text, &err);
    if (!err.empty()) invalid(fmt::format("--op-attrs: {}", err));
    for (const auto& r : rws) {
        RawOp& op = op_by_id(ops, r.id, "op-attrs");
        json& attrs = op.attrs;
        const json* old = attrs.contains(r.name) ? &attrs.at(r.name) : nullptr;
        const bool typed = old && old->is_object() && old->contains("type") && old->at("type").is_string();
        const std::string type = typed ? old->at("type").get<std::string>() : infer_attr_type(r.value);
        const auto not_a = [&](std::string_view what) {
            invalid(fmt::format("--op-attrs: {}: attribute '{}' is {}: '{}' is not {}", op.where(), r.name, type,
                    r.value, what));
        };
        json v;
        if (type == "s64") {
            const auto n = parse_number<std::int64_t>(r.value);
            if (!n) not_a("an integer");
            v = *n;
        } else if (type == "bool") {
            if (r.value == "1" || r.value == "true") v = 1;
            else if (r.value == "0" || r.value == "false") v = 0;
            else not_a("0 or 1");
        } else if (type == "f32") {
            const auto f = parse_number<float>(r.value);
            if (!f) not_a("a finite number");
            v = *f;
        } else if (type == "string") {
            v = r.value;
        } else if (type == "s64[]") {
            const auto l = parse_number_list<std::int64_t>(r.value);
            if (!l) not_a("a list of integers like 1x1x32x1");
            v = *l;
        } else if (type == "f32[]") {
            const auto l = parse_number_list<float>(r.value);
            if (!l) not_a("a list of numbers like 0.5x2");
            v = *l;
        } else {
            invalid(fmt::format("--op-attrs: {}: attribute '{}' has type '{}', which --op-attrs cannot write",
                    op.where(), r.name, type));
        }
        attrs[r.name] = json{{"type", type}, {"value", std::move(v)}};
    }
}

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
                    const std::string old_tag = memory_tag(t.shape, t.stride);
                    if (r.shape) t.shape = *r.shape;
                    if (r.strides) {
                        if (r.strides->size() != t.shape.size())
                            invalid(fmt::format("--in-shapes: tensor {}: strides {} have {} values for the rank-{} "
                                                "shape {}", r.id, fmt::join(*r.strides, "x"), r.strides->size(),
                                    t.shape.size(), fmt::join(t.shape, "x")));
                        t.stride = *r.strides;
                    } else {
                        std::string tag = r.tag;
                        if (tag.empty())  // a shape alone keeps the memory order (plain when the rank changed)
                            tag = old_tag.size() == t.shape.size() ? old_tag : memory_tag(t.shape, {});
                        std::string sorted = tag;
                        std::sort(sorted.begin(), sorted.end());
                        if (sorted != memory_tag(t.shape, {}))
                            invalid(fmt::format("--in-shapes: tensor {}: tag {} is not a permutation of {} for the "
                                                "rank-{} shape {}", r.id, tag, memory_tag(t.shape, {}), t.shape.size(),
                                    fmt::join(t.shape, "x")));
                        t.stride = tag_strides(t.shape, tag);
                    }
                    t.layout = "strided";
                }
    }
}

}  // namespace sdpa::graph_json
