#include "graph/json_import.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/geometry.hpp"
#include "core/splitmix.hpp"
#include "graph/sdpa_graph.hpp"
#include "core/validate.hpp"
#include "graph/json_graph.hpp"
#include "graph/json_match.hpp"
#include "graph/json_rewrite.hpp"

namespace sdpa {

namespace {

using namespace graph_json;

std::string shape_str(const dims_t& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

/// The [B,H,S,D] strides of file tensor t for a role of dims `want`: a 4-D tensor's own, a 5-D
/// GQA tensor's [B,H_kv,G,S,D] strides with H_kv and G merged into one head stride. When t's
/// shape is not `want` (an output whose shape --in-shapes changed), its memory order applied to
/// `want`. nullopt when t gives no strides (the dense default applies). UNIMPLEMENTED when the
/// 5-D head strides cannot be merged (h = h_kv * G + g is not one stride).
std::optional<std::array<std::int64_t, 4>> file_strides(const RawTensor& t, const std::array<std::int64_t, 4>& want,
        std::string_view pname) {
    if (t.layout != "strided" || t.stride.empty() || t.stride.size() != t.shape.size()) return std::nullopt;
    dims_t shape = t.shape, stride = t.stride;
    if (shape.size() == 5) {
        const std::int64_t n1 = shape[1], n2 = shape[2], s1 = stride[1], s2 = stride[2];
        std::int64_t merged = s2;
        if (n2 == 1) merged = s1;
        else if (n1 != 1 && s1 != saturating_mul(n2, s2))
            unimplemented(fmt::format("tensor {} ({}): 5-D strides {} of shape {} do not merge H_kv and G into one head "
                                      "stride", t.id, pname, shape_str(stride), shape_str(shape)));
        shape = {shape[0], saturating_mul(n1, n2), shape[3], shape[4]};
        stride = {stride[0], merged, stride[3], stride[4]};
    }
    if (shape.size() != 4) return std::nullopt;
    std::array<std::int64_t, 4> out{stride[0], stride[1], stride[2], stride[3]};
    if (!std::equal(shape.begin(), shape.end(), want.begin())) {  // stale shape: keep the memory order
        const dims_t s = tag_strides({want.begin(), want.end()}, memory_tag(shape, stride));
        std::copy(s.begin(), s.end(), out.begin());
    }
    return out;
}

/// The matched graph inputs as the case language's shape rules read them (core/validate.hpp): 4-D
/// [B,H,S,D], a 5-D GQA tensor [B,H_kv,G,S,D] with H_kv and G merged into one head dim.
GraphShapes shapes_of(const Match& m) {
    auto desc = [&](const std::map<GraphPort, RawTensor>& ports, GraphPort port) {
        const auto it = ports.find(port);
        if (it == ports.end()) return TensorDesc{};
        dims_t d = it->second.shape;
        if (d.size() == 5) d = {d[0], saturating_mul(d[1], d[2]), d[3], d[4]};
        return TensorDesc{true, d, it->second.dtype};
    };
    GraphShapes g;
    g.Q = desc(m.in, GraphPort::Q);
    g.K = desc(m.in, GraphPort::K);
    g.V = desc(m.in, GraphPort::V);
    if (m.dir == Dir::bwd) {  // the forward's O and stats are outputs, checked against the graph later
        g.O = desc(m.in, GraphPort::O);
        g.dO = desc(m.in, GraphPort::dO);
        g.stats = desc(m.in, GraphPort::stats);
    }
    // A 5-D mask broadcast over only one of H_kv and G has no 4-D form: derive() names it.
    if (const auto it = m.in.find(GraphPort::mask);
            it == m.in.end() || it->second.shape.size() != 5 || (it->second.shape[1] == 1) == (it->second.shape[2] == 1))
        g.bias = desc(m.in, GraphPort::mask);
    return g;
}

/// The sizes and io dtype of p from Q, K and V (4-D MHA or 5-D GQA [B,H_kv,G,S,D]), after the
/// case language's shape rules (core/validate.hpp) on the file's graph inputs.
void derive_dims(const Match& m, Problem& p) {
    const RawTensor& q = m.in.at(GraphPort::Q);
    const RawTensor& k = m.in.at(GraphPort::K);
    const RawTensor& v = m.in.at(GraphPort::V);
    // The case language's shape rules first, on the file's tensors (5-D GQA forms merged).
    if (q.shape.size() == k.shape.size() && q.shape.size() == v.shape.size() && (q.shape.size() == 4 || q.shape.size() == 5))
        if (auto err = validate_shapes(shapes_of(m))) {
            if (const auto mk = m.in.find(GraphPort::mask); mk != m.in.end() && err->starts_with("bias rule"))
                invalid(fmt::format("tensor {} (mask) {} with Q {}, K {}, V {}: {}", mk->second.id,
                        shape_str(mk->second.shape), shape_str(q.shape), shape_str(k.shape), shape_str(v.shape), *err));
            invalid(fmt::format("tensor {} (Q) {}, {} (K) {}, {} (V) {}: {}", q.id, shape_str(q.shape), k.id,
                    shape_str(k.shape), v.id, shape_str(v.shape), *err));
        }
    Dims& d = p.dims;
    if (q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4) {
        if (k.shape[1] != q.shape[1])
            unimplemented(fmt::format("tensor {} (K): {} heads broadcast against {} query heads in 4-D; use the 5-D GQA form",
                    k.id, k.shape[1], q.shape[1]));
        d = Dims{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
    } else if (q.shape.size() == 5 && k.shape.size() == 5 && v.shape.size() == 5) {
        d = Dims{q.shape[0], saturating_mul(q.shape[1], q.shape[2]), k.shape[1], q.shape[3], k.shape[3], q.shape[4], v.shape[4]};
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
}

/// The scale: dtype, one value (benchdnn's for `seed`), device tensor or host scalar.
void derive_scale(const Match& m, Problem& p, std::uint64_t seed) {
    const RawTensor& sc = m.in.at(GraphPort::scale);
    const auto sdt = float_dtype(sc.dtype);
    if (!sdt) unimplemented(fmt::format("tensor {} (scale): dtype {} is not supported", sc.id, sc.dtype));
    if (*sdt != p.dt) p.scale_dt = *sdt;
    std::int64_t n = 1;
    for (auto x : sc.shape) n *= x;
    if (n != 1) unimplemented(fmt::format("tensor {} (scale): shape {} is not one value", sc.id, shape_str(sc.shape)));
    p.scale = benchdnn_scale(p.scale_op, seed);
    p.scale_host_scalar = sc.property == "host_scalar";
}

/// The graph forms beyond the plain pattern: Dropout (its values `dropout`, or the importer's
/// defaults for `seed`), dMask, the implicit causal mask.
void derive_forms(const Match& m, Problem& p, std::uint64_t seed, const std::optional<Dropout>& dropout) {
    if (m.in.count(GraphPort::dropout_seed)) {
        p.dropout = dropout.value_or(Dropout{kImportDropoutP, seed, kImportDropoutOffset});
        p.dropout_device_scalars = m.in.at(GraphPort::dropout_seed).property != "host_scalar";
    }
    if (m.out.count(GraphPort::dMask)) {
        if (!m.in.count(GraphPort::mask))
            unimplemented(fmt::format("tensor {} (dMask): a mask gradient without a mask tensor", m.out.at(GraphPort::dMask).id));
        p.dmask = true;
    }
    if (m.implicit_causal) {
        p.mask = *m.implicit_causal;
        p.implicit_mask = true;
    }

}

/// The additive mask: dtype, broadcast shape (numpy rules against the scores), benchdnn's fill.
void derive_mask(const RawTensor& mk, Problem& p) {
    const Dims& d = p.dims;
    const auto mdt = float_dtype(mk.dtype);
    if (!mdt) unimplemented(fmt::format("tensor {} (mask): dtype {} is not supported", mk.id, mk.dtype));
    p.mask = Mask::bias;
    if (*mdt != p.dt) p.mask_dt = *mdt;
    const dims_t& s = mk.shape;
    const bool gqa = d.H_kv != d.H_q;
    // The scores' shape in the graph's rank; the mask must broadcast to it (numpy rules).
    const dims_t scores = graph_view(p, geometry(p).at(Role::scores)).dims;
    bool fits = s.size() == scores.size();
    for (std::size_t i = 0; fits && i < s.size(); ++i) fits = s[i] == 1 || s[i] == scores[i];
    if (!fits || s.back() != d.S_kv)
        invalid(fmt::format("tensor {} (mask): shape {} does not broadcast to the scores {} (B={} H_q={} H_kv={} "
                            "S_q={} S_kv={})",
                mk.id, shape_str(s), shape_str(scores), d.B, d.H_q, d.H_kv, d.S_q, d.S_kv));
    const std::int64_t mb = s[0], ms = s[s.size() - 2];
    std::int64_t mh = s[1];
    if (gqa) {
        if (saturating_mul(s[1], s[2]) != 1 && saturating_mul(s[1], s[2]) != d.H_q)
            unimplemented(fmt::format("tensor {} (mask): shape {} broadcasts over only one of H_kv and G (per-head "
                                      "or shared masks only)", mk.id, shape_str(s)));
        mh = saturating_mul(s[1], s[2]);
    }
    const bool per_b = mb == d.B && d.B > 1, per_h = mh == d.H_q && d.H_q > 1, row = ms == 1;
    static constexpr BiasShape full[2][2] = {{BiasShape::one, BiasShape::h}, {BiasShape::b, BiasShape::bh}};
    static constexpr BiasShape rows[2][2] = {{BiasShape::one_row, BiasShape::h_row}, {BiasShape::b_row, BiasShape::bh_row}};
    p.bias_shape = (row ? rows : full)[per_b][per_h];
    // benchdnn: a mask with one row (S_q dim 1) is a padding mask, filled with zeros;
    // any other is causal with the last row fully masked.
    p.mask_fill = row ? MaskFill::zero : MaskFill::causal_last_row;
}

/// dMask's shape: the mask's (dS summed), not the scores' of oneDNN's End on the full dS.
void check_dmask_shape(const Match& m, const Problem& p) {
    // oneDNN's End on dS gives the scores' shape; sdpabench's dMask has the mask's (summed).
    const RawTensor& t = m.out.at(GraphPort::dMask);
    const Geometry g = geometry(p);
    const dims_t want = graph_view(p, g.at(Role::dMask)).dims, scores = graph_view(p, g.at(Role::scores)).dims;
    if (t.shape != want && t.shape == scores)
        unimplemented(fmt::format("tensor {} (dMask): the mask gradient has the scores' shape {} but the mask is "
                                  "broadcast as {}: sdpabench's dMask has the mask's shape (dS summed over the "
                                  "broadcast axes: ReduceSum, keep_dims)", t.id, shape_str(t.shape), shape_str(want)));
}

/// Every port's strides, as the [B,H,S,D] strides of its geometry role (5-D GQA forms merged).
void derive_strides(const Match& m, Problem& p) {
    const Geometry dense_geo = geometry(p);
    for (const auto* ports : {&m.in, &m.out})
        for (const auto& [port, t] : *ports)
            if (const auto role = port_role(p, port))
                if (const auto st = file_strides(t, dense_geo.at(*role).dims, port_name(port)))
                    p.strides[*role] = TensorLayout{TensorLayout::Kind::strides, {0, 1, 2, 3}, *st};

}

/// Every port against the graph sdpabench builds for p (shapes, dtypes, properties, strides),
/// and the intermediates' dtypes.
void check_ports(const Match& m, const Problem& p, bool check_outputs) {
    const RawTensor& q = m.in.at(GraphPort::Q);
    const RawTensor& k = m.in.at(GraphPort::K);
    const RawTensor& v = m.in.at(GraphPort::V);
    const SdpaGraphDesc want = describe_sdpa_graph(p);
    auto check = [&](GraphPort port, const RawTensor& t, const GraphTensor& w, bool shape) {
        const auto pname = port_name(port);
        if (shape && t.shape != w.dims && port != GraphPort::scale)
            invalid(fmt::format("tensor {} ({}): shape {} does not match {} implied by Q {}, K {}, V {}", t.id, pname,
                    shape_str(t.shape), shape_str(w.dims), shape_str(q.shape), shape_str(k.shape), shape_str(v.shape)));
        if (t.dtype != fmt::format("{}", w.dt))
            unimplemented(fmt::format("tensor {} ({}): dtype {} (sdpabench's graph has {} here)", t.id, pname, t.dtype, w.dt));
        // sdpabench binds the dropout scalars as host scalars and every other port as a device
        // tensor; a graph asking for the other kind would run another kernel path.
        if (w.host_scalar != (t.property == "host_scalar"))
            unimplemented(fmt::format("tensor {} ({}): property_type {}: sdpabench binds it as {}", t.id, pname,
                    t.property, w.host_scalar ? "a host scalar (property_type host_scalar, shape [])" : "a device tensor"));
        if (t.layout != "strided" && t.layout != "undef" && t.layout != "any")
            unimplemented(fmt::format("tensor {} ({}): layout_type {} is not supported", t.id, pname, t.layout));
        if (shape && port != GraphPort::scale && t.layout == "strided" && t.stride.size() == t.shape.size())
            for (std::size_t i = 0; i < t.shape.size(); ++i)
                if (t.shape[i] > 1 && t.stride[i] != w.strides[i])
                    unimplemented(fmt::format("tensor {} ({}): strides {} of shape {} are not those of one [B,H,S,D] "
                                              "tensor in the graph's rank ({})", t.id, pname, shape_str(t.stride),
                            shape_str(t.shape), shape_str(w.strides)));
    };
    for (const auto& [port, t] : m.in) {
        if (port == GraphPort::O && !want.inputs.count(port)) continue;
        const bool scalar = port == GraphPort::dropout_seed || port == GraphPort::dropout_offset ||
                port == GraphPort::dropout_p || port == GraphPort::mask_fill || port == GraphPort::causal_s_kv ||
                port == GraphPort::causal_s_q;
        check(port, t, want.inputs.at(port), !scalar);
        if (scalar && !t.shape.empty() && t.shape != dims_t{1})
            unimplemented(fmt::format("tensor {} ({}, property_type {}): shape {} is not one value (a host scalar of "
                                      "shape [] or a [1] tensor)", t.id, port_name(port), t.property, shape_str(t.shape)));
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
}

/// Derives the problem from the matched ports and checks every port against the graph
/// sdpabench would build for it. A graph with Dropout ops gets p.dropout = `dropout`, or when
/// that is empty {kImportDropoutP, seed, kImportDropoutOffset}; its seed, offset and
/// probability tensors must have the dtypes of describe_sdpa_graph's (s64, s64, f32) and hold
/// one value (shape [], benchdnn's [1] also read). Throws ImportError naming the tensor.
Problem derive(const Match& m, bool check_outputs, std::uint64_t seed, const std::optional<Dropout>& dropout) {
    Problem p;
    p.dir = m.dir;
    p.scale_op = m.scale_op;
    p.seed = seed;
    derive_dims(m, p);
    derive_scale(m, p, seed);
    derive_forms(m, p, seed, dropout);
    if (const auto it = m.in.find(GraphPort::mask); it != m.in.end()) derive_mask(it->second, p);
    if (p.dmask) check_dmask_shape(m, p);
    derive_strides(m, p);
    check_ports(m, p, check_outputs);
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
    const std::size_t pick = static_cast<std::size_t>(splitmix64(seed) % 3);
    return op == ScaleOp::mul ? kMul[pick] : kDiv[pick];
}

std::optional<std::string> check_id_rewrites(std::string_view text) {
    std::string err;
    parse_id_rewrites(text, &err);
    if (err.empty()) return std::nullopt;
    return err;
}

std::optional<std::string> check_op_attrs(std::string_view text) {
    std::string err;
    parse_op_attrs(text, &err);
    if (err.empty()) return std::nullopt;
    return err;
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
    } catch (const json::exception& e) {  // e.g. out_of_range.406: a number like 4E2422 overflows
        r.status = Status::invalid_arguments;
        r.error = fmt::format("{}: error: malformed JSON: {}", file, e.what());
        return r;
    }
    try {
        std::vector<RawOp> ops = parse_ops(root);
        rewrite_op_kinds(ops, rw.op_kinds);
        rewrite_op_attrs(ops, rw.op_attrs);
        rewrite_dtypes(ops, rw.dt_ids);
        rewrite_properties(ops, rw.properties);
        rewrite_shapes(ops, rw.in_shapes);
        ops = topo_sort(std::move(ops));
        check_tensors(ops);
        Graph g(std::move(ops));
        const Match m = match(g);
        for (const RawOp& op : g.ops())
            if (!g.used(op)) invalid(fmt::format("{}: not part of the SDPA training pattern", op.where()));
        Problem p = derive(m, rw.in_shapes.empty(), seed, rw.dropout);
        if (rw.dt) {
            p.dt = *rw.dt;
            p.mask_dt.reset();
            p.scale_dt.reset();
        }
        if (rw.mb > 0 && rw.mb != p.dims.B) {
            // A file batch of 1 says nothing about the batch stride: make it the natural one.
            const bool from_one = p.dims.B == 1;
            p.dims.B = rw.mb;
            const Geometry g = geometry(p);
            for (auto& [role, l] : p.strides)
                if (from_one && l.kind == TensorLayout::Kind::strides && g.at(role).dims[0] > 1) {
                    TensorGeom inner = g.at(role);
                    inner.dims[0] = 1;
                    l.strides[0] = inner.span();
                }
        }
        std::string name = std::filesystem::path(file).stem().string();
        for (char& ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') ch = '_';
        p.name = name;
        canonicalize_layouts(p);
        if (auto err = validate(p)) invalid(*err);
        r.prb = std::move(p);
    } catch (const ImportError& e) {
        r.status = e.status;
        r.error = fmt::format("{}: error: {}", file, e.msg);
    } catch (const json::exception& e) {  // a value of an unexpected JSON type deep in the graph
        r.status = Status::invalid_arguments;
        r.error = fmt::format("{}: error: {}", file, e.what());
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
