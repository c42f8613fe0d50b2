// oneDNN graph JSON: import (pattern match, derived problem, rewrites, errors), export, and
// round trips case -> JSON -> case. The upstream benchdnn files are read from
// ../shared/upstream-cases next to the project (skipped when absent).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "driver/knobs.hpp"
#include "graph/sdpa_graph.hpp"
#include "driver/case_parser.hpp"
#include "driver/emit_json.hpp"
#include "graph/json_export.hpp"
#include "graph/json_import.hpp"
#include "graph/json_rewrite.hpp"
#include "fillers/fill.hpp"

#include "json_test_util.hpp"

namespace sdpa {
namespace {

using namespace json_test;

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kUpstream = fs::path(SDPABENCH_SOURCE_DIR) / ".." / "shared" / "upstream-cases" / "onednn-benchdnn";



/// p as an import gives it back: benchdnn's scale for its seed, benchdnn's mask fill for
/// its shape, the importer's dropout values for its seed, the display name "g".
Problem graph_canonical(Problem p) {
    p.scale = benchdnn_scale(p.scale_op, p.seed);
    if (p.dropout) p.dropout = Dropout{kImportDropoutP, p.seed, kImportDropoutOffset};
    if (p.mask == Mask::bias) p.mask_fill = bias_dims(p)[2] == 1 ? MaskFill::zero : MaskFill::causal_last_row;
    p.name.assign(1, 'g');  // not = "g": GCC 12 raises a false -Wrestrict on that
    return p;
}

constexpr Dims kMqa{3, 4, 1, 8, 8, 16, 16};

TEST(OnednnJson, RoundTripEveryDirectionDtypeAndLayout) {
    int n = 0;
    for (const Dims& d : {kMha, kGqa, kMqa})
        for (Dir dir : {Dir::fwd_i, Dir::fwd_t, Dir::bwd})
            for (DType dt : {DType::f32, DType::bf16, DType::f16})
                for (ScaleOp op : {ScaleOp::mul, ScaleOp::div})
                    for (std::uint64_t seed : {1u, 7u}) {
                        Problem p = make_problem(d, dir, dt);
                        p.scale_op = op;
                        p.seed = seed;
                        p = graph_canonical(p);
                        const std::string text = onednn_graph_json(p);
                        const GraphImport r = import_text(text, {}, seed);
                        ASSERT_TRUE(r.prb) << r.error << "\n" << knobs(p);
                        EXPECT_EQ(*r.prb, p) << knobs(p) << " vs " << knobs(*r.prb);
                        // The exported file of the imported problem is the same file.
                        EXPECT_EQ(onednn_graph_json(*r.prb), text);
                        ++n;
                    }
    EXPECT_EQ(n, 3 * 3 * 3 * 2 * 2);
}

TEST(OnednnJson, RoundTripMasksAndTensorTypes) {
    for (const Dims& d : {kMha, kGqa})
        for (BiasShape s : {BiasShape::one, BiasShape::b, BiasShape::bh, BiasShape::h, BiasShape::one_row,
                 BiasShape::b_row, BiasShape::h_row, BiasShape::bh_row})
            for (Dir dir : {Dir::fwd_t, Dir::bwd}) {
                Problem p = make_problem(d, dir, DType::bf16, Mask::bias);
                p.bias_shape = s;
                p.mask_dt = DType::f32;
                p.scale_dt = DType::f32;
                p = graph_canonical(p);
                const GraphImport r = import_text(onednn_graph_json(p));
                ASSERT_TRUE(r.prb) << r.error;
                EXPECT_EQ(*r.prb, p) << knobs(p) << " vs " << knobs(*r.prb);
            }
    // A causal mask is exported as an explicit [1,1,S_q,S_kv] mask: it reads back as a bias
    // with benchdnn's causal fill (the mask values are not part of the file).
    Problem c = make_problem(kMha, Dir::bwd, DType::f16, Mask::causal_tl);
    const GraphImport r = import_text(onednn_graph_json(c));
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->mask, Mask::bias);
    EXPECT_EQ(r.prb->bias_shape, BiasShape::one);
    EXPECT_EQ(r.prb->mask_fill, MaskFill::causal_last_row);
    EXPECT_EQ(r.prb->mask_dt, std::nullopt);
    EXPECT_EQ(r.prb->dims, kMha);
}

TEST(OnednnJson, ExportFormat) {
    Problem p = make_problem(kGqa, Dir::bwd, DType::bf16, Mask::causal_br);
    const json j = json::parse(onednn_graph_json(p));
    EXPECT_EQ(j["engine_kind"], "cpu");
    EXPECT_EQ(j["fpmath_mode"], "strict");
    const SdpaGraphDesc g = describe_sdpa_graph(p);
    ASSERT_EQ(j["graph"].size(), g.ops.size());
    EXPECT_EQ(j["input_ports"].size(), 8u);   // Q K V scale mask O dO stats
    EXPECT_EQ(j["output_ports"].size(), 3u);  // dQ dK dV
    const json& qk = j["graph"][0];
    EXPECT_EQ(qk["kind"], "MatMul");
    EXPECT_EQ(qk["attrs"]["transpose_b"]["type"], "bool");
    EXPECT_EQ(qk["attrs"]["transpose_b"]["value"], 1);
    EXPECT_EQ(qk["inputs"][0]["shape"], (std::vector<std::int64_t>{2, 2, 4, 16, 32}));
    EXPECT_EQ(qk["inputs"][0]["stride"], (std::vector<std::int64_t>{4096, 2048, 512, 32, 1}));
    EXPECT_EQ(qk["inputs"][0]["dtype"], "bf16");
    EXPECT_EQ(qk["inputs"][0]["layout_type"], "strided");
    EXPECT_EQ(qk["outputs"][0]["dtype"], "f32");
    int reduces = 0;
    for (const json& op : j["graph"])
        if (op["kind"] == "ReduceSum" && op["attrs"]["axes"]["value"] == std::vector<std::int64_t>{2}) {
            EXPECT_EQ(op["attrs"]["axes"]["type"], "s64[]");
            ++reduces;
        }
    EXPECT_EQ(reduces, 2);  // dK and dV summed over the group
    Case c;
    c.prb = p;
    EXPECT_EQ(onednn_json_file_name(c), "b2hq8hkv2sq16skv24dqk32dv16_--dir_bwd_--dt_bf16_--mask_causal_br.json");
}

// fwd_bwd is two graphs: the fwd_t one and the bwd one (dMask only in the backward: the driver's
// step_problem makes each); imported
// cases that differ only in a per-id rewrite get different files.
TEST(OnednnJson, EmitWritesBothGraphsOfFwdBwdAndKeepsRewritesApart) {
    const fs::path dir = fs::temp_directory_path() / "sdpabench_emit_fwd_bwd";
    fs::remove_all(dir);
    Case c;
    c.prb = make_problem(kMha, Dir::fwd_bwd, DType::bf16, Mask::bias);
    c.prb.dmask = true;
    const auto paths = write_onednn_json(c, dir.string());
    ASSERT_EQ(paths.size(), 2u);
    const GraphImport f = import_onednn_json(paths[0], {}, 1), b = import_onednn_json(paths[1], {}, 1);
    ASSERT_TRUE(f.prb && b.prb) << f.error << b.error;
    EXPECT_EQ(f.prb->dir, Dir::fwd_t);
    EXPECT_FALSE(f.prb->dmask);
    EXPECT_EQ(b.prb->dir, Dir::bwd);
    EXPECT_TRUE(b.prb->dmask);
    Case i;
    i.prb = make_problem(kMha, Dir::fwd_t, DType::f32);
    i.graph_file = "x/g.json";
    const std::string plain = onednn_json_file_name(i);
    i.op_kinds = "1:Divide";
    const std::string divide = onednn_json_file_name(i);
    i.op_kinds = "1:Multiply";
    EXPECT_NE(plain, divide);
    EXPECT_NE(divide, onednn_json_file_name(i));
    fs::remove_all(dir);
}

// One tensor, one description; property types and stride ranks as oneDNN defines them.
TEST(OnednnJson, TensorsAreDescribedConsistently) {
    json g = json::parse(onednn_graph_json(make_problem(kMha, Dir::fwd_t, DType::f32)));
    json* sm = op_named(g, "softmax");
    ASSERT_NE(sm, nullptr);
    json two = g;
    op_named(two, "softmax")->at("inputs")[0]["shape"][3] = 23;
    GraphImport r = import_text(two.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_NE(r.error.find("is f32 [2,4,16,24] in op"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("but f32 [2,4,16,23] in op"), std::string::npos) << r.error;
    json bogus = g;
    op_named(bogus, "softmax")->at("inputs")[0]["property_type"] = "bogus";
    r = import_text(bogus.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_NE(r.error.find("property_type 'bogus' is not one of undef, variable, constant, host_scalar"),
            std::string::npos) << r.error;
    json stride = g;
    op_named(stride, "softmax")->at("inputs")[0]["stride"] = {1, 2};
    r = import_text(stride.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_NE(r.error.find("stride [1,2] has rank 2 but shape [2,4,16,24] has rank 4"), std::string::npos) << r.error;
    json undefined = g;  // oneDNN's dump marks undefined strides with one INT64_MIN
    op_named(undefined, "softmax")->at("inputs")[0]["stride"] = {std::numeric_limits<std::int64_t>::min()};
    EXPECT_TRUE(import_text(undefined.dump()).prb);
}

TEST(OnednnJson, UpstreamFilesGiveTheirProblems) {
    if (!fs::exists(kUpstream)) GTEST_SKIP() << kUpstream << " is absent";
    struct Want {
        const char* file;
        Dims dims;
        Dir dir;
        DType dt;
        Mask mask;
        BiasShape shape;
        ScaleOp op;
        std::optional<DType> scale_dt;
    };
    const Want wants[] = {
        {"gqa-plain-training-forward-bf16-f32.json", {1, 16, 2, 128, 128, 64, 64}, Dir::fwd_t, DType::bf16, Mask::none,
            BiasShape::one, ScaleOp::div, std::nullopt},
        {"sdpa-plain-training-forward-bf16-f32.json", {1, 16, 16, 384, 384, 64, 64}, Dir::fwd_t, DType::bf16,
            Mask::bias, BiasShape::h, ScaleOp::mul, std::nullopt},
        {"sdpa-plain-training-backward-bf16-f32.json", {1, 16, 16, 384, 384, 64, 64}, Dir::bwd, DType::bf16,
            Mask::bias, BiasShape::h, ScaleOp::mul, std::nullopt},
        {"sdpa-plain-training-backward-f32.json", {1, 16, 16, 384, 384, 64, 64}, Dir::bwd, DType::f32, Mask::bias,
            BiasShape::h, ScaleOp::mul, std::nullopt},
        {"sdpa-training-fwd-no-mask-f16-f32.json", {2, 1, 1, 4096, 4096, 128, 128}, Dir::fwd_t, DType::f16,
            Mask::none, BiasShape::one, ScaleOp::mul, DType::f32},
    };
    for (const Want& w : wants) {
        const GraphImport r = import_onednn_json((kUpstream / w.file).string(), {}, 1);
        ASSERT_TRUE(r.prb) << r.error;
        const Problem& p = *r.prb;
        EXPECT_EQ(p.dims, w.dims) << w.file;
        EXPECT_EQ(p.dir, w.dir) << w.file;
        EXPECT_EQ(p.dt, w.dt) << w.file;
        EXPECT_EQ(p.mask, w.mask) << w.file;
        if (w.mask == Mask::bias) {
            EXPECT_EQ(p.bias_shape, w.shape) << w.file;
            EXPECT_EQ(p.mask_fill, MaskFill::causal_last_row) << w.file;
        }
        EXPECT_EQ(p.scale_op, w.op) << w.file;
        EXPECT_EQ(p.scale_dt, w.scale_dt) << w.file;
        EXPECT_EQ(*p.scale, benchdnn_scale(w.op, 1)) << w.file;
        EXPECT_EQ(validate(p), std::nullopt) << w.file;
    }
}

TEST(OnednnJson, Rewrites) {
    if (!fs::exists(kUpstream)) GTEST_SKIP() << kUpstream << " is absent";
    const std::string bwd = (kUpstream / "sdpa-plain-training-backward-bf16-f32.json").string();
    // --dt: the whole graph, mask and scale included.
    GraphImport r = import_onednn_json(bwd, GraphRewrites{DType::f16, "", 0}, 1);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->dt, DType::f16);
    EXPECT_EQ(r.prb->mask_dt, std::nullopt);
    // --mb: the batch; the mask, [1,H,S,S] in the file, stays broadcast over the batch.
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "", 3}, 1);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->dims.B, 3);
    EXPECT_EQ(r.prb->bias_shape, BiasShape::h);
    // --in-shapes: Q 100, K 101, V 104, O 10, dO 105, stats 8, mask 103 to S = 128.
    const std::string s128 = "100:1x16x128x64+101:1x16x128x64+104:1x16x128x64+10:1x16x128x64+105:1x16x128x64+"
                             "8:1x16x128x1+103:1x16x128x128*16384x16384x128x1";
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, s128, 2}, 1);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->dims, (Dims{2, 16, 16, 128, 128, 64, 64}));
    // Only Q rewritten: the others no longer fit (the case language's shape rules name the first).
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:1x16x128x64", 0}, 1);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, bwd + ": error: tensor 100 (Q) [1,16,128,64], 101 (K) [1,16,384,64], 104 (V) [1,16,384,64]: "
                             "shape rule: O [1, 16, 384, 64] must be shaped like [B,H_q,S_q,D_v] [1, 16, 128, 64]");
    // Q and mask rewritten, K not: Q's head size no longer matches K's.
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:1x16x384x32", 0}, 1);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, bwd + ": error: tensor 100 (Q) [1,16,384,32], 101 (K) [1,16,384,64], 104 (V) [1,16,384,64]: "
                             "head-size rule: D_qk must be equal for Q and K: Q 32 K 64");
    // A tag gives Q a [B,S,H,D] memory order (benchdnn's acbd); explicit strides are kept as given.
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:*acbd", 0}, 1);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->strides, (RoleLayouts{{Role::Q, *parse_tensor_layout("bshd")}}));
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:1x16x384x64*0x64x1024x1", 0}, 1);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->strides, (RoleLayouts{{Role::Q, *parse_tensor_layout("0x64x1024x1")}}));
    // A shape alone keeps the memory order; a tag of the wrong letters is an error.
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:*acbd+101:*acbd+104:*acbd+10:*acbd+105:*acbd", 0}, 1);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->layout, Layout::bshd);  // most io tensors [B,S,H,D]: canonical --layout=bshd
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:*abce", 0}, 1);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, bwd + ": error: --in-shapes: tensor 100: tag abce is not a permutation of abcd for the rank-4 "
                             "shape 1x16x384x64");
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "5:1x1", 0}, 1);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, bwd + ": error: --in-shapes: tensor 5 is internal to the graph");
    EXPECT_EQ(check_in_shapes("0:2x3+1:*abcd+2:4x5*20x1"), std::nullopt);
    EXPECT_EQ(check_in_shapes("0:2xq"), "'0:2xq': '2xq' is not a shape like 2x16x384x64");
}

/// The forward graph of a small problem as JSON, to be edited by the error tests.
json small_forward(Dir dir = Dir::fwd_t) {
    return json::parse(onednn_graph_json(make_problem(kMha, dir, DType::f32, Mask::causal_tl)));
}
json* op_of_kind(json& g, const char* kind) {
    for (json& op : g["graph"])
        if (op["kind"] == kind) return &op;
    return nullptr;
}

TEST(OnednnJson, MalformedFilesNameThePosition) {
    const std::string text = "{\n  \"graph\": [\n    {\"id\": 1,,}\n  ]\n}\n";
    GraphImport r = import_text(text);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, "g.json: error: malformed JSON at line 3, column 14: syntax error while parsing object key - "
                       "unexpected ','; expected string literal");
    r = import_text("{\"graph\": [");
    EXPECT_EQ(r.error, "g.json: error: malformed JSON at line 1, column 12: syntax error while parsing value - "
                       "unexpected end of input; expected '[', '{', or a literal");
    r = import_text("[1, 2]");
    EXPECT_EQ(r.error, "g.json: error: the top level is not a JSON object");
    r = import_text(R"({"graph": [{"id": 3, "kind": "MatMul", "inputs": []}]})");
    EXPECT_EQ(r.error, "g.json: error: op 3 (MatMul ''): missing \"outputs\"");
    r = import_text(R"({"graph": [{"id": "x", "kind": "MatMul"}]})");
    EXPECT_EQ(r.error, "g.json: error: graph[0]: \"id\" has the wrong type or range (\"x\")");
    r = import_onednn_json("/nonexistent/x.json", {}, 1);
    EXPECT_EQ(r.error, "/nonexistent/x.json: error: cannot open the graph file");
}

TEST(OnednnJson, NonSdpaGraphsAndUnsupportedOpsNameTheOp) {
    // A lone ReLU: not SDPA.
    GraphImport r = import_text(R"({"graph": [{"id": 1, "name": "relu", "kind": "ReLU", "inputs":
        [{"id": 0, "dtype": "f32", "shape": [2, 3]}], "outputs": [{"id": 2, "dtype": "f32", "shape": [2, 3]}]}]})");
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, "g.json: error: not an SDPA training graph: no MatMul of two graph inputs whose output is "
                       "multiplied or divided by a graph input (the scale)");
    // SoftMax without inf_as_zero on masked scores (without a mask, mode=none is read:
    // test_onednn_json_implicit.cpp).
    json g = small_forward();
    json* sm = op_of_kind(g, "SoftMax");
    (*sm)["attrs"]["mode"]["value"] = "none";
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (SoftMax 'softmax'): mode=none is not supported with a mask "
                                   "(inf_as_zero only: fully masked rows give 0)", (*sm)["id"].get<int>()));
    // An op outside the pattern's vocabulary.
    g = small_forward();
    const json o = g["graph"].back()["outputs"][0];
    g["graph"].push_back({{"id", 900}, {"name", "act"}, {"kind", "GELU"}, {"attrs", json::object()},
        {"inputs", {o}}, {"outputs", {{{"id", 901}, {"dtype", "f32"}, {"shape", o["shape"]}}}}});
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, "g.json: error: op 900 (GELU 'act'): op kind GELU is not part of the SDPA training patterns "
                       "sdpabench reads");
    // A known kind in the wrong place.
    g["graph"].back()["kind"] = "Exp";
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, "g.json: error: op 900 (Exp 'act'): not part of the SDPA training pattern");
    // Unsupported attribute.
    g = small_forward();
    g["graph"][0]["attrs"]["accumulation_mode"] = {{"type", "string"}, {"value", "relaxed"}};
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (MatMul 'bmm_qk'): accumulation_mode=relaxed is not supported "
                                   "(strict only)", g["graph"][0]["id"].get<int>()));
    // dMask: End on the full dS while the mask is broadcast ([1,1,S_q,S_kv]): not sdpabench's dMask.
    g = json::parse(onednn_graph_json(make_problem(kMha, Dir::bwd, DType::f32, Mask::causal_tl)));
    json* ds = nullptr;
    for (json& op : g["graph"])
        if (op["name"] == "mul_p_dpd") ds = &op;
    ASSERT_NE(ds, nullptr);
    g["graph"].push_back({{"id", 950}, {"name", "dmask"}, {"kind", "End"}, {"attrs", json::object()},
        {"inputs", {(*ds)["outputs"][0]}}, {"outputs", json::array()}});
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, "g.json: error: tensor 29 (dMask): the mask gradient has the scores' shape [2,4,16,24] but the "
                       "mask is broadcast as [1,1,16,24]: sdpabench's dMask has the mask's shape (dS summed over the "
                       "broadcast axes: ReduceSum, keep_dims)");
    // A math mode other than strict.
    g = small_forward();
    g["fpmath_mode"] = "bf16";
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, "g.json: error: fpmath_mode=bf16 is not supported (strict only)");
    // A cycle.
    g = small_forward();
    g["graph"][0]["inputs"][0]["id"] = g["graph"].back()["outputs"][0]["id"];
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_NE(r.error.find("the graph has a cycle through this op"), std::string::npos) << r.error;
}

TEST(OnednnJson, OlderSoftMaxBackwardForm) {
    // dS = SoftMaxBackward(dP, P) in place of Multiply(O, dO), ReduceSum, Subtract, Multiply.
    Problem p = graph_canonical(make_problem(kGqa, Dir::bwd, DType::bf16, Mask::bias));
    p.bias_shape = BiasShape::bh;
    p = graph_canonical(p);
    json g = json::parse(onednn_graph_json(p));
    json fused = json::array();
    json dp, probs, ds;
    for (const json& op : g["graph"]) {
        if (op["name"] == "bmm_dp") dp = op["outputs"][0];
        if (op["name"] == "cast_p") probs = op["outputs"][0];
        if (op["name"] == "mul_p_dpd") ds = op["outputs"][0];
    }
    for (const json& op : g["graph"]) {
        const std::string n = op["name"];
        if (n == "mul_o_do" || n == "rowsum_o_do" || n == "sub_dp_d") continue;
        if (n == "mul_p_dpd") {
            fused.push_back({{"id", op["id"]}, {"name", "softmax_bwd"}, {"kind", "SoftMaxBackward"},
                {"attrs", {{"axis", {{"type", "s64"}, {"value", -1}}}}}, {"inputs", {dp, probs}}, {"outputs", {ds}}});
            continue;
        }
        fused.push_back(op);
    }
    g["graph"] = fused;
    const GraphImport r = import_text(g.dump());
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(*r.prb, p);
}

TEST(OnednnJson, BenchdnnMaskFills) {
    Problem p = make_problem(Dims{2, 2, 2, 4, 5, 8, 8}, Dir::fwd_t, DType::f32, Mask::bias);
    p.bias_shape = BiasShape::one;
    p.mask_fill = MaskFill::causal_last_row;
    ASSERT_EQ(validate(p), std::nullopt);
    SdpaInputs in = fill_inputs(p);
    const float ninf = -std::numeric_limits<float>::infinity();
    EXPECT_EQ(in.bias.at(0, 0, 0, 0), 0.f);
    EXPECT_EQ(in.bias.at(0, 0, 0, 1), ninf);
    EXPECT_EQ(in.bias.at(0, 0, 2, 2), 0.f);
    EXPECT_EQ(in.bias.at(0, 0, 2, 3), ninf);
    for (int j = 0; j < 5; ++j) EXPECT_EQ(in.bias.at(0, 0, 3, j), ninf) << j;  // last row fully masked
    EXPECT_TRUE(row_fully_masked(p, 0, 3));
    EXPECT_FALSE(row_fully_masked(p, 0, 2));
    EXPECT_FALSE(key_never_visible(p, 1, 2));  // row 2 sees keys 0..2
    EXPECT_TRUE(key_never_visible(p, 1, 3));
    EXPECT_EQ(visible_scores(p), 2 * (1 + 2 + 3));
    p.bias_shape = BiasShape::b_row;
    EXPECT_EQ(validate(p), "mask rule: --mask-fill=causal_last_row needs one mask row per query (got --mask-shape=Bx1x1xSkv)");
    p.mask_fill = MaskFill::zero;
    in = fill_inputs(p);
    EXPECT_EQ(in.bias.dims, (std::array<std::int64_t, 4>{2, 1, 1, 5}));
    for (float x : in.bias.data) EXPECT_EQ(x, 0.f);
}

TEST(OnednnJson, CaseKnobInFilesAndRepro) {
    const fs::path dir = fs::temp_directory_path() / "sdpabench_test_onednn_json";
    fs::create_directories(dir / "sub");
    Problem p = make_problem(kGqa, Dir::bwd, DType::bf16, Mask::bias);
    p.bias_shape = BiasShape::b;
    std::ofstream(dir / "sub" / "g.json") << onednn_graph_json(p);
    std::ofstream(dir / "all.cases") << "--dt=f32,default --mb=0,5 --seed=3 --case=sub/g.json\n--case=sub/none.json\n";
    const auto es = parse_cases({"--backend=ref", "--batch=" + (dir / "all.cases").string()});
    ASSERT_EQ(es.size(), 5u);
    ASSERT_TRUE(es[0].c && es[1].c && es[2].c && es[3].c);
    const std::string file = (dir / "sub" / "g.json").lexically_normal().string();
    EXPECT_EQ(es[0].c->prb.dt, DType::f32);
    EXPECT_EQ(es[0].c->prb.dims.B, 2);
    EXPECT_EQ(es[1].c->prb.dims.B, 5);
    EXPECT_EQ(es[2].c->prb.dt, DType::bf16);
    EXPECT_EQ(es[2].c->prb.seed, 3u);
    EXPECT_EQ(es[2].c->prb.scale, benchdnn_scale(ScaleOp::mul, 3));
    EXPECT_EQ(es[2].c->prb.bias_shape, BiasShape::b);
    EXPECT_EQ(repro(*es[1].c), "--backend=ref --dt=f32 --seed=3 --mb=5 --case=" + file);
    EXPECT_EQ(repro(*es[2].c), "--backend=ref --seed=3 --case=" + file);
    EXPECT_FALSE(es[4].c);
    EXPECT_NE(es[4].error.find("cannot open --case file"), std::string::npos) << es[4].error;
    // The repro parses back to the same case.
    const auto again = parse_cases({"--backend=ref", "--dt=f32", "--mb=5", "--seed=3", "--case=" + file});
    ASSERT_EQ(again.size(), 1u);
    ASSERT_TRUE(again[0].c);
    EXPECT_EQ(again[0].c->prb, es[1].c->prb);
    fs::remove_all(dir);
}


// ---- Dropout -------------------------------------------------------------------------------

/// The ops of kind `kind` in graph JSON g.
/// A rank-0 host scalar as oneDNN's dump writes it.
json host_scalar(std::size_t id, const char* dt) {
    return {{"id", id}, {"dtype", dt}, {"shape", json::array()}, {"stride", json::array()}, {"layout_type", "strided"},
        {"property_type", "host_scalar"}};
}
/// Inserts a Dropout op `id` named `name` on tensor `src` (its own scalars id+1..id+3, output
/// id+4), rewiring every consumer of `src` to the dropped tensor.
void insert_dropout(json& g, const json& src, std::size_t id, const std::string& name) {
    json out = src;
    out["id"] = id + 4;
    for (json& op : g["graph"])
        for (json& t : op["inputs"])
            if (t["id"] == src["id"]) t = out;
    g["graph"].push_back({{"id", id}, {"name", name}, {"kind", "Dropout"}, {"attrs", json::object()},
        {"inputs", {src, host_scalar(id + 1, "s64"), host_scalar(id + 2, "s64"), host_scalar(id + 3, "f32")}},
        {"outputs", {out}}});
}
/// Removes the op named `name` (one input that matters, one output), rewiring its output's
/// consumers to its first input.
void bypass_op(json& g, const std::string& name) {
    json ops = json::array(), in, out;
    for (const json& op : g["graph"])
        if (op["name"] == name) {
            in = op["inputs"][0];
            out = op["outputs"][0];
        } else {
            ops.push_back(op);
        }
    for (json& op : ops)
        for (json& t : op["inputs"])
            if (t["id"] == out["id"]) t = in;
    g["graph"] = ops;
}
/// Every tensor with id `id` in g, as a list of pointers (to edit a port everywhere it appears).
std::vector<json*> tensors_with_id(json& g, std::size_t id) {
    std::vector<json*> v;
    for (json& op : g["graph"])
        for (const char* side : {"inputs", "outputs"})
            for (json& t : op[side])
                if (t["id"] == id) v.push_back(&t);
    return v;
}
Problem with_dropout(Dims d, Dir dir, DType dt, std::uint64_t seed, Mask mask = Mask::none) {
    Problem p = make_problem(d, dir, dt, mask);
    p.seed = seed;
    p.dropout = Dropout{};
    return graph_canonical(p);
}

TEST(OnednnJson, RoundTripDropout) {
    int n = 0;
    for (const Dims& d : {kMha, kGqa, kMqa})
        for (Dir dir : {Dir::fwd_t, Dir::bwd})
            for (DType dt : {DType::f32, DType::bf16})
                for (std::uint64_t seed : {1u, 7u}) {
                    const Problem p = with_dropout(d, dir, dt, seed, Mask::causal_br);
                    ASSERT_EQ(validate(p), std::nullopt) << knobs(p);
                    const std::string text = onednn_graph_json(p);
                    const GraphImport r = import_text(text, {}, seed);
                    ASSERT_TRUE(r.prb) << r.error << "\n" << knobs(p);
                    EXPECT_EQ(r.prb->dropout, (Dropout{0.1f, seed, 1})) << knobs(p);
                    // The causal mask reads back as a bias (its values are not in the file).
                    Problem want = p;
                    want.mask = Mask::bias;
                    want = graph_canonical(want);
                    EXPECT_EQ(*r.prb, want) << knobs(want) << " vs " << knobs(*r.prb);
                    EXPECT_EQ(onednn_graph_json(*r.prb), text) << knobs(p);
                    ++n;
                }
    EXPECT_EQ(n, 3 * 2 * 2 * 2);
    // Without a mask, an exported graph re-imports to the very same problem.
    for (Dir dir : {Dir::fwd_i, Dir::fwd_t, Dir::bwd}) {
        const Problem p = with_dropout(kGqa, dir, DType::f16, 3);
        const GraphImport r = import_text(onednn_graph_json(p), {}, 3);
        ASSERT_TRUE(r.prb) << r.error;
        EXPECT_EQ(*r.prb, p) << knobs(p) << " vs " << knobs(*r.prb);
    }
    // The case's --dropout, when the caller passes it, is kept; a graph without Dropout ignores it.
    GraphRewrites rw;
    rw.dropout = Dropout{0.25f, 9, 4};
    GraphImport r = import_text(onednn_graph_json(with_dropout(kMha, Dir::bwd, DType::bf16, 1)), rw);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->dropout, rw.dropout);
    r = import_text(onednn_graph_json(graph_canonical(make_problem(kMha, Dir::bwd, DType::bf16))), rw);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->dropout, std::nullopt);
}

TEST(OnednnJson, ExportWritesDropoutHostScalars) {
    for (Dir dir : {Dir::fwd_t, Dir::bwd}) {
        const Problem p = with_dropout(kGqa, dir, DType::bf16, 1);
        json j = json::parse(onednn_graph_json(p));
        const auto drops = ops_of_kind(j, "Dropout");
        ASSERT_EQ(drops.size(), dir == Dir::bwd ? 2u : 1u);
        // Q K V scale [O dO stats] + seed offset probability.
        EXPECT_EQ(j["input_ports"].size(), dir == Dir::bwd ? 10u : 7u);
        for (const json* op : drops) {
            ASSERT_EQ((*op)["inputs"].size(), 4u);
            EXPECT_EQ((*op)["attrs"], json::object());
            EXPECT_EQ((*op)["inputs"][0]["dtype"], "f32");
            EXPECT_EQ((*op)["inputs"][0]["property_type"], "undef");
            const char* dts[] = {"s64", "s64", "f32"};
            for (int k = 0; k < 3; ++k) {
                const json& t = (*op)["inputs"][k + 1];
                EXPECT_EQ(t["dtype"], dts[k]);
                EXPECT_EQ(t["shape"], json::array());
                EXPECT_EQ(t["stride"], json::array());
                EXPECT_EQ(t["layout_type"], "strided");
                EXPECT_EQ(t["property_type"], "host_scalar");
            }
            // Both Dropout ops share the three scalars.
            for (int k = 1; k < 4; ++k) EXPECT_EQ((*op)["inputs"][k]["id"], (*drops[0])["inputs"][k]["id"]);
        }
    }
}

TEST(OnednnJson, DropoutScalarsAsBenchdnnTensors) {
    // benchdnn's other form: seed, offset and probability as [1] device tensors (property undef,
    // as benchdnn's --tensor-property=205:undef+... makes them): another kernel path, read as
    // --dropout-property=tensor (Problem::dropout_device_scalars); with
    // --tensor-property=...:host_scalar it is the host-scalar problem, and the export writes host scalars.
    const Problem p = with_dropout(kGqa, Dir::bwd, DType::bf16, 1);
    const std::string text = onednn_graph_json(p);
    json g = json::parse(text);
    std::string props;
    const auto seed = (*ops_of_kind(g, "Dropout")[0])["inputs"][1]["id"].get<std::size_t>();
    for (std::size_t k = 1; k < 4; ++k) {
        const auto id = (*ops_of_kind(g, "Dropout")[0])["inputs"][k]["id"].get<std::size_t>();
        props += fmt::format("{}{}:host_scalar", props.empty() ? "" : "+", id);
        for (json* t : tensors_with_id(g, id)) {
            (*t)["shape"] = {1};
            (*t)["stride"] = {1};
            (*t)["property_type"] = "undef";
        }
    }
    GraphImport r = import_text(g.dump());
    ASSERT_TRUE(r.prb) << r.error;
    Problem device = p;
    device.dropout_device_scalars = true;
    EXPECT_EQ(*r.prb, device);
    EXPECT_EQ(json::parse(onednn_graph_json(*r.prb)), g);
    // The seed a host scalar, offset and probability device tensors: the three must be of one kind
    // (the first port decides; the others are then named).
    json mixed = g;
    for (json* t : tensors_with_id(mixed, seed)) {
        (*t)["shape"] = json::array();
        (*t)["stride"] = json::array();
        (*t)["property_type"] = "host_scalar";
    }
    r = import_text(mixed.dump());
    EXPECT_EQ(r.status, Status::unimplemented) << r.error;
    EXPECT_EQ(r.error, fmt::format("g.json: error: tensor {} (dropout offset): property_type undef: sdpabench binds it "
                                   "as a host scalar (property_type host_scalar, shape [])",
                               (*ops_of_kind(mixed, "Dropout")[0])["inputs"][2]["id"].get<std::size_t>()));
    GraphRewrites rw;
    rw.properties = props;
    r = import_text(g.dump(), rw);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(*r.prb, p);
    EXPECT_EQ(onednn_graph_json(*r.prb), text);
    // --tensor-property on the scale: a host-scalar scale (--scale-property=host_scalar).
    json h = json::parse(text);
    const auto scale = (*op_named(h, "scale"))["inputs"][1]["id"].get<std::size_t>();
    rw.properties = fmt::format("{}:host_scalar", scale);
    r = import_text(h.dump(), rw);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_TRUE(r.prb->scale_host_scalar);
    rw.properties = "31337:host_scalar";
    EXPECT_EQ(import_text(h.dump(), rw).error, "g.json: error: --tensor-property: no tensor 31337 in the graph");
    rw.properties = fmt::format("{}:shared", scale);
    EXPECT_EQ(import_text(h.dump(), rw).error, fmt::format("g.json: error: --tensor-property: tensor {}: unknown property "
                                                           "'shared' (undef, variable, constant, host_scalar)", scale));
}

TEST(OnednnJson, DropoutWithSoftMaxBackward) {
    // dS = SoftMaxBackward(dropped dP, undropped P) reads like the Multiply form.
    const Problem p = with_dropout(kMha, Dir::bwd, DType::bf16, 1);
    json g = json::parse(onednn_graph_json(p));
    const json dp = (*op_named(g, "dropout_dp"))["outputs"][0], probs = (*op_named(g, "exp"))["outputs"][0];
    json fused = json::array();
    for (const json& op : g["graph"]) {
        const std::string n = op["name"];
        if (n == "mul_o_do" || n == "rowsum_o_do" || n == "sub_dp_d") continue;
        if (n == "mul_p_dpd")
            fused.push_back({{"id", op["id"]}, {"name", "softmax_bwd"}, {"kind", "SoftMaxBackward"},
                {"attrs", {{"axis", {{"type", "s64"}, {"value", -1}}}}}, {"inputs", {dp, probs}},
                {"outputs", op["outputs"]}});
        else
            fused.push_back(op);
    }
    g["graph"] = fused;
    GraphImport r = import_text(g.dump());
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(*r.prb, p);
    // With the dropped P it is another computation.
    (*op_named(g, "softmax_bwd"))["inputs"][1] = (*op_named(g, "cast_p"))["outputs"][0];
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (SoftMaxBackward 'softmax_bwd'): expected SoftMaxBackward(dP, "
                                   "P) with the dropped dP (tensor {}) and the undropped P (tensor {})",
                               (*op_named(g, "softmax_bwd"))["id"].get<int>(), dp["id"].get<int>(),
                               probs["id"].get<int>()));
}

TEST(OnednnJson, DropoutElsewhereIsUnimplementedNamingTheOp) {
    const std::string places =
            "sdpabench's SDPA graphs drop out only P (the SoftMax output in the forward, the Exp output before the dV "
            "MatMul in the backward) and dP (the dO*V^T MatMul output, before the subtraction of D)";
    const auto id_of = [](json& g, const char* name) { return (*op_named(g, name))["id"].get<int>(); };
    const auto out_of = [](json& g, const char* name) { return (*op_named(g, name))["outputs"][0]; };
    // On the scaled scores (before the mask).
    json g = small_forward();
    insert_dropout(g, out_of(g, "scale"), 900, "drop_scores");
    GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op 900 (Dropout 'drop_scores'): a Dropout on the output {} of op {} "
                                   "(Multiply 'scale') is not supported: {}",
                               out_of(g, "scale")["id"].get<int>(), id_of(g, "scale"), places));
    // On Q*K^T, before the scale (the Q*K^T MatMul is then not recognised as such).
    g = small_forward();
    insert_dropout(g, out_of(g, "bmm_qk"), 900, "drop_qk");
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op 900 (Dropout 'drop_qk'): a Dropout on the output {} of op {} "
                                   "(MatMul 'bmm_qk') is not supported: {}",
                               out_of(g, "bmm_qk")["id"].get<int>(), id_of(g, "bmm_qk"), places));
    // On a graph input (V).
    g = small_forward();
    const json v = (*op_named(g, "bmm_pv"))["inputs"][1];
    insert_dropout(g, v, 900, "drop_v");
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op 900 (Dropout 'drop_v'): a Dropout on graph input tensor {} is not "
                                   "supported: {}", v["id"].get<int>(), places));
    // On dS in the backward.
    json b = json::parse(onednn_graph_json(with_dropout(kGqa, Dir::bwd, DType::bf16, 1)));
    insert_dropout(b, out_of(b, "mul_p_dpd"), 900, "drop_ds");
    r = import_text(b.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op 900 (Dropout 'drop_ds'): a Dropout on the output {} of op {} "
                                   "(Multiply 'mul_p_dpd') is not supported: {}",
                               out_of(b, "mul_p_dpd")["id"].get<int>(), id_of(b, "mul_p_dpd"), places));
    // The backward drops out both P and dP, or neither.
    b = json::parse(onednn_graph_json(with_dropout(kGqa, Dir::bwd, DType::bf16, 1)));
    const int drop_p = id_of(b, "dropout_p"), drop_dp = id_of(b, "dropout_dp");
    bypass_op(b, "dropout_dp");
    r = import_text(b.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Dropout 'dropout_p'): the backward drops out P but not dP (op "
                                   "{} (MatMul 'bmm_dp') feeds op {} (Subtract 'sub_dp_d')); sdpabench's backward with "
                                   "dropout has a Dropout on both",
                               drop_p, id_of(b, "bmm_dp"), id_of(b, "sub_dp_d")));
    b = json::parse(onednn_graph_json(with_dropout(kGqa, Dir::bwd, DType::bf16, 1)));
    bypass_op(b, "dropout_p");
    r = import_text(b.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Dropout 'dropout_dp'): the backward drops out dP but not P (op "
                                   "{} (Exp 'exp') feeds no Dropout); sdpabench's backward with dropout has a Dropout "
                                   "on both", drop_dp, id_of(b, "exp")));
    // The forward's P in the io dtype without the f32 SoftMax output and the cast.
    g = json::parse(onednn_graph_json(with_dropout(kMha, Dir::fwd_t, DType::bf16, 1)));
    bypass_op(g, "cast_p");
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (MatMul 'bmm_pv'): tensor {} has dtype f32 (the io dtype bf16 "
                                   "expected)", id_of(g, "bmm_pv"), out_of(g, "dropout")["id"].get<int>()));
}

TEST(OnednnJson, DropoutOpsAndScalarsBreakingTheRulesNameThem) {
    const Problem p = with_dropout(kMha, Dir::bwd, DType::bf16, 1);
    const json base = json::parse(onednn_graph_json(p));
    json g = base;
    const int dp_id = (*op_named(g, "dropout_dp"))["id"].get<int>();
    const auto seed = (*op_named(g, "dropout_p"))["inputs"][1]["id"].get<std::size_t>();
    const auto prob = (*op_named(g, "dropout_p"))["inputs"][3]["id"].get<std::size_t>();
    // A second output (the keep mask).
    json mask_out = (*op_named(g, "dropout_dp"))["outputs"][0];
    mask_out["id"] = 950;
    mask_out["dtype"] = "u8";
    (*op_named(g, "dropout_dp"))["outputs"].push_back(mask_out);
    GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Dropout 'dropout_dp'): the mask output (tensor 950) of Dropout "
                                   "is not supported", dp_id));
    // An attribute.
    g = base;
    (*op_named(g, "dropout_dp"))["attrs"]["seed"] = {{"type", "s64"}, {"value", 3}};
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Dropout 'dropout_dp'): attribute 'seed' is not supported", dp_id));
    // Two seeds.
    g = base;
    (*op_named(g, "dropout_dp"))["inputs"][1]["id"] = 960;
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Dropout 'dropout_dp'): its seed is tensor 960, another "
                                   "Dropout's is tensor {} (sdpabench's Dropout ops share one seed, offset and "
                                   "probability)", dp_id, seed));
    // One tensor as both seed and offset (in every Dropout, so they still share their scalars).
    g = base;
    for (const char* name : {"dropout_p", "dropout_dp"}) (*op_named(g, name))["inputs"][2] = (*op_named(g, name))["inputs"][1];
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_NE(r.error.find("its seed and offset are the same tensor " + std::to_string(seed) +
                           " (three separate inputs are needed)"), std::string::npos) << r.error;
    // A seed of the wrong type; a probability that is not one value.
    g = base;
    for (json* t : tensors_with_id(g, seed)) (*t)["dtype"] = "s32";
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: tensor {} (dropout seed): dtype s32 (sdpabench's graph has s64 here)",
                               seed));
    g = base;
    for (json* t : tensors_with_id(g, prob)) {
        (*t)["shape"] = {2};
        (*t)["stride"] = {1};
    }
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: tensor {} (dropout probability, property_type host_scalar): shape [2] "
                                   "is not one value (a host scalar of shape [] or a [1] tensor)", prob));
}

TEST(OnednnJson, UpstreamDropoutGraphsGiveTheirProblems) {
    if (!fs::exists(kUpstreamMha)) GTEST_SKIP() << kUpstreamMha << " is absent";
    struct Want {
        const char* file;
        Dims dims;
        Dir dir;
        DType dt;
        ScaleOp op;
    };
    const Want wants[] = {
        {"gqa-plain-training-fwd-w-dropout-f32.json", {2, 16, 2, 128, 128, 64, 64}, Dir::fwd_t, DType::f32, ScaleOp::div},
        {"gqa-plain-training-fwd-w-dropout-bf16-f32.json", {2, 16, 2, 128, 128, 64, 64}, Dir::fwd_t, DType::bf16,
            ScaleOp::div},
        {"gqa-plain-training-bwd-w-dropout-bf16-f32.json", {2, 16, 2, 256, 256, 64, 64}, Dir::bwd, DType::bf16,
            ScaleOp::mul},
    };
    for (const Want& w : wants) {
        const std::string file = (kUpstreamMha / w.file).string();
        for (std::uint64_t seed : {1u, 5u}) {
            const GraphImport r = import_onednn_json(file, {}, seed);
            ASSERT_TRUE(r.prb) << r.error;
            const Problem& p = *r.prb;
            EXPECT_EQ(p.dims, w.dims) << w.file;
            EXPECT_EQ(p.dir, w.dir) << w.file;
            EXPECT_EQ(p.dt, w.dt) << w.file;
            EXPECT_EQ(p.scale_op, w.op) << w.file;
            EXPECT_EQ(p.mask, Mask::bias) << w.file;
            EXPECT_EQ(p.bias_shape, BiasShape::bh) << w.file;
            EXPECT_EQ(p.mask_dt, std::nullopt) << w.file;
            EXPECT_EQ(p.scale_dt, std::nullopt) << w.file;
            EXPECT_EQ(p.dropout, (Dropout{kImportDropoutP, seed, kImportDropoutOffset})) << w.file;
            EXPECT_EQ(p.seed, seed) << w.file;
            EXPECT_EQ(validate(p), std::nullopt) << w.file;
            // What sdpabench exports for it reads back the same.
            const GraphImport again = import_text(onednn_graph_json(p), {}, seed);
            ASSERT_TRUE(again.prb) << again.error;
            Problem named = *again.prb;
            named.name = p.name;
            EXPECT_EQ(named, p) << w.file;
        }
        GraphRewrites rw;
        rw.dropout = Dropout{0.5f, 11, 2};
        const GraphImport r = import_onednn_json(file, rw, 1);
        ASSERT_TRUE(r.prb) << r.error;
        EXPECT_EQ(r.prb->dropout, rw.dropout) << w.file;
    }
}

TEST(OnednnJson, DropoutCaseFileAndRepro) {
    // --case of a graph with Dropout: the values follow from --seed, so the repro needs no --dropout.
    const fs::path dir = fs::temp_directory_path() / "sdpabench_test_onednn_json_dropout";
    fs::create_directories(dir);
    std::ofstream(dir / "g.json") << onednn_graph_json(with_dropout(kGqa, Dir::bwd, DType::bf16, 1));
    const std::string file = (dir / "g.json").lexically_normal().string();
    const auto es = parse_cases({"--backend=ref", "--seed=3", "--case=" + file});
    ASSERT_EQ(es.size(), 1u);
    ASSERT_TRUE(es[0].c) << es[0].error;
    EXPECT_EQ(es[0].c->prb.dropout, (Dropout{kImportDropoutP, 3, kImportDropoutOffset}));
    EXPECT_EQ(repro(*es[0].c), "--backend=ref --seed=3 --case=" + file);
    fs::remove_all(dir);
}

// Subtract is not commutative: a backward computing D - dP flips every gradient's sign and is not
// the SDPA backward, so it is refused (naming the op and the tensor) rather than run as dP - D.
TEST(OnednnJson, BackwardSubtractOperandOrder) {
    json g = json::parse(onednn_graph_json(make_problem(kMha, Dir::bwd, DType::f32)));
    json* sub = op_named(g, "sub_dp_d");
    ASSERT_NE(sub, nullptr);
    std::swap((*sub)["inputs"][0], (*sub)["inputs"][1]);
    const GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Subtract 'sub_dp_d'): computes D - dP (dP, tensor {}, is the "
                                   "second input); the SDPA backward is dP - D",
                               (*sub)["id"].get<int>(), (*sub)["inputs"][1]["id"].get<int>()));
}

// benchdnn's per-id graph knobs: --dt=ID:DT+... retypes tensors (here every bf16 one to f16, so the
// graph reads as an f16 problem), --op-kind=ID:KIND+... rewrites an op (the scale's Multiply to a
// Divide; undef keeps it); ids the graph lacks are INVALID_ARGUMENTS naming them.
TEST(OnednnJson, PerIdDtypeAndOpKindRewrites) {
    const json g = json::parse(onednn_graph_json(make_problem(kMha, Dir::fwd_t, DType::bf16)));
    std::string ids;
    std::set<std::size_t> seen;
    for (const auto& op : g["graph"])
        for (const char* side : {"inputs", "outputs"})
            for (const auto& t : op[side])
                if (t["dtype"] == "bf16" && seen.insert(t["id"].get<std::size_t>()).second)
                    ids += fmt::format("{}{}:f16", ids.empty() ? "" : "+", t["id"].get<std::size_t>());
    GraphRewrites rw;
    rw.dt_ids = ids;
    GraphImport r = import_text(g.dump(), rw);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->dt, DType::f16);
    rw.dt_ids = "99999:f16";
    r = import_text(g.dump(), rw);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, "g.json: error: --dt: no tensor 99999 in the graph");
    rw.dt_ids = fmt::format("{}:f99", *seen.begin());
    r = import_text(g.dump(), rw);
    EXPECT_EQ(r.error, fmt::format("g.json: error: --dt: tensor {}: unknown data type 'f99'", *seen.begin()));

    json h = json::parse(onednn_graph_json(make_problem(kMha, Dir::fwd_t, DType::f32)));
    const auto scale_op = (*op_of_kind(h, "Multiply"))["id"].get<std::size_t>();
    GraphRewrites ok;
    ok.op_kinds = fmt::format("{}:Divide", scale_op);
    r = import_text(h.dump(), ok);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->scale_op, ScaleOp::div);
    ok.op_kinds = fmt::format("{}:undef", scale_op);
    r = import_text(h.dump(), ok);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->scale_op, ScaleOp::mul);
    ok.op_kinds = "77777:Divide";
    r = import_text(h.dump(), ok);
    EXPECT_EQ(r.error, "g.json: error: --op-kind: no op 77777 in the graph");
    EXPECT_EQ(check_id_rewrites("1:f16+x:bf16"), "'x:bf16' is not ID:VALUE");
    EXPECT_FALSE(check_id_rewrites("0:f16+13:f16"));
}

// benchdnn's --op-attrs=ID:ATTR:VALUE[*ATTR:VALUE...][+...] on the parsed ops: an attribute the op has
// keeps its type (bool 0/1, s64), one it lacks is typed by the value; a value not of the attribute's
// type and an id the graph lacks are INVALID_ARGUMENTS.
TEST(OnednnJson, OpAttrsRewrite) {
    const json g = json::parse(onednn_graph_json(make_problem(kMha, Dir::fwd_t, DType::f32)));
    std::vector<graph_json::RawOp> ops = graph_json::parse_ops(g);
    auto op = [&](const char* kind) -> graph_json::RawOp& {
        return *std::find_if(ops.begin(), ops.end(), [&](const graph_json::RawOp& o) { return o.kind == kind; });
    };
    const std::size_t mm = op("MatMul").id, sm = op("SoftMax").id;
    ASSERT_EQ(op("MatMul").attrs["transpose_b"], (json{{"type", "bool"}, {"value", 1}}));
    const auto rewrite = [&](const std::string& text) {
        try {
            graph_json::rewrite_op_attrs(ops, text);
            return std::string();
        } catch (const graph_json::ImportError& e) {
            EXPECT_EQ(e.status, Status::invalid_arguments);
            return e.msg;
        }
    };
    EXPECT_EQ(rewrite(fmt::format("{}:transpose_b:0", mm)), "");
    EXPECT_EQ(op("MatMul").attrs["transpose_b"], (json{{"type", "bool"}, {"value", 0}}));
    EXPECT_EQ(rewrite(fmt::format("{}:transpose_b:true+{}:axis:-2*mode:none", mm, sm)), "");
    EXPECT_EQ(op("MatMul").attrs["transpose_b"], (json{{"type", "bool"}, {"value", 1}}));
    EXPECT_EQ(op("SoftMax").attrs["axis"], (json{{"type", "s64"}, {"value", -2}}));
    EXPECT_EQ(op("SoftMax").attrs["mode"], (json{{"type", "string"}, {"value", "none"}}));
    // Attributes the op lacks: integer, 'x'-joined integers, number, string.
    EXPECT_EQ(rewrite(fmt::format("{}:a:7*b:1x1x96x1*c:0.5*d:per_tensor", mm)), "");
    EXPECT_EQ(op("MatMul").attrs["a"], (json{{"type", "s64"}, {"value", 7}}));
    EXPECT_EQ(op("MatMul").attrs["b"], (json{{"type", "s64[]"}, {"value", {1, 1, 96, 1}}}));
    EXPECT_EQ(op("MatMul").attrs["c"], (json{{"type", "f32"}, {"value", 0.5}}));
    EXPECT_EQ(op("MatMul").attrs["d"], (json{{"type", "string"}, {"value", "per_tensor"}}));
    EXPECT_EQ(rewrite(fmt::format("{}:transpose_b:2", mm)),
        fmt::format("--op-attrs: {}: attribute 'transpose_b' is bool: '2' is not 0 or 1", op("MatMul").where()));
    EXPECT_EQ(rewrite(fmt::format("{}:axis:last", sm)),
        fmt::format("--op-attrs: {}: attribute 'axis' is s64: 'last' is not an integer", op("SoftMax").where()));
    EXPECT_EQ(rewrite("77777:transpose_b:1"), "--op-attrs: no op 77777 in the graph");
    EXPECT_EQ(rewrite("0:transpose_b"), "--op-attrs: '0:transpose_b' is not ID:ATTR:VALUE[*ATTR:VALUE...]");

    EXPECT_FALSE(check_op_attrs(""));
    EXPECT_FALSE(check_op_attrs("34107656704:qtype:per_channel*axis:3+0:group_shape:1x1x96x1"));
    for (const char* bad : {"x:a:1", "0:a:", "0::1", "0:a:1*b", "0:a:1+", "0:a:1+1:b:2*", "0:a:b c", "0:a:1:2"})
        EXPECT_TRUE(check_op_attrs(bad)) << bad;
    EXPECT_EQ(check_op_attrs("0:a:1+1:b"), "'1:b' is not ID:ATTR:VALUE[*ATTR:VALUE...]");
}

// --op-attrs through the import: setting the backward's dP = dO*V^T MatMul's transpose_b to 0 makes
// it a graph sdpabench cannot read (the match names the transposes); 1 keeps it; a missing id names
// the knob. S_q = S_kv = D, so the untransposed V still fits the shapes and the transpose check speaks.
TEST(OnednnJson, OpAttrsRewriteReachesTheMatch) {
    json g = json::parse(onednn_graph_json(make_problem(Dims{2, 4, 4, 16, 16, 16, 16}, Dir::bwd, DType::f32)));
    const json* dp = op_named(g, "bmm_dp");
    ASSERT_TRUE(dp);
    const auto id = (*dp)["id"].get<std::size_t>();
    GraphRewrites rw;
    rw.op_attrs = fmt::format("{}:transpose_b:0", id);
    GraphImport r = import_text(g.dump(), rw);
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (MatMul 'bmm_dp'): the dP = dO*V^T MatMul needs "
                                   "transpose_a=0 transpose_b=1 (got 0 0)", id));
    rw.op_attrs = fmt::format("{}:transpose_b:1", id);
    r = import_text(g.dump(), rw);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->dir, Dir::bwd);
    rw.op_attrs = "77777:transpose_b:1";
    r = import_text(g.dump(), rw);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, "g.json: error: --op-attrs: no op 77777 in the graph");
}

/// The fwd_t MHA f32 graph, written to `dir`/g.json (`dir` created): the --case file of the per-id
/// knob tests.
json write_per_id_graph(const fs::path& dir) {
    fs::create_directories(dir);
    const json g = json::parse(onednn_graph_json(make_problem(kMha, Dir::fwd_t, DType::f32)));
    std::ofstream(dir / "g.json") << g.dump();
    return g;
}

// The per-id knobs in the case language: carried into the import and the repro of a --case, and
// refused for a problem descriptor (they name ids of a graph).
TEST(OnednnJson, PerIdKnobsInTheCaseLanguage) {
    const fs::path dir = fs::temp_directory_path() / "sdpabench_json_per_id";
    json h = write_per_id_graph(dir);
    const fs::path f = dir / "g.json";
    const auto scale_op = (*op_of_kind(h, "Multiply"))["id"].get<std::size_t>();
    const std::string knob = fmt::format("--op-kind={}:Multiply,{}:Divide", scale_op, scale_op);
    const auto es = parse_cases({knob, "--case=" + f.string()});
    ASSERT_EQ(es.size(), 2u);
    ASSERT_TRUE(es[0].c && es[1].c) << es[0].error << es[1].error;
    EXPECT_EQ(es[0].c->prb.scale_op, ScaleOp::mul);
    EXPECT_EQ(es[1].c->prb.scale_op, ScaleOp::div);
    EXPECT_EQ(repro(*es[1].c), fmt::format("--op-kind={}:Divide --case={}", scale_op, f.string()));
    const auto bad = parse_cases({"--dt=0:f16", "b1hq1sq4d4"});
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_EQ(bad[0].error, "command line: error: --dt=0:f16 rewrites tensors of a --case graph by id; "
                            "'b1hq1sq4d4' is a problem descriptor (use --reset, or a plain --dt)");

    // A graph that fails to import still carries the repro of its case (one benchdnn line's
    // expansions stay apart).
    const auto failed = parse_cases({"--dt=999:f16,998:f16", "--case=" + f.string()});
    ASSERT_EQ(failed.size(), 2u);
    EXPECT_FALSE(failed[0].c.has_value());
    EXPECT_EQ(failed[0].repro, "--dt=999:f16 --case=" + f.string());
    EXPECT_EQ(failed[1].repro, "--dt=998:f16 --case=" + f.string());
    EXPECT_NE(failed[1].error.find("no tensor 998"), std::string::npos) << failed[1].error;

    // Knobs an imported case takes from the graph do not multiply it; those it reads do.
    const auto dup = parse_cases({"--dir=fwd_t,bwd", "--mask=none,causal_tl", "--dmask=false,true", "--mask-form=tensor,implicit",
        "--fill=exact,normal", "--backend=ref,onednn", "--case=" + f.string()});
    ASSERT_EQ(dup.size(), 4u);
    std::set<std::string> repros;
    for (const auto& e : dup) {
        ASSERT_TRUE(e.c) << e.error;
        EXPECT_EQ(e.c->prb.dir, Dir::fwd_t);  // the graph's
        repros.insert(repro(*e.c));
    }
    EXPECT_EQ(repros.size(), 4u);
    fs::remove_all(dir);
}

// --op-attrs: carried into the import and the repro, refused before a descriptor, checked; every
// graph-scope knob is refused for a problem descriptor and for --random.
TEST(OnednnJson, OpAttrsAndGraphScopeKnobsInTheCaseLanguage) {
    const fs::path dir = fs::temp_directory_path() / "sdpabench_json_per_id_attrs";
    json h = write_per_id_graph(dir);
    const fs::path f = dir / "g.json";
    const auto mm = (*op_of_kind(h, "MatMul"))["id"].get<std::size_t>();
    const std::string attrs = fmt::format("--op-attrs={}:transpose_b:1*accumulation_mode:strict", mm);
    const auto as = parse_cases({attrs, "--case=" + f.string()});
    ASSERT_EQ(as.size(), 1u);
    ASSERT_TRUE(as[0].c) << as[0].error;
    EXPECT_EQ(repro(*as[0].c), fmt::format("{} --case={}", attrs, f.string()));
    std::vector<std::string> words;
    std::istringstream in(repro(*as[0].c));
    for (std::string w; in >> w;) words.push_back(w);
    const auto back = parse_cases(words);
    ASSERT_EQ(back.size(), 1u);
    ASSERT_TRUE(back[0].c) << back[0].error;
    EXPECT_EQ(back[0].c->op_attrs, as[0].c->op_attrs);
    const auto off = parse_cases({fmt::format("--op-attrs={}:transpose_b:0", mm), "--case=" + f.string()});
    ASSERT_EQ(off.size(), 1u);
    EXPECT_FALSE(off[0].c.has_value());  // rewritten before the match: K no longer fits Q*K^T
    EXPECT_NE(off[0].error.find("head-size rule: D_qk must be equal for Q and K: Q 32 K 24"), std::string::npos)
            << off[0].error;
    const auto desc = parse_cases({"--op-attrs=0:transpose_b:1", "b1hq1sq4d4"});
    ASSERT_EQ(desc.size(), 1u);
    EXPECT_EQ(desc[0].error, "command line: error: --op-attrs=0:transpose_b:1 rewrites a --case graph; "
                             "'b1hq1sq4d4' is a problem descriptor (use --reset)");
    // Every graph-scope knob off its default, --mb and --in-shapes included (never ignored).
    for (const std::string k : {"--mb=2", "--in-shapes=0:1x2x16x16", "--op-kind=1:Divide", "--tensor-property=1:constant"}) {
        const auto es = parse_cases({k, "b1hq1sq4d4"});
        ASSERT_EQ(es.size(), 1u) << k;
        EXPECT_EQ(es[0].error, "command line: error: " + k + " rewrites a --case graph; 'b1hq1sq4d4' is a problem "
                                                             "descriptor (use --reset)");
        const auto rnd = parse_cases({k, "--random=2"});
        ASSERT_EQ(rnd.size(), 1u) << k;
        EXPECT_NE(rnd[0].error.find(k + " rewrites a --case graph; '--random=2' draws problem descriptors"),
                std::string::npos) << rnd[0].error;
    }
    const auto malformed = parse_cases({"--op-attrs=0:transpose_b", "--case=" + f.string()});
    ASSERT_FALSE(malformed.empty());
    EXPECT_EQ(malformed[0].error,
        "command line: error: --op-attrs: '0:transpose_b' is not ID:ATTR:VALUE[*ATTR:VALUE...]");
    fs::remove_all(dir);
}

// A host-scalar scale (PyTorch's exported graphs) reads as --scale-property=host_scalar and is
// exported as one; the device-tensor scale stays the default.
TEST(OnednnJson, RoundTripHostScalarScale) {
    for (Dir dir : {Dir::fwd_t, Dir::bwd}) {
        Problem p = make_problem(kGqa, dir, DType::bf16);
        p.scale_dt = DType::f32;
        p.scale_host_scalar = true;
        const json g = json::parse(onednn_graph_json(p));
        const json* sc = op_named(const_cast<json&>(g), "scale");
        ASSERT_NE(sc, nullptr);
        EXPECT_EQ((*sc)["inputs"][1]["property_type"], "host_scalar");
        EXPECT_EQ((*sc)["inputs"][1]["shape"], json::array());
        const GraphImport r = import_text(g.dump());
        ASSERT_TRUE(r.prb) << r.error;
        EXPECT_TRUE(r.prb->scale_host_scalar);
        EXPECT_EQ(onednn_graph_json(*r.prb), onednn_graph_json(p));
        p.scale_host_scalar = false;
        const GraphImport d = import_text(onednn_graph_json(p));
        ASSERT_TRUE(d.prb) << d.error;
        EXPECT_FALSE(d.prb->scale_host_scalar);
    }
}

// numpy broadcasting: a mask of lower rank ([S_kv], [1,S_kv]) is the [1,1,1,S_kv] one-row bias.
TEST(OnednnJson, LowerRankMaskBroadcastsLikeNumpy) {
    Problem p = make_problem(kMha, Dir::fwd_t, DType::f32, Mask::bias);
    p.bias_shape = BiasShape::one_row;
    const std::string text = onednn_graph_json(p);
    const json g = json::parse(text);
    std::size_t mask_id = 0;
    for (const json& op : g["graph"])
        if (op["kind"] == "Add") mask_id = op["inputs"][1]["id"].get<std::size_t>();
    ASSERT_NE(mask_id, 0u);
    for (const std::string shape : {"24", "1x24"}) {
        GraphRewrites rw;
        rw.in_shapes = fmt::format("{}:{}", mask_id, shape);
        const GraphImport r = import_text(text, rw);
        ASSERT_TRUE(r.prb) << shape << ": " << r.error;
        EXPECT_EQ(r.prb->mask, Mask::bias);
        EXPECT_EQ(r.prb->bias_shape, BiasShape::one_row) << shape;
    }
    GraphRewrites bad;
    bad.in_shapes = fmt::format("{}:23", mask_id);  // not S_kv
    const GraphImport r = import_text(text, bad);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_NE(r.error.find(fmt::format("tensor {} (mask) [1,1,1,23] with Q [2,4,16,32], K [2,4,24,32], V [2,4,24,16]: bias rule: "
                           "the bias's last dimension must be S_kv = 24 or 1, got 23 in [1, 1, 1, 23]", mask_id)),
            std::string::npos) << r.error;
    GraphRewrites batch;  // a mask batch of 2 where B = 1 is not 1
    Problem one = make_problem(Dims{1, 4, 4, 16, 24, 32, 16}, Dir::fwd_t, DType::f32, Mask::bias);
    batch.in_shapes = fmt::format("{}:2x1x16x24", mask_id);
    const GraphImport b = import_text(onednn_graph_json(one), batch);
    EXPECT_NE(b.error.find("bias rule: bias dimension 0 must be 1, got 2 in [2, 1, 16, 24]"), std::string::npos) << b.error;
}

}  // namespace
}  // namespace sdpa
