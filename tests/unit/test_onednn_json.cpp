// oneDNN graph JSON: import (pattern match, derived problem, rewrites, errors), export, and
// round trips case -> JSON -> case. The upstream benchdnn files are read from
// ../shared/upstream-cases next to the project (skipped when absent).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/sdpa_graph.hpp"
#include "driver/case_parser.hpp"
#include "driver/onednn_json_export.hpp"
#include "driver/onednn_json_import.hpp"
#include "fillers/fill.hpp"

#ifndef SDPABENCH_SOURCE_DIR
#error "SDPABENCH_SOURCE_DIR (the project root) must be defined for this test"
#endif

namespace sdpa {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kUpstream = fs::path(SDPABENCH_SOURCE_DIR) / ".." / "shared" / "upstream-cases" / "onednn-benchdnn";

GraphImport import_text(const std::string& text, const GraphRewrites& rw = {}, std::uint64_t seed = 1) {
    return import_onednn_json_text(text, "g.json", rw, seed);
}

Problem make(Dims d, Dir dir, DType dt, Mask mask = Mask::none) {
    Problem p;
    p.dims = d;
    p.dir = dir;
    p.dt = dt;
    p.mask = mask;
    return p;
}

/// p as an import gives it back: benchdnn's scale for its seed, benchdnn's mask fill for
/// its shape, the display name "g".
Problem graph_canonical(Problem p) {
    p.scale = benchdnn_scale(p.scale_op, p.seed);
    if (p.mask == Mask::bias) p.mask_fill = bias_dims(p)[2] == 1 ? MaskFill::zero : MaskFill::causal_last_row;
    p.name.assign(1, 'g');  // not = "g": GCC 12 raises a false -Wrestrict on that
    return p;
}

constexpr Dims kMha{2, 4, 4, 16, 24, 32, 16};
constexpr Dims kGqa{2, 8, 2, 16, 24, 32, 16};
constexpr Dims kMqa{3, 4, 1, 8, 8, 16, 16};

TEST(OnednnJson, RoundTripEveryDirectionDtypeAndLayout) {
    int n = 0;
    for (const Dims& d : {kMha, kGqa, kMqa})
        for (Dir dir : {Dir::fwd_i, Dir::fwd_t, Dir::bwd})
            for (DType dt : {DType::f32, DType::bf16, DType::f16})
                for (ScaleOp op : {ScaleOp::mul, ScaleOp::div})
                    for (std::uint64_t seed : {1u, 7u}) {
                        Problem p = make(d, dir, dt);
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
                Problem p = make(d, dir, DType::bf16, Mask::bias);
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
    Problem c = make(kMha, Dir::bwd, DType::f16, Mask::causal_tl);
    const GraphImport r = import_text(onednn_graph_json(c));
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->mask, Mask::bias);
    EXPECT_EQ(r.prb->bias_shape, BiasShape::one);
    EXPECT_EQ(r.prb->mask_fill, MaskFill::causal_last_row);
    EXPECT_EQ(r.prb->mask_dt, std::nullopt);
    EXPECT_EQ(r.prb->dims, kMha);
}

TEST(OnednnJson, ExportFormat) {
    Problem p = make(kGqa, Dir::bwd, DType::bf16, Mask::causal_br);
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
    // Only Q rewritten: the others no longer fit.
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:1x16x128x64", 0}, 1);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, bwd + ": error: tensor 103 (mask): shape [1,16,384,384] does not broadcast to the scores "
                             "[1,16,128,384] (B=1 H_q=16 H_kv=16 S_q=128 S_kv=384)");
    // Q and mask rewritten, K not: Q's head size no longer matches K's.
    r = import_onednn_json(bwd, GraphRewrites{std::nullopt, "100:1x16x384x32", 0}, 1);
    EXPECT_EQ(r.status, Status::invalid_arguments);
    EXPECT_EQ(r.error, bwd + ": error: tensor 101 (K): shape [1,16,384,64] does not match [1,16,384,32] implied by "
                             "Q [1,16,384,32], K [1,16,384,64], V [1,16,384,64]");
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
json small_forward(Dir dir = Dir::fwd_t) { return json::parse(onednn_graph_json(make(kMha, dir, DType::f32, Mask::causal_tl))); }
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
    // SoftMax without inf_as_zero.
    json g = small_forward();
    json* sm = op_of_kind(g, "SoftMax");
    (*sm)["attrs"]["mode"]["value"] = "none";
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (SoftMax 'softmax'): mode=none is not supported (inf_as_zero "
                                   "only: fully masked rows give 0)", (*sm)["id"].get<int>()));
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
    // dMask: End on dS.
    g = json::parse(onednn_graph_json(make(kMha, Dir::bwd, DType::f32, Mask::causal_tl)));
    json* ds = nullptr;
    for (json& op : g["graph"])
        if (op["name"] == "mul_p_dpd") ds = &op;
    ASSERT_NE(ds, nullptr);
    g["graph"].push_back({{"id", 950}, {"name", "dmask"}, {"kind", "End"}, {"attrs", json::object()},
        {"inputs", {(*ds)["outputs"][0]}}, {"outputs", json::array()}});
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, "g.json: error: op 950 (End 'dmask'): dMask output (End on dS) is not supported");
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
    Problem p = graph_canonical(make(kGqa, Dir::bwd, DType::bf16, Mask::bias));
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
    Problem p = make(Dims{2, 2, 2, 4, 5, 8, 8}, Dir::fwd_t, DType::f32, Mask::bias);
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
    Problem p = make(kGqa, Dir::bwd, DType::bf16, Mask::bias);
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
    EXPECT_EQ(repro(*es[1].c), "--backend=ref --dt=f32 --mb=5 --seed=3 --case=" + file);
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

}  // namespace
}  // namespace sdpa
