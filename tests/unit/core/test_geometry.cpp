// The geometry model (core/geometry.hpp) and every consumer's view of it: the fill, the memory
// estimate, the bytes count, the shape validation, the vendor-neutral graph (and the oneDNN
// logical tensors built from it), the cuDNN mapping and the JSON export and import, for every
// bias shape, several layouts (bhsd, bshd, per-tensor tags, packed QKV, explicit strides with a
// stride-0 batch) and every GQA form.
#include "driver/knobs.hpp"
#include "core/geometry.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "backends/cudnn/cudnn_mapping.hpp"
#include "core/flops.hpp"
#include "core/memory_estimate.hpp"
#include "graph/sdpa_graph.hpp"
#include "core/validate.hpp"
#include "driver/case_parser.hpp"
#include "graph/json_export.hpp"
#include "graph/json_import.hpp"
#include "fillers/fill.hpp"
#ifdef SDPABENCH_HAVE_ONEDNN
#include "backends/onednn/onednn_graph.hpp"
#endif

namespace sdpa {
namespace {

using A4 = std::array<std::int64_t, 4>;
using nlohmann::json;

Problem make(Dims d, Dir dir, Mask mask = Mask::none) {
    Problem p;
    p.dims = d;
    p.dir = dir;
    p.mask = mask;
    p.dt = DType::bf16;
    return p;
}

TEST(Geometry, RolesDimsAndDirections) {
    const Dims d{2, 8, 2, 16, 24, 32, 16};
    Problem p = make(d, Dir::fwd_i);
    Geometry g = geometry(p);
    EXPECT_EQ(g.at(Role::Q).dims, (A4{2, 8, 16, 32}));
    EXPECT_EQ(g.at(Role::K).dims, (A4{2, 2, 24, 32}));
    EXPECT_EQ(g.at(Role::V).dims, (A4{2, 2, 24, 16}));
    EXPECT_EQ(g.at(Role::O).dims, (A4{2, 8, 16, 16}));
    EXPECT_EQ(g.at(Role::scores).dims, (A4{2, 8, 16, 24}));
    EXPECT_FALSE(g.has(Role::stats));
    EXPECT_FALSE(g.has(Role::dQ));
    EXPECT_TRUE(g.at(Role::O).output && !g.at(Role::O).input);
    EXPECT_EQ(g.at(Role::Q).type, ElemType::bf16);
    p.dir = Dir::fwd_t;
    g = geometry(p);
    EXPECT_EQ(g.at(Role::stats).dims, (A4{2, 8, 16, 1}));
    EXPECT_EQ(g.at(Role::stats).type, ElemType::f32);
    EXPECT_TRUE(g.at(Role::stats).output);
    p.dir = Dir::bwd;
    g = geometry(p);
    EXPECT_TRUE(g.at(Role::O).input && !g.at(Role::O).output);
    EXPECT_TRUE(g.at(Role::stats).input && !g.at(Role::stats).output);
    EXPECT_EQ(g.at(Role::dO).dims, g.at(Role::O).dims);
    EXPECT_EQ(g.at(Role::dQ).dims, g.at(Role::Q).dims);
    EXPECT_EQ(g.at(Role::dK).dims, g.at(Role::K).dims);
    EXPECT_EQ(g.at(Role::dV).dims, g.at(Role::V).dims);
    EXPECT_EQ(g.outputs().size(), 3u);
    p.dir = Dir::fwd_bwd;  // O and stats: written by the forward, read by the backward
    g = geometry(p);
    EXPECT_TRUE(g.at(Role::O).input && g.at(Role::O).output);
    EXPECT_TRUE(g.at(Role::stats).input && g.at(Role::stats).output);
    p.seq_len_kv = {24, 3};
    g = geometry(p);
    EXPECT_EQ(g.at(Role::seq_len_q).dims, (A4{2, 1, 1, 1}));
    EXPECT_EQ(g.at(Role::seq_len_kv).type, ElemType::s32);
    EXPECT_EQ(g.at(Role::seq_len_kv).strides, (A4{1, 1, 1, 1}));
    EXPECT_THROW(geometry(make(d, Dir::fwd_i)).at(Role::dQ), std::logic_error);
}

TEST(Geometry, EveryBiasShape) {
    const Dims d{2, 4, 2, 8, 12, 16, 16};
    const std::pair<BiasShape, A4> shapes[] = {{BiasShape::one, {1, 1, 8, 12}}, {BiasShape::b, {2, 1, 8, 12}},
        {BiasShape::bh, {2, 4, 8, 12}}, {BiasShape::h, {1, 4, 8, 12}}, {BiasShape::one_row, {1, 1, 1, 12}},
        {BiasShape::b_row, {2, 1, 1, 12}}, {BiasShape::h_row, {1, 4, 1, 12}}, {BiasShape::bh_row, {2, 4, 1, 12}}};
    for (const auto& [shape, dims] : shapes) {
        Problem p = make(d, Dir::fwd_t, Mask::bias);
        p.bias_shape = shape;
        p.mask_dt = DType::f32;
        const TensorGeom b = geometry(p).at(Role::bias);
        EXPECT_EQ(b.dims, dims) << format_as(shape);
        EXPECT_EQ(bias_dims(p), dims) << format_as(shape);
        EXPECT_TRUE(b.dense()) << format_as(shape);
        EXPECT_EQ(b.type, ElemType::f32);
        EXPECT_EQ(shapes_of(p).bias.dims, std::vector<std::int64_t>(dims.begin(), dims.end())) << format_as(shape);
    }
}

TEST(Geometry, LayoutTagsAndStrides) {
    const A4 dims{2, 3, 5, 4};
    EXPECT_EQ(layout_strides(dims, *parse_tensor_layout("bhsd"), 0), (A4{60, 20, 4, 1}));
    EXPECT_EQ(layout_strides(dims, *parse_tensor_layout("bshd"), 0), (A4{60, 4, 12, 1}));
    EXPECT_EQ(layout_strides(dims, *parse_tensor_layout("sbhd"), 0), (A4{12, 4, 24, 1}));
    EXPECT_EQ(layout_strides(dims, *parse_tensor_layout("bhds"), 0), (A4{60, 20, 1, 5}));  // a transposed K
    EXPECT_EQ(layout_strides(dims, *parse_tensor_layout("qkv"), 36), (A4{5 * 36, 4, 36, 1}));
    EXPECT_EQ(layout_strides(dims, *parse_tensor_layout("0x20x4x1"), 0), (A4{0, 20, 4, 1}));
    // The packed buffer's row pitch: H_q*D_qk + H_kv*D_qk + H_kv*D_v.
    EXPECT_EQ(qkv_pitch(Dims{1, 8, 2, 4, 4, 64, 32}), 8 * 64 + 2 * 64 + 2 * 32);
    Problem p = make(Dims{2, 4, 2, 16, 16, 8, 8}, Dir::bwd);
    p.strides = *parse_role_layouts("Q:qkv+K:qkv+V:qkv+stats:bshd+dO:bshd");
    const Geometry g = geometry(p);
    EXPECT_EQ(g.at(Role::Q).strides, (A4{16 * 64, 8, 64, 1}));
    EXPECT_EQ(g.at(Role::K).strides, (A4{16 * 64, 8, 64, 1}));
    EXPECT_EQ(g.at(Role::stats).strides, (A4{16 * 4, 1, 4, 1}));  // [B,S_q,H_q] order
    EXPECT_EQ(g.at(Role::dO).strides, (A4{16 * 32, 8, 32, 1}));
    EXPECT_EQ(g.at(Role::O).strides, (A4{4 * 16 * 8, 16 * 8, 8, 1}));  // O keeps the default
    EXPECT_EQ(g.at(Role::Q).span(), 1 * 16 * 64 + 3 * 8 + 15 * 64 + 7 + 1);
    EXPECT_GT(g.at(Role::Q).span(), g.at(Role::Q).elements());  // stride gaps between the rows
}

TEST(Geometry, LayoutSpellingsRoundTrip) {
    std::set<std::string> seen;
    std::string perm = "bdhs";
    do {
        const auto l = parse_tensor_layout(perm);
        ASSERT_TRUE(l) << perm;
        EXPECT_EQ(layout_name(*l), perm);
        seen.insert(perm);
    } while (std::next_permutation(perm.begin(), perm.end()));
    EXPECT_EQ(seen.size(), 24u);
    for (const char* t : {"qkv", "0x2048x64x1", "-3x1x1x1", "9223372036854775807x1x1x1"})
        EXPECT_EQ(layout_name(*parse_tensor_layout(t)), t);
    for (const char* t : {"bhs", "bhsdd", "bbsd", "1x2x3", "1x2x3x4x5", "1x2xx3", "ax1x1x1", "", "99999999999999999999x1x1x1"})
        EXPECT_FALSE(parse_tensor_layout(t)) << t;
    const RoleLayouts l = *parse_role_layouts("dV:bshd+Q:qkv+stats:0x1x4x1");
    EXPECT_EQ(role_layouts_name(l), "Q:qkv+stats:0x1x4x1+dV:bshd");  // role order
    EXPECT_EQ(parse_role_layouts("none")->size(), 0u);
    std::string why;
    EXPECT_FALSE(parse_role_layouts("O:qkv", &why));
    EXPECT_NE(why.find("qkv is the view of a packed Q/K/V projection buffer"), std::string::npos) << why;
    EXPECT_FALSE(parse_role_layouts("Q:bshd+Q:bhsd", &why));
    EXPECT_NE(why.find("Q is given twice"), std::string::npos) << why;
    EXPECT_FALSE(parse_role_layouts("scores:bhsd", &why));
    EXPECT_NE(why.find("unknown tensor 'scores'"), std::string::npos) << why;
    EXPECT_FALSE(parse_role_layouts("Q", &why));
}

TensorGeom out(A4 dims, A4 strides) {
    TensorGeom t;
    t.role = Role::dQ;
    t.dims = dims;
    t.strides = strides;
    t.output = true;
    return t;
}

TEST(Geometry, NonOverlapping) {
    EXPECT_TRUE(non_overlapping(out({2, 3, 4, 5}, {60, 20, 5, 1})));
    EXPECT_TRUE(non_overlapping(out({2, 3, 4, 5}, {100, 5, 25, 1})));  // a row pitch with gaps
    EXPECT_TRUE(non_overlapping(out({1, 1, 4, 5}, {0, 0, 5, 1})));     // stride 0 on size-1 dims is fine
    EXPECT_FALSE(non_overlapping(out({2, 1, 4, 5}, {0, 20, 5, 1})));   // stride 0 over a batch of 2
    EXPECT_FALSE(non_overlapping(out({1, 1, 4, 5}, {20, 20, 4, 1})));  // rows overlap by one element
    // Interleaved but injective (offsets 3i + 2j for i < 2, j < 3): the exact check accepts it.
    EXPECT_TRUE(non_overlapping(out({1, 1, 2, 3}, {6, 6, 3, 2})));
    EXPECT_FALSE(non_overlapping(out({1, 1, 3, 4}, {12, 12, 3, 2})));  // element (2,0) at 6 == element (0,3)
}

TEST(Geometry, ValidationRulesNameTheTensor) {
    Problem p = make(Dims{2, 2, 2, 4, 4, 4, 4}, Dir::bwd);
    p.strides = *parse_role_layouts("K:16x-4x4x1");
    EXPECT_EQ(validate(p), "stride rule: K has stride -4 in dimension h (strides [16,-4,4,1] for dims [2,2,4,4] in "
                           "[B,H,S,D] order); strides must be non-negative");
    p.strides = *parse_role_layouts("K:0x16x4x1+V:0x16x4x1");  // inputs may alias (an expanded K/V)
    EXPECT_EQ(validate(p), std::nullopt);
    p.strides = *parse_role_layouts("dK:0x16x4x1");  // an output may not
    EXPECT_EQ(validate(p), "overlap rule: dK strides [0,16,4,1] for dims [2,2,4,4] map distinct elements to the same "
                           "memory (a stride of 0 or overlapping rows); an output must not overlap itself");
    p.strides = *parse_role_layouts("dO:4611686018427387904x16x4x1");
    EXPECT_NE(validate(p)->find("size rule: dO with strides [4611686018427387904,16,4,1]"), std::string::npos)
            << *validate(p);
    p.dir = Dir::fwd_t;  // dO is not a tensor of the forward: its strides do not matter
    EXPECT_EQ(validate(p), std::nullopt);
}

TEST(Geometry, CanonicalSpellings) {
    Problem p = make(Dims{2, 4, 4, 8, 8, 16, 16}, Dir::bwd);
    p.strides = *parse_role_layouts("Q:512x16x64x1+K:bhsd+dQ:qkv+stats:32x8x1x1");
    canonicalize_layouts(p);
    // Q's strides are bshd's; K and stats are their defaults; dQ keeps qkv.
    EXPECT_EQ(role_layouts_name(p.strides), "Q:bshd+dQ:qkv");
    EXPECT_EQ(p.layout, Layout::bhsd);
    const Problem once = p;
    canonicalize_layouts(p);
    EXPECT_EQ(p, once);  // idempotent
    // Most io tensors bshd: --layout=bshd with the others as overrides.
    p.strides = *parse_role_layouts("Q:bshd+K:bshd+V:bshd+O:bshd+dO:bshd+dQ:bshd");
    canonicalize_layouts(p);
    EXPECT_EQ(p.layout, Layout::bshd);
    EXPECT_EQ(role_layouts_name(p.strides), "dK:bhsd+dV:bhsd");
    // With one head bshd and bhsd differ only in the stride of that size-1 dim: kept as given.
    p = make(Dims{2, 1, 1, 8, 8, 8, 8}, Dir::fwd_t);
    p.layout = Layout::bshd;
    canonicalize_layouts(p);
    EXPECT_EQ(p.layout, Layout::bshd);
    // Overrides of tensors the direction lacks are dropped.
    p.strides = *parse_role_layouts("dQ:bhds");
    canonicalize_layouts(p);
    EXPECT_TRUE(p.strides.empty());
    // Explicit strides no tag gives stay explicit.
    p.strides = *parse_role_layouts("K:0x64x8x1");
    canonicalize_layouts(p);
    EXPECT_EQ(role_layouts_name(p.strides), "K:0x64x8x1");
}

/// The layouts of the consumer matrix, as --layout and --strides would give them.
struct LayoutCase {
    const char* name;
    Layout layout;
    const char* strides;  ///< "K0" is replaced by a stride-0 batch for K and V
};
const LayoutCase kLayouts[] = {{"bhsd", Layout::bhsd, "none"}, {"bshd", Layout::bshd, "none"},
    {"mixed", Layout::bshd, "dO:bhsd+stats:bshd+K:bhds+dQ:sbhd"}, {"qkv", Layout::bhsd, "Q:qkv+K:qkv+V:qkv+dQ:qkv+dK:qkv+dV:qkv"},
    {"expanded_kv", Layout::bhsd, "K0"}};

Problem with_layout(Problem p, const LayoutCase& l) {
    p.layout = l.layout;
    if (std::string_view(l.strides) == "K0") {
        const Dims& d = p.dims;
        p.strides[Role::K] = TensorLayout{TensorLayout::Kind::strides, {0, 1, 2, 3}, {0, d.S_kv * d.D_qk, d.D_qk, 1}};
        p.strides[Role::V] = TensorLayout{TensorLayout::Kind::strides, {0, 1, 2, 3}, {0, d.S_kv * d.D_v, d.D_v, 1}};
        if (p.mask == Mask::bias)  // an expanded mask too: one row for every query
            p.strides[Role::bias] = TensorLayout{TensorLayout::Kind::strides, {0, 1, 2, 3},
                {bias_dims(p)[1] * d.S_kv, d.S_kv, 0, 1}};
    } else {
        p.strides = *parse_role_layouts(l.strides);
    }
    canonicalize_layouts(p);
    return p;
}

/// Every element of a role maps to the same memory through the graph's (4-D or 5-D) view.
void expect_same_memory(const Problem& p, const TensorGeom& t, const std::vector<std::int64_t>& dims,
        const std::vector<std::int64_t>& strides, const std::string& what) {
    const GraphView v = graph_view(p, t);
    ASSERT_EQ(dims, v.dims) << what;
    ASSERT_EQ(strides, v.strides) << what;
    const std::int64_t G = dims.size() == 5 ? dims[2] : 1;
    for (std::int64_t a = 0; a < t.dims[0]; ++a)
        for (std::int64_t h = 0; h < t.dims[1]; ++h)
            for (std::int64_t s = 0; s < t.dims[2]; ++s)
                for (std::int64_t d = 0; d < t.dims[3]; ++d) {
                    std::int64_t off = a * strides[0];
                    if (dims.size() == 5) off += (h / G) * strides[1] + (h % G) * strides[2] + s * strides[3] + d * strides[4];
                    else off += h * strides[1] + s * strides[2] + d * strides[3];
                    ASSERT_EQ(off, t.offset(a, h, s, d)) << what;
                }
}

/// The fill gives dense host tensors with the roles' dims; the memory estimate, the vendor buffers'
/// bytes and the bytes count agree with the roles' elements, spans and distinct elements; the
/// shapes validate.
void expect_fill_and_sizes(const Problem& p, const Geometry& g, const std::string& what) {
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    double host = 0;
    for (const TensorGeom* t : g.inputs())
        if (const Tensor* x = in.of(t->role)) {
            EXPECT_EQ(x->dims, t->dims) << what << " " << format_as(t->role);
            host += 4.0 * static_cast<double>(t->elements());
        }
    // The memory estimate and the bytes count.
    EXPECT_EQ(input_host_bytes(p), host) << what;
    double spans = 0;
    std::int64_t bytes = 0;
    for (const TensorGeom* t : g.all())
        if (t->input || t->output) {
            spans += static_cast<double>(t->span() * static_cast<std::int64_t>(size_of(t->type)));
            if (t->role != Role::seq_len_q && t->role != Role::seq_len_kv) {
                std::int64_t distinct = 1;  // a broadcast (stride-0) dim is read once
                for (std::size_t k = 0; k < 4; ++k) distinct *= t->strides[k] == 0 ? 1 : t->dims[k];
                bytes += distinct * static_cast<std::int64_t>(size_of(t->type));
            }
        }
    EXPECT_EQ(vendor_buffer_bytes(p), spans) << what;
    EXPECT_EQ(bytes_moved(p), bytes) << what;
    EXPECT_EQ(validate_shapes(shapes_of(p)), std::nullopt) << what;
}

/// Every port of the graph description `desc` of p that has a role lies on that role's memory,
/// the bias among its inputs; with oneDNN, the logical tensors built from it have its dims and
/// strides.
void expect_graph_ports(const Problem& p, const Geometry& g, const SdpaGraphDesc& desc, const std::string& what) {
    for (const auto* ports : {&desc.inputs, &desc.outputs})
        for (const auto& [port, t] : *ports)
            if (const auto role = port_role(p, port))
                expect_same_memory(p, g.at(*role), t.dims, t.strides, what + " port " + fmt::format("{}", *role));
    EXPECT_EQ(desc.inputs.count(GraphPort::mask), 1u) << what;  // the bias, with its strides
    EXPECT_EQ(port_role(p, GraphPort::mask), Role::bias) << what;
#ifdef SDPABENCH_HAVE_ONEDNN
    const onednn::SdpaGraph og = onednn::build_sdpa_graph(p, dnnl::engine::kind::cpu);
    for (const auto* ports : {&og.inputs, &og.outputs})
        for (const auto& [port, t] : *ports) {
            const GraphTensor& want = desc.inputs.count(port) ? desc.inputs.at(port) : desc.outputs.at(port);
            EXPECT_EQ(t.lt.get_dims(), want.dims) << what;
            EXPECT_EQ(t.lt.get_strides(), want.strides) << what;
        }
#endif
}

/// The JSON export j of p writes every port of `desc` that has a role with its role's shape and
/// strides.
void expect_json_ports(const Problem& p, const Geometry& g, const SdpaGraphDesc& desc, const json& j,
        const std::string& what) {
    std::map<std::size_t, std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> written;
    for (const json& op : j["graph"])
        for (const char* side : {"inputs", "outputs"})
            for (const json& t : op[side])
                written[t["id"].get<std::size_t>()] = {t["shape"].get<std::vector<std::int64_t>>(),
                    t["stride"].get<std::vector<std::int64_t>>()};
    for (const auto* ports : {&desc.inputs, &desc.outputs})
        for (const auto& [port, t] : *ports)
            if (const auto role = port_role(p, port))
                expect_same_memory(p, g.at(*role), written.at(t.id).first, written.at(t.id).second, what + " JSON");
}

/// Reading the JSON export j back gives the geometry g for every strided role (a fatal failure
/// when the import fails).
void expect_json_import(const json& j, const Geometry& g, const std::string& what) {
    const GraphImport imp = import_onednn_json_text(j.dump(), "g.json", {}, 1);
    ASSERT_TRUE(imp.prb) << what << ": " << imp.error;
    const Geometry back = geometry(*imp.prb);
    for (const Role r : kStridedRoles)
        if (g.has(r)) {
            EXPECT_EQ(back.at(r).strides, g.at(r).strides) << what << " import " << format_as(r);
        }
}

/// The cuDNN mapping of p describes every input and output with its role's geometry in g.
void expect_cudnn_mapping(const Problem& p, const Geometry& g, const std::string& what) {
    const cudnn::GraphDesc cg = cudnn::describe_graph(p);
    for (const auto* list : {&cg.inputs, &cg.outputs})
        for (const cudnn::TensorDesc& t : *list) EXPECT_EQ(t.geom, g.at(t.geom.role)) << what;
    EXPECT_EQ(cg.inputs.size() + cg.outputs.size(), g.inputs().size() + g.outputs().size()) << what;
}

TEST(Geometry, EveryConsumerReadsTheModel) {
    const Dims forms[] = {{2, 4, 4, 8, 12, 16, 16}, {2, 4, 2, 8, 12, 16, 16}, {2, 4, 1, 8, 12, 16, 16}};  // MHA, GQA, MQA
    int checked = 0;
    for (const Dims& d : forms)
        for (const LayoutCase& lc : kLayouts)
            for (const Dir dir : {Dir::fwd_i, Dir::fwd_t, Dir::bwd})
                for (const auto& shape : kBiasShapeNames) {
                    Problem p = make(d, dir, Mask::bias);
                    p.bias_shape = shape.value;
                    p = with_layout(p, lc);
                    const std::string what = fmt::format("{} {} {}", lc.name, knobs(p), descriptor(p.dims));
                    ASSERT_EQ(validate(p), std::nullopt) << what;
                    const Geometry g = geometry(p);
                    expect_fill_and_sizes(p, g, what);
                    // The graph description (oneDNN's graph and the JSON export are built from it).
                    const SdpaGraphDesc desc = describe_sdpa_graph(p);
                    expect_graph_ports(p, g, desc, what);
                    // The JSON export: every port's shape and stride, and reading it back.
                    const json j = json::parse(onednn_graph_json(p));
                    expect_json_ports(p, g, desc, j, what);
                    ASSERT_NO_FATAL_FAILURE(expect_json_import(j, g, what));
                    expect_cudnn_mapping(p, g, what);
                    ++checked;
                }
    EXPECT_EQ(checked, 3 * 5 * 3 * 8);
}

TEST(Geometry, TheCaseLanguageAndItsRepro) {
    auto cases = [](const std::string& text) {
        std::vector<Case> out;
        for (auto& e : parse_cases({text}))
            if (e.c) out.push_back(*e.c);
        return out;
    };
    const auto cs = cases("--dir=bwd --layout=bshd --strides=dO:bhsd+stats:bshd,K:qkv b2hq4hkv2sq16d8");
    ASSERT_EQ(cs.size(), 2u);
    EXPECT_EQ(repro(cs[0]), "--dir=bwd --layout=bshd --strides=dO:bhsd+stats:bshd b2hq4hkv2sq16d8");
    EXPECT_EQ(repro(cs[1]), "--dir=bwd --layout=bshd --strides=K:qkv b2hq4hkv2sq16d8");
    for (const Case& c : cs) {
        const auto back = cases(repro(c));
        ASSERT_EQ(back.size(), 1u);
        EXPECT_EQ(back[0].prb, c.prb);
    }
}

}  // namespace
}  // namespace sdpa
