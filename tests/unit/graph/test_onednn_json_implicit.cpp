// oneDNN graph JSON, the forms oneDNN's upstream graphs use beyond the plain SDPA pattern:
// the implicit causal mask (--mask-form=implicit: GenIndex, [Add S_kv, Subtract S_q],
// GreaterEqual, Select), the Dropout scalars as [1] device tensors (--dropout-property=tensor)
// and K given already transposed (the ViT graph: transpose_b=0, K [.., D, S]). Round trips
// Problem -> JSON -> Problem -> JSON, the upstream files (../shared, skipped when absent), the
// forms that stay UNIMPLEMENTED, and the graph description the oneDNN backend builds from.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "driver/knobs.hpp"
#include "core/geometry.hpp"
#include "graph/sdpa_graph.hpp"
#include "graph/json_export.hpp"
#include "graph/json_import.hpp"

#include "json_test_util.hpp"

namespace sdpa {
namespace {

using namespace json_test;

namespace fs = std::filesystem;
using nlohmann::json;


/// S_q > S_kv: causal_br hides whole rows at the top.
constexpr Dims kTall{1, 2, 2, 24, 16, 8, 8};


/// p as an import gives it back: benchdnn's scale for its seed, the importer's dropout values,
/// the display name "g".
Problem canonical(Problem p) {
    p.scale = benchdnn_scale(p.scale_op, p.seed);
    if (p.dropout) p.dropout = Dropout{kImportDropoutP, p.seed, kImportDropoutOffset};
    p.name.assign(1, 'g');
    return p;
}

/// json_test::make as an import gives it back (canonical).
Problem made(Dims d, Dir dir, DType dt, Mask mask = Mask::none) { return canonical(make_problem(d, dir, dt, mask)); }


Problem implicit(Dims d, Dir dir, DType dt, Mask mask) {
    Problem p = made(d, dir, dt, mask);
    p.implicit_mask = true;
    return p;
}

Problem device_dropout(Dims d, Dir dir, DType dt, std::uint64_t seed) {
    Problem p = made(d, dir, dt);
    p.seed = seed;
    p.dropout = Dropout{};
    p.dropout_device_scalars = true;
    return canonical(p);
}

int id_of(json& g, const std::string& name) { return (*op_named(g, name))["id"].get<int>(); }
std::vector<std::string> kinds(json& g) {
    std::vector<std::string> v;
    for (const json& op : g["graph"]) v.push_back(op["kind"]);
    return v;
}
std::size_t count(const std::vector<std::string>& v, const std::string& k) {
    return static_cast<std::size_t>(std::count(v.begin(), v.end(), k));
}

/// Import of `p`'s exported graph must give `p` back, and its export the same text.
void expect_round_trip(const Problem& p) {
    SCOPED_TRACE(descriptor(p.dims) + " " + knobs(p));
    ASSERT_EQ(validate(p), std::nullopt);
    const std::string text = onednn_graph_json(p);
    const GraphImport r = import_text(text, {}, p.seed);
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->mask, p.mask);
    EXPECT_EQ(r.prb->implicit_mask, p.implicit_mask);
    EXPECT_EQ(r.prb->dropout_device_scalars, p.dropout_device_scalars);
    EXPECT_EQ(r.prb->scale_host_scalar, p.scale_host_scalar);
    EXPECT_EQ(*r.prb, p) << knobs(*r.prb);
    EXPECT_EQ(onednn_graph_json(*r.prb), text);
    // A second trip changes nothing either.
    const GraphImport again = import_text(onednn_graph_json(*r.prb), {}, p.seed);
    ASSERT_TRUE(again.prb) << again.error;
    EXPECT_EQ(*again.prb, p);
}

// ---- Implicit causal mask: export and round trip ---------------------------------------------

TEST(OnednnJsonImplicit, ExportWritesTheImplicitCausalOps) {
    // causal_tl: GenIndex rows, GenIndex columns, GreaterEqual, Select; no mask input.
    json tl = json::parse(onednn_graph_json(implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_tl)));
    const auto k = kinds(tl);
    EXPECT_EQ(count(k, "GenIndex"), 2u);
    EXPECT_EQ(count(k, "GreaterEqual"), 1u);
    EXPECT_EQ(count(k, "Select"), 1u);
    EXPECT_EQ(count(k, "Add"), 0u);  // no mask tensor added
    EXPECT_EQ(count(k, "Subtract"), 0u);
    EXPECT_EQ(tl["input_ports"].size(), 5u);  // Q K V scale fill
    json* row = op_named(tl, "causal_row");
    json* col = op_named(tl, "causal_col");
    ASSERT_TRUE(row && col);
    EXPECT_EQ((*row)["attrs"]["axis"], (json{{"type", "s64"}, {"value", -2}}));
    EXPECT_EQ((*col)["attrs"]["axis"], (json{{"type", "s64"}, {"value", -1}}));
    EXPECT_EQ((*row)["outputs"][0]["dtype"], "s32");
    EXPECT_EQ((*row)["inputs"][0]["id"], (*op_named(tl, "scale"))["outputs"][0]["id"]);
    json* ge = ops_of_kind(tl, "GreaterEqual")[0];
    EXPECT_EQ((*ge)["inputs"][0]["id"], (*row)["outputs"][0]["id"]);  // row >= column
    EXPECT_EQ((*ge)["inputs"][1]["id"], (*col)["outputs"][0]["id"]);
    EXPECT_EQ((*ge)["outputs"][0]["dtype"], "boolean");
    json* sel = ops_of_kind(tl, "Select")[0];
    EXPECT_EQ((*sel)["inputs"][0]["id"], (*ge)["outputs"][0]["id"]);
    EXPECT_EQ((*sel)["inputs"][1]["id"], (*op_named(tl, "scale"))["outputs"][0]["id"]);
    const json& fill = (*sel)["inputs"][2];
    EXPECT_EQ(fill["dtype"], "f32");
    EXPECT_EQ(fill["shape"], (std::vector<std::int64_t>{1}));
    EXPECT_EQ(fill["property_type"], "undef");
    EXPECT_EQ((*ops_of_kind(tl, "SoftMax")[0])["inputs"][0]["id"], (*sel)["outputs"][0]["id"]);

    // causal_br: the row index plus S_kv minus S_q, both s32 host scalars.
    json br = json::parse(onednn_graph_json(implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_br)));
    json* add = op_named(br, "causal_add_s_kv");
    json* sub = op_named(br, "causal_sub_s_q");
    ASSERT_TRUE(add && sub);
    EXPECT_EQ((*add)["kind"], "Add");
    EXPECT_EQ((*sub)["kind"], "Subtract");
    EXPECT_EQ((*add)["inputs"][0]["id"], (*op_named(br, "causal_row"))["outputs"][0]["id"]);
    EXPECT_EQ((*sub)["inputs"][0]["id"], (*add)["outputs"][0]["id"]);
    EXPECT_EQ((*ops_of_kind(br, "GreaterEqual")[0])["inputs"][0]["id"], (*sub)["outputs"][0]["id"]);
    for (json* op : {add, sub}) {
        const json& s = (*op)["inputs"][1];
        EXPECT_EQ(s["dtype"], "s32");
        EXPECT_EQ(s["shape"], json::array());
        EXPECT_EQ(s["property_type"], "host_scalar");
    }
    EXPECT_EQ(br["input_ports"].size(), 7u);  // Q K V scale S_kv S_q fill
    // The explicit form of the same problem has the mask Add and none of these ops.
    json ex = json::parse(onednn_graph_json(made(kMha, Dir::fwd_t, DType::f32, Mask::causal_br)));
    EXPECT_EQ(count(kinds(ex), "GenIndex"), 0u);
    EXPECT_EQ(count(kinds(ex), "Select"), 0u);
    EXPECT_EQ(count(kinds(ex), "Add"), 1u);
}

TEST(OnednnJsonImplicit, RoundTripCausalTl) {
    for (Dir dir : {Dir::fwd_t, Dir::bwd})
        for (DType dt : {DType::f32, DType::bf16})
            for (const Dims& d : {kMha, kTall}) expect_round_trip(implicit(d, dir, dt, Mask::causal_tl));
}

TEST(OnednnJsonImplicit, RoundTripCausalBrWithUnequalLengths) {
    for (Dir dir : {Dir::fwd_t, Dir::bwd})
        for (DType dt : {DType::f32, DType::bf16})
            for (const Dims& d : {kMha, kTall}) {  // S_q < S_kv and S_q > S_kv
                ASSERT_NE(d.S_q, d.S_kv);
                expect_round_trip(implicit(d, dir, dt, Mask::causal_br));
            }
    // An explicit causal mask still reads back as a bias (its values are not in the file): the
    // implicit form is what keeps the mask kind.
    const GraphImport r = import_text(onednn_graph_json(made(kMha, Dir::bwd, DType::bf16, Mask::causal_br)));
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(r.prb->mask, Mask::bias);
    EXPECT_FALSE(r.prb->implicit_mask);
}

TEST(OnednnJsonImplicit, RoundTripGqa5dImplicitCausal) {
    for (Mask m : {Mask::causal_tl, Mask::causal_br})
        for (Dir dir : {Dir::fwd_i, Dir::fwd_t, Dir::bwd}) {
            const Problem p = implicit(kGqa, dir, DType::bf16, m);
            json g = json::parse(onednn_graph_json(p));
            json* row = op_named(g, "causal_row");
            ASSERT_TRUE(row);
            EXPECT_EQ((*row)["inputs"][0]["shape"], (std::vector<std::int64_t>{2, 2, 4, 16, 24}));
            EXPECT_EQ((*row)["attrs"]["axis"]["value"], -2);
            expect_round_trip(p);
        }
}

TEST(OnednnJsonImplicit, ScaleHostScalarMakesTheFillAHostScalar) {
    for (Mask m : {Mask::causal_tl, Mask::causal_br})
        for (Dir dir : {Dir::fwd_t, Dir::bwd}) {
            Problem p = implicit(kGqa, dir, DType::bf16, m);
            p.scale_dt = DType::f32;
            p.scale_host_scalar = true;
            json g = json::parse(onednn_graph_json(p));
            const json& fill = (*ops_of_kind(g, "Select")[0])["inputs"][2];
            EXPECT_EQ(fill["dtype"], "f32");
            EXPECT_EQ(fill["shape"], json::array());
            EXPECT_EQ(fill["stride"], json::array());
            EXPECT_EQ(fill["property_type"], "host_scalar");
            EXPECT_EQ((*op_named(g, "scale"))["inputs"][1]["property_type"], "host_scalar");
            expect_round_trip(p);
        }
}

// ---- Dropout scalars as device tensors --------------------------------------------------------

TEST(OnednnJsonImplicit, RoundTripDropoutDeviceScalars) {
    for (Dir dir : {Dir::fwd_t, Dir::bwd})
        for (const Dims& d : {kMha, kGqa})
            for (std::uint64_t seed : {1u, 7u}) {
                const Problem p = device_dropout(d, dir, DType::bf16, seed);
                json g = json::parse(onednn_graph_json(p));
                const auto drops = ops_of_kind(g, "Dropout");
                ASSERT_EQ(drops.size(), dir == Dir::bwd ? 2u : 1u);
                const char* dts[] = {"s64", "s64", "f32"};
                for (const json* op : drops)
                    for (int k = 0; k < 3; ++k) {
                        const json& t = (*op)["inputs"][k + 1];
                        EXPECT_EQ(t["dtype"], dts[k]);
                        EXPECT_EQ(t["shape"], (std::vector<std::int64_t>{1}));
                        EXPECT_EQ(t["stride"], (std::vector<std::int64_t>{1}));
                        EXPECT_EQ(t["property_type"], "undef");
                    }
                const GraphImport r = import_text(g.dump(), {}, seed);
                ASSERT_TRUE(r.prb) << r.error;
                EXPECT_TRUE(r.prb->dropout_device_scalars);
                EXPECT_EQ(r.prb->dropout, (Dropout{kImportDropoutP, seed, kImportDropoutOffset}));
                expect_round_trip(p);
                // The host-scalar form of the same problem is another problem.
                Problem host = p;
                host.dropout_device_scalars = false;
                const GraphImport h = import_text(onednn_graph_json(host), {}, seed);
                ASSERT_TRUE(h.prb) << h.error;
                EXPECT_FALSE(h.prb->dropout_device_scalars);
                EXPECT_NE(onednn_graph_json(host), onednn_graph_json(p));
            }
}

TEST(OnednnJsonImplicit, RoundTripDropoutDeviceScalarsWithImplicitCausal) {
    for (Dir dir : {Dir::fwd_t, Dir::bwd}) {
        Problem p = device_dropout(kGqa, dir, DType::bf16, 3);
        p.mask = Mask::causal_br;
        p.implicit_mask = true;
        expect_round_trip(p);
    }
}

// ---- K given transposed (transpose_b = 0) ---------------------------------------------------

/// `p`'s exported graph with the Q*K^T MatMul taking K^T: transpose_b = 0 and the K tensor of
/// that MatMul with its last two dims swapped and strides `kt_strides` (the K^T tensor's own).
json with_k_transposed(const Problem& p, const std::vector<std::int64_t>& kt_strides) {
    json g = json::parse(onednn_graph_json(p));
    json& qk = *op_named(g, "bmm_qk");
    qk["attrs"]["transpose_b"]["value"] = 0;
    json& k = qk["inputs"][1];
    std::vector<std::int64_t> shape = k["shape"];
    std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
    k["shape"] = shape;
    k["stride"] = kt_strides;
    return g;
}

TEST(OnednnJsonImplicit, TransposedKForwardGivesKStrides) {
    for (Dir dir : {Dir::fwd_i, Dir::fwd_t}) {
        // K^T dense [B,H,D,S] (the ViT graph): K [B,H,S,D] has strides {S*D*H, S*D, 1, S}: bhds.
        const Problem p = made(kMha, dir, DType::bf16);
        GraphImport r = import_text(with_k_transposed(p, {3072, 768, 24, 1}).dump());
        ASSERT_TRUE(r.prb) << r.error;
        EXPECT_EQ(geometry(*r.prb).at(Role::K).strides, (std::array<std::int64_t, 4>{3072, 768, 1, 24}));
        EXPECT_EQ(geometry(*r.prb).at(Role::Q).strides, (std::array<std::int64_t, 4>{2048, 512, 32, 1}));
        EXPECT_EQ(r.prb->dims, kMha);
        EXPECT_EQ(r.prb->dir, dir);
        ASSERT_EQ(r.prb->strides.count(Role::K), 1u);
        EXPECT_EQ(r.prb->strides.size(), 1u);
        EXPECT_EQ(r.prb->strides.at(Role::K), *order_layout("bhds"));
        EXPECT_NE(knobs(*r.prb).find("--strides=K:bhds"), std::string::npos) << knobs(*r.prb);
        Problem want = p;
        want.strides[Role::K] = *order_layout("bhds");
        EXPECT_EQ(*r.prb, want) << knobs(*r.prb);
        // sdpabench's own export of that problem (transpose_b=1, K with bhds strides) reads back the same.
        expect_round_trip(want);
        // K^T as a strided view of a dense K [B,H,S,D]: the plain problem.
        r = import_text(with_k_transposed(p, {3072, 768, 1, 32}).dump());
        ASSERT_TRUE(r.prb) << r.error;
        EXPECT_EQ(*r.prb, p) << knobs(*r.prb);
        EXPECT_TRUE(r.prb->strides.empty());
    }
    // 5-D GQA: K^T [B,H_kv,1,D,S] dense.
    const Problem g = made(kGqa, Dir::fwd_t, DType::f32);
    const GraphImport r = import_text(with_k_transposed(g, {1536, 768, 768, 24, 1}).dump());
    ASSERT_TRUE(r.prb) << r.error;
    EXPECT_EQ(geometry(*r.prb).at(Role::K).strides, (std::array<std::int64_t, 4>{1536, 768, 1, 24}));
    EXPECT_EQ(r.prb->strides.at(Role::K), *order_layout("bhds"));
}

TEST(OnednnJsonImplicit, TransposedKBackwardIsUnimplemented) {
    json g = with_k_transposed(made(kMha, Dir::bwd, DType::bf16), {3072, 768, 24, 1});
    // The same K^T tensor feeds dQ = dS K, now as K^T transposed back (one tensor, one shape).
    json* dq = op_named(g, "bmm_dq");
    ASSERT_NE(dq, nullptr);
    (*dq)["inputs"][1] = (*op_named(g, "bmm_qk"))["inputs"][1];
    (*dq)["attrs"]["transpose_b"] = {{"type", "bool"}, {"value", 1}};
    const GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (MatMul 'bmm_qk'): a backward graph with K given transposed "
                                   "(transpose_b=0) is not supported", id_of(g, "bmm_qk")));
}

// ---- SoftMax mode=none ----------------------------------------------------------------------

TEST(OnednnJsonImplicit, SoftMaxModeNoneOnlyWithoutAMask) {
    // Without a mask no row is fully masked: mode=none is the same problem.
    for (Dir dir : {Dir::fwd_i, Dir::fwd_t}) {
        const Problem p = made(kGqa, dir, DType::f32);
        json g = json::parse(onednn_graph_json(p));
        json& sm = *ops_of_kind(g, "SoftMax")[0];
        ASSERT_EQ(sm["attrs"]["mode"]["value"], "inf_as_zero");
        sm["attrs"]["mode"]["value"] = "none";
        const GraphImport r = import_text(g.dump());
        ASSERT_TRUE(r.prb) << r.error;
        EXPECT_EQ(*r.prb, p);
    }
    // With a mask tensor, or the implicit causal mask, mode=none stays UNIMPLEMENTED.
    for (const Problem& p : {made(kMha, Dir::fwd_t, DType::f32, Mask::causal_tl),
             implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_tl),
             implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_br)}) {
        json g = json::parse(onednn_graph_json(p));
        json& sm = *ops_of_kind(g, "SoftMax")[0];
        sm["attrs"]["mode"]["value"] = "none";
        const GraphImport r = import_text(g.dump());
        EXPECT_EQ(r.status, Status::unimplemented) << knobs(p);
        EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (SoftMax 'softmax'): mode=none is not supported with a "
                                       "mask (inf_as_zero only: fully masked rows give 0)", sm["id"].get<int>()));
    }
}

// ---- Implicit causal forms that are not read --------------------------------------------------

TEST(OnednnJsonImplicit, UpperTriangleIsUnimplemented) {
    json g = json::parse(onednn_graph_json(implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_tl)));
    json& ge = *ops_of_kind(g, "GreaterEqual")[0];
    std::swap(ge["inputs"][0], ge["inputs"][1]);  // column >= row
    const GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_NE(r.error.find("upper triangle"), std::string::npos) << r.error;
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (GreaterEqual 'causal_keep'): compares column >= row, which "
                                   "keeps keys at and after each query (an upper triangle); causal masks keep row >= "
                                   "column", ge["id"].get<int>()));
}

TEST(OnednnJsonImplicit, ComputedFillIsUnimplemented) {
    json g = json::parse(onednn_graph_json(implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_tl)));
    json& sel = *ops_of_kind(g, "Select")[0];
    const json fill = sel["inputs"][2];
    json computed = fill;
    computed["id"] = 951;
    sel["inputs"][2] = computed;
    const int sel_id = sel["id"].get<int>();
    // fill' = fill * scale: the Select's value for hidden keys is computed in the graph.
    const json scale = (*op_named(g, "scale"))["inputs"][1];
    g["graph"].push_back({{"id", 950}, {"name", "fill_mul"}, {"kind", "Multiply"}, {"attrs", json::object()},
        {"inputs", {fill, scale}}, {"outputs", {computed}}});
    const GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Select 'causal_select'): the fill value (tensor 951) is "
                                   "computed in the graph", sel_id));
}

TEST(OnednnJsonImplicit, MaskAddAfterTheSelectIsUnimplemented) {
    // Implicit causal mask and an additive mask tensor on top.
    json g = json::parse(onednn_graph_json(implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_tl)));
    json& sel = *ops_of_kind(g, "Select")[0];
    json& sm = *ops_of_kind(g, "SoftMax")[0];
    const json masked = sel["outputs"][0];
    json added = masked;
    added["id"] = 961;
    json mask = masked;
    mask["id"] = 960;
    mask["shape"] = {1, 1, 16, 24};
    mask["stride"] = {384, 384, 24, 1};
    sm["inputs"][0] = added;  // before the push_back, which may move the ops
    g["graph"].push_back({{"id", 962}, {"name", "extra_mask"}, {"kind", "Add"}, {"attrs", json::object()},
        {"inputs", {masked, mask}}, {"outputs", {added}}});
    const GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, "g.json: error: op 962 (Add 'extra_mask'): a mask tensor added to the implicitly masked scores "
                       "is not supported (the implicit causal mask or a mask tensor, not both)");
}

TEST(OnednnJsonImplicit, OtherSelectFormsAreUnimplemented) {
    const json base = json::parse(onednn_graph_json(implicit(kMha, Dir::fwd_t, DType::f32, Mask::causal_tl)));
    // Select(keep, fill, scores): the scores are not the value kept.
    json g = base;
    json* sel = ops_of_kind(g, "Select")[0];
    std::swap((*sel)["inputs"][1], (*sel)["inputs"][2]);
    GraphImport r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Select 'causal_select'): a Select on the scores must be "
                                   "Select(keep, scores, fill) (the implicit causal mask)", (*sel)["id"].get<int>()));
    // The condition a boolean graph input (a mask given as booleans), not GreaterEqual(row, column).
    g = base;
    sel = ops_of_kind(g, "Select")[0];
    json cond = (*sel)["inputs"][0];
    cond["id"] = 970;
    (*sel)["inputs"][0] = cond;
    json kept = json::array();
    for (const json& op : g["graph"])
        if (op["kind"] != "GenIndex" && op["kind"] != "GreaterEqual") kept.push_back(op);
    g["graph"] = kept;
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.error, fmt::format("g.json: error: op {} (Select 'causal_select'): its condition (tensor 970) is not "
                                   "GreaterEqual(row index, column index): only the implicit causal mask is supported",
                               id_of(g, "causal_select")));
    // The row index from GenIndex over the columns too (column >= column).
    g = base;
    json& row = *op_named(g, "causal_row");
    row["attrs"]["axis"]["value"] = -1;
    r = import_text(g.dump());
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_NE(r.error.find("is neither GenIndex over the scores' rows (causal_tl) nor (that + S_kv) - S_q (causal_br)"),
            std::string::npos) << r.error;
}

// ---- Upstream files ----------------------------------------------------------------------------

TEST(OnednnJsonImplicit, UpstreamImplicitCausalAndVitFiles) {
    if (!fs::exists(kUpstreamMha)) GTEST_SKIP() << kUpstreamMha << " is absent";
    auto imp = [](const char* file) {
        const GraphImport r = import_onednn_json((kUpstreamMha / file).string(), {}, 1);
        EXPECT_TRUE(r.prb) << file << ": " << r.error;
        return r;
    };
    // Bottom-right causal, f16 (Add S_kv, Subtract S_q host scalars).
    GraphImport r = imp("sdpa-plain-bottom-right-implicit-causal-mask-f16-f32.json");
    ASSERT_TRUE(r.prb);
    EXPECT_EQ(r.prb->mask, Mask::causal_br);
    EXPECT_TRUE(r.prb->implicit_mask);
    EXPECT_EQ(r.prb->dims, (Dims{1, 16, 16, 384, 384, 64, 64}));
    EXPECT_EQ(r.prb->dir, Dir::fwd_i);
    EXPECT_EQ(r.prb->dt, DType::f16);
    EXPECT_EQ(validate(*r.prb), std::nullopt);
    EXPECT_NE(knobs(*r.prb).find("--mask=causal_br"), std::string::npos) << knobs(*r.prb);
    EXPECT_NE(knobs(*r.prb).find("--mask-form=implicit"), std::string::npos) << knobs(*r.prb);
    // Top-left causal, f32, GenIndex axes spelled 2 and 3.
    r = imp("sdpa-plain-implicit-causal-mask-fp32-bs1.json");
    ASSERT_TRUE(r.prb);
    EXPECT_EQ(r.prb->mask, Mask::causal_tl);
    EXPECT_TRUE(r.prb->implicit_mask);
    EXPECT_EQ(r.prb->dims, (Dims{1, 16, 16, 384, 384, 64, 64}));
    EXPECT_EQ(r.prb->dt, DType::f32);
    EXPECT_EQ(validate(*r.prb), std::nullopt);
    // GQA 5-D forms of both.
    r = imp("gqa-plain-implicit-causal-mask-fp32-bs1.json");
    ASSERT_TRUE(r.prb);
    EXPECT_EQ(r.prb->mask, Mask::causal_tl);
    EXPECT_TRUE(r.prb->implicit_mask);
    EXPECT_EQ(r.prb->dims, (Dims{1, 16, 2, 384, 384, 64, 64}));
    r = imp("gqa-plain-bottom-right-implicit-causal-mask-f16-f32.json");
    ASSERT_TRUE(r.prb);
    EXPECT_EQ(r.prb->mask, Mask::causal_br);
    EXPECT_TRUE(r.prb->implicit_mask);
    EXPECT_EQ(r.prb->dims, (Dims{1, 16, 2, 384, 384, 64, 64}));
    // ViT: K given as K^T [128,12,64,197] strides [151296,12608,197,1], SoftMax mode=none, no mask.
    r = imp("sdpa-vit-training-fwd-no-mask-bf16-f32.json");
    ASSERT_TRUE(r.prb);
    EXPECT_EQ(r.prb->dims, (Dims{128, 12, 12, 197, 197, 64, 64}));
    EXPECT_EQ(r.prb->dir, Dir::fwd_t);
    EXPECT_EQ(r.prb->dt, DType::bf16);
    EXPECT_EQ(r.prb->mask, Mask::none);
    EXPECT_FALSE(r.prb->implicit_mask);
    EXPECT_EQ(geometry(*r.prb).at(Role::K).strides, (std::array<std::int64_t, 4>{151296, 12608, 1, 197}));
    EXPECT_EQ(geometry(*r.prb).at(Role::Q).strides, (std::array<std::int64_t, 4>{151296, 12608, 64, 1}));
    EXPECT_EQ(r.prb->strides.at(Role::K), *order_layout("bhds"));
    EXPECT_EQ(validate(*r.prb), std::nullopt);
    // HF backward with the implicit causal mask and a host-scalar scale (and fill).
    r = imp("hf-sdpa-bwd-implicit-mask-bf16-f32.json");
    ASSERT_TRUE(r.prb);
    EXPECT_EQ(r.prb->dir, Dir::bwd);
    EXPECT_EQ(r.prb->mask, Mask::causal_tl);
    EXPECT_TRUE(r.prb->implicit_mask);
    EXPECT_TRUE(r.prb->scale_host_scalar);
    EXPECT_EQ(r.prb->dt, DType::bf16);
    EXPECT_EQ(r.prb->dims, (Dims{256, 16, 16, 128, 128, 32, 32}));
    EXPECT_EQ(validate(*r.prb), std::nullopt);
    // What sdpabench exports for each reads back as the same problem.
    for (const char* file : {"sdpa-plain-bottom-right-implicit-causal-mask-f16-f32.json",
             "sdpa-plain-implicit-causal-mask-fp32-bs1.json", "sdpa-vit-training-fwd-no-mask-bf16-f32.json",
             "hf-sdpa-bwd-implicit-mask-bf16-f32.json", "gqa-plain-bottom-right-implicit-causal-mask-f16-f32.json"}) {
        const GraphImport u = imp(file);
        ASSERT_TRUE(u.prb);
        const GraphImport again = import_text(onednn_graph_json(*u.prb));
        ASSERT_TRUE(again.prb) << file << ": " << again.error;
        Problem named = *again.prb;
        named.name = u.prb->name;
        EXPECT_EQ(named, *u.prb) << file;
    }
}

// ---- describe_sdpa_graph -------------------------------------------------------------------

TEST(OnednnJsonImplicit, DescribeImplicitCausalBr) {
    const Problem p = implicit(kMha, Dir::fwd_t, DType::bf16, Mask::causal_br);
    const SdpaGraphDesc g = describe_sdpa_graph(p);
    std::vector<std::string> k;
    for (const GraphOp& op : g.ops) k.push_back(op.kind);
    EXPECT_EQ(k, (std::vector<std::string>{"MatMul", "Multiply", "GenIndex", "Add", "Subtract", "GenIndex",
                     "GreaterEqual", "Select", "SoftMax", "MatMul"}));
    EXPECT_EQ(g.inputs.count(GraphPort::mask), 0u);
    for (GraphPort port : {GraphPort::causal_s_kv, GraphPort::causal_s_q}) {
        ASSERT_EQ(g.inputs.count(port), 1u);
        const GraphTensor& t = g.inputs.at(port);
        EXPECT_TRUE(t.host_scalar);
        EXPECT_TRUE(t.dims.empty());
        EXPECT_EQ(t.dt, ElemType::s32);
    }
    ASSERT_EQ(g.inputs.count(GraphPort::mask_fill), 1u);
    EXPECT_EQ(g.inputs.at(GraphPort::mask_fill).dims, (std::vector<std::int64_t>{1}));
    EXPECT_FALSE(g.inputs.at(GraphPort::mask_fill).host_scalar);
    EXPECT_EQ(g.inputs.at(GraphPort::mask_fill).dt, ElemType::f32);
    const GraphOp& ge = g.ops[6];
    EXPECT_EQ(ge.outputs[0].dt, ElemType::boolean);
    EXPECT_EQ(ge.outputs[0].dims, (std::vector<std::int64_t>{2, 4, 16, 24}));
    EXPECT_EQ(ge.inputs[0].id, g.ops[4].outputs[0].id);  // (row + S_kv) - S_q >= column
    EXPECT_EQ(ge.inputs[1].id, g.ops[5].outputs[0].id);
    EXPECT_EQ(g.ops[3].inputs[1].id, g.inputs.at(GraphPort::causal_s_kv).id);
    EXPECT_EQ(g.ops[4].inputs[1].id, g.inputs.at(GraphPort::causal_s_q).id);
    ASSERT_EQ(g.ops[2].attrs.size(), 1u);
    EXPECT_EQ(g.ops[2].attrs[0].first, "axis");
    EXPECT_EQ(std::get<std::int64_t>(g.ops[2].attrs[0].second), -2);
    EXPECT_EQ(std::get<std::int64_t>(g.ops[5].attrs[0].second), -1);
    EXPECT_EQ(g.ops[7].inputs[2].id, g.inputs.at(GraphPort::mask_fill).id);

    // causal_tl: no sequence-length scalars; the explicit form: a mask port and no GenIndex.
    const SdpaGraphDesc tl = describe_sdpa_graph(implicit(kMha, Dir::bwd, DType::bf16, Mask::causal_tl));
    EXPECT_EQ(tl.inputs.count(GraphPort::causal_s_kv), 0u);
    EXPECT_EQ(tl.inputs.count(GraphPort::causal_s_q), 0u);
    EXPECT_EQ(tl.inputs.count(GraphPort::mask), 0u);
    EXPECT_EQ(tl.inputs.count(GraphPort::mask_fill), 1u);
    EXPECT_FALSE(graph_has_mask(implicit(kMha, Dir::bwd, DType::bf16, Mask::causal_tl)));
    const SdpaGraphDesc ex = describe_sdpa_graph(made(kMha, Dir::fwd_t, DType::bf16, Mask::causal_br));
    EXPECT_EQ(ex.inputs.count(GraphPort::mask), 1u);
    EXPECT_EQ(ex.inputs.count(GraphPort::mask_fill), 0u);
    for (const GraphOp& op : ex.ops) EXPECT_NE(op.kind, "GenIndex");
    // With a host-scalar scale the fill is a rank-0 host scalar too.
    Problem hs = implicit(kMha, Dir::fwd_t, DType::bf16, Mask::causal_tl);
    hs.scale_host_scalar = true;
    const SdpaGraphDesc h = describe_sdpa_graph(hs);
    EXPECT_TRUE(h.inputs.at(GraphPort::mask_fill).host_scalar);
    EXPECT_TRUE(h.inputs.at(GraphPort::mask_fill).dims.empty());
}

TEST(OnednnJsonImplicit, DescribeDropoutDeviceScalars) {
    for (bool device : {false, true}) {
        Problem p = made(kGqa, Dir::bwd, DType::bf16);
        p.dropout = Dropout{};
        p.dropout_device_scalars = device;
        const SdpaGraphDesc g = describe_sdpa_graph(p);
        const std::pair<GraphPort, ElemType> ports[] = {{GraphPort::dropout_seed, ElemType::s64},
            {GraphPort::dropout_offset, ElemType::s64}, {GraphPort::dropout_p, ElemType::f32}};
        for (const auto& [port, dt] : ports) {
            ASSERT_EQ(g.inputs.count(port), 1u);
            const GraphTensor& t = g.inputs.at(port);
            EXPECT_EQ(t.dt, dt);
            EXPECT_EQ(t.host_scalar, !device);
            EXPECT_EQ(t.dims, device ? std::vector<std::int64_t>{1} : std::vector<std::int64_t>{});
        }
        int drops = 0;
        for (const GraphOp& op : g.ops)
            if (op.kind == "Dropout") {
                ++drops;
                EXPECT_EQ(op.inputs[1].id, g.inputs.at(GraphPort::dropout_seed).id);
                EXPECT_EQ(op.inputs[1].host_scalar, !device);
            }
        EXPECT_EQ(drops, 2);
    }
}

}  // namespace
}  // namespace sdpa
