// What the cuDNN adapter would send to cuDNN (backends/cudnn/cudnn_mapping.hpp), checked without a
// GPU: tensor dims, strides, types and uids, the SDPA attributes, and that cuDNN's band rule with
// the mapped bounds keeps exactly the keys core's visible() keeps.
#include "backends/cudnn/cudnn_mapping.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace sdpa::cudnn {
namespace {

using A4 = std::array<std::int64_t, 4>;

Problem make(const char* desc, Dir dir, DType dt, Mask mask = Mask::none) {
    Problem p;
    std::string err;
    p.dims = *parse_descriptor(desc, nullptr, &err);
    p.dir = dir;
    p.dt = dt;
    p.mask = mask;
    return p;
}

TEST(CudnnMapping, TensorsAreTheirGeometryRoles) {
    Problem p = make("b2hq3sq5d4", Dir::fwd_t, DType::bf16);
    p.layout = Layout::bshd;
    const GraphDesc g = describe_graph(p);
    const TensorDesc* q = g.find(Uid::Q);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->geom, geometry(p).at(Role::Q));
    EXPECT_EQ(q->geom.strides, (A4{5 * 3 * 4, 4, 3 * 4, 1}));  // [B,S,H,D] memory
    EXPECT_EQ(q->geom.span(), 2 * 3 * 5 * 4);  // dense: no holes, so the NaN prefill check covers it all
    EXPECT_EQ(q->geom.offset(1, 2, 3, 1), 1 * 60 + 2 * 4 + 3 * 12 + 1);
}

TEST(CudnnMapping, ForwardTrainingGqaCausalBr) {
    const GraphDesc g = describe_graph(make("b2hq8hkv2sq128skv256dqk64dv32", Dir::fwd_t, DType::bf16, Mask::causal_br));
    EXPECT_FALSE(g.backward);
    EXPECT_TRUE(g.generate_stats);
    ASSERT_EQ(g.inputs.size(), 3u);
    ASSERT_EQ(g.outputs.size(), 2u);
    EXPECT_EQ(g.find(Uid::Q)->geom.dims, (A4{2, 8, 128, 64}));
    EXPECT_EQ(g.find(Uid::K)->geom.dims, (A4{2, 2, 256, 64}));
    EXPECT_EQ(g.find(Uid::V)->geom.dims, (A4{2, 2, 256, 32}));
    EXPECT_EQ(g.find(Uid::V)->geom.strides, (A4{2 * 256 * 32, 256 * 32, 32, 1}));
    EXPECT_EQ(g.find(Uid::O)->geom.dims, (A4{2, 8, 128, 32}));
    EXPECT_EQ(g.find(Uid::O)->geom.type, ElemType::bf16);
    const TensorDesc* st = g.find(Uid::stats);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(st->geom.dims, (A4{2, 8, 128, 1}));
    EXPECT_EQ(st->geom.strides, (A4{8 * 128, 128, 1, 1}));
    EXPECT_EQ(st->geom.type, ElemType::f32);
    EXPECT_EQ(g.alignment, Alignment::bottom_right);
    EXPECT_EQ(g.right_bound, 0);
    EXPECT_FALSE(g.left_bound.has_value());
    EXPECT_FALSE(g.padding);
    EXPECT_FLOAT_EQ(g.attn_scale, 0.125f);  // 1/sqrt(64), exact in bf16
}

TEST(CudnnMapping, InferenceHasNoStatsAndCausalTl) {
    const GraphDesc g = describe_graph(make("b1hq4sq64d64", Dir::fwd_i, DType::f16, Mask::causal_tl));
    EXPECT_FALSE(g.generate_stats);
    ASSERT_EQ(g.outputs.size(), 1u);
    EXPECT_EQ(g.outputs[0].uid, Uid::O);
    EXPECT_EQ(g.outputs[0].geom.type, ElemType::f16);
    EXPECT_EQ(g.alignment, Alignment::top_left);
    EXPECT_EQ(g.right_bound, 0);
    EXPECT_EQ(g.find(Uid::stats), nullptr);
}

TEST(CudnnMapping, BackwardBshdDeterministic) {
    Problem p = make("b2hq4hkv1sq32d16", Dir::bwd, DType::bf16);
    p.layout = Layout::bshd;
    p.deterministic = true;
    const GraphDesc g = describe_graph(p);
    EXPECT_TRUE(g.backward);
    EXPECT_TRUE(g.deterministic);
    EXPECT_FALSE(g.alignment.has_value());
    for (Uid u : {Uid::Q, Uid::K, Uid::V, Uid::O, Uid::dO, Uid::stats}) EXPECT_NE(g.find(u), nullptr);
    ASSERT_EQ(g.outputs.size(), 3u);
    EXPECT_EQ(g.outputs[0].uid, Uid::dQ);
    EXPECT_EQ(g.find(Uid::dQ)->geom.strides, (A4{32 * 4 * 16, 16, 4 * 16, 1}));  // [B,S,H,D] memory
    EXPECT_EQ(g.find(Uid::dK)->geom.strides, (A4{32 * 1 * 16, 16, 16, 1}));
    EXPECT_EQ(g.find(Uid::stats)->geom.strides, (A4{4 * 32, 32, 1, 1}));  // stats stay dense bhsd
    // --deterministic is a backward knob: the forward graph ignores it.
    p.dir = Dir::fwd_t;
    EXPECT_FALSE(describe_graph(p).deterministic);
}

TEST(CudnnMapping, ScaleOpDivideBecomesReciprocal) {
    Problem p = make("b1hq1sq8d16", Dir::fwd_t, DType::bf16);
    p.scale_op = ScaleOp::div;
    p.scale = 2.f;
    EXPECT_FLOAT_EQ(describe_graph(p).attn_scale, 0.5f);
    p.scale_op = ScaleOp::mul;
    EXPECT_FLOAT_EQ(describe_graph(p).attn_scale, 2.f);
}

TEST(CudnnMapping, BiasBroadcastShapesAndType) {
    Problem p = make("b2hq4hkv2sq16skv24d32", Dir::bwd, DType::bf16, Mask::bias);
    p.bias_shape = BiasShape::b;
    p.mask_dt = DType::f32;
    const GraphDesc g = describe_graph(p);  // keep it alive: find() points into it
    const TensorDesc* b = g.find(Uid::bias);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->geom.dims, (A4{2, 1, 16, 24}));
    EXPECT_EQ(b->geom.strides, (A4{16 * 24, 16 * 24, 24, 1}));
    EXPECT_EQ(b->geom.type, ElemType::f32);
    p.mask_dt.reset();
    // Every --mask-shape: the dims of the bias the filler makes (a wrong dim here made cuDNN read
    // S_q * S_kv values from an S_kv-sized buffer).
    const std::pair<BiasShape, A4> shapes[] = {{BiasShape::one, {1, 1, 16, 24}}, {BiasShape::b, {2, 1, 16, 24}},
        {BiasShape::bh, {2, 4, 16, 24}}, {BiasShape::h, {1, 4, 16, 24}}, {BiasShape::one_row, {1, 1, 1, 24}},
        {BiasShape::b_row, {2, 1, 1, 24}}, {BiasShape::h_row, {1, 4, 1, 24}}, {BiasShape::bh_row, {2, 4, 1, 24}}};
    for (const auto& [shape, dims] : shapes) {
        p.bias_shape = shape;
        const GraphDesc gs = describe_graph(p);
        EXPECT_EQ(gs.find(Uid::bias)->geom.dims, dims) << format_as(shape);
        EXPECT_EQ(gs.find(Uid::bias)->geom.span(), dims[0] * dims[1] * dims[2] * dims[3]) << format_as(shape);
        EXPECT_EQ(gs.find(Uid::bias)->geom.type, ElemType::bf16);
    }
}

TEST(CudnnMapping, PaddingLengthsPerBatch) {
    Problem p = make("b3hq2sq64skv32d32", Dir::fwd_t, DType::f16, Mask::causal_br);
    p.seq_len_q = {64, 17, 1};
    const GraphDesc g = describe_graph(p);
    EXPECT_TRUE(g.padding);
    EXPECT_EQ(g.seq_len_q, (std::vector<std::int32_t>{64, 17, 1}));
    EXPECT_EQ(g.seq_len_kv, (std::vector<std::int32_t>{32, 32, 32}));  // unpadded side: full length
    const TensorDesc* t = g.find(Uid::seq_len_kv);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->geom.dims, (A4{3, 1, 1, 1}));
    EXPECT_EQ(t->geom.type, ElemType::s32);
}

// cuDNN keeps key j for query i when j <= i' + right_bound and, with a left bound,
// j > i' - left_bound, where i' = i (TOP_LEFT) or i + S_kv - S_q (BOTTOM_RIGHT, valid lengths with
// padding). The mapped bounds must keep exactly the keys visible() keeps.
TEST(CudnnMapping, BandRuleMatchesVisible) {
    for (Mask m : {Mask::none, Mask::causal_tl, Mask::causal_br, Mask::window})
        for (int l : {0, 1, 3})
            for (int r : {0, 2})
                for (const char* desc : {"b2hq1sq5skv9d8", "b2hq1sq9skv5d8", "b2hq1sq6d8"}) {
                    Problem p = make(desc, Dir::fwd_t, DType::bf16, m);
                    if (m == Mask::window) {
                        p.window_left = l;
                        p.window_right = r;
                    } else if (l != 0 || r != 0) continue;
                    p.seq_len_kv = {p.dims.S_kv, 3};
                    const GraphDesc g = describe_graph(p);
                    if (m == Mask::window) { EXPECT_EQ(g.left_bound, l + 1); }
                    for (std::int64_t b = 0; b < 2; ++b)
                        for (std::int64_t i = 0; i < p.dims.S_q; ++i)
                            for (std::int64_t j = 0; j < p.dims.S_kv; ++j) {
                                const std::int64_t sq = g.seq_len_q[b], skv = g.seq_len_kv[b];
                                const std::int64_t ii = g.alignment == Alignment::bottom_right ? i + skv - sq : i;
                                bool keep = i < sq && j < skv;
                                if (g.right_bound) keep = keep && j <= ii + *g.right_bound;
                                if (g.left_bound) keep = keep && j > ii - *g.left_bound;
                                EXPECT_EQ(keep, visible(p, b, i, j)) << knobs(p) << " " << desc << " b" << b << " i" << i << " j" << j;
                            }
                }
}

TEST(CudnnMapping, PrecheckAndFwdBwd) {
    EXPECT_EQ(cudnn_precheck(make("b1hq1sq8d16", Dir::fwd_t, DType::f32)),
            "cuDNN SDPA takes f16/bf16 io only (got --dt=f32)");
    EXPECT_EQ(cudnn_precheck(make("b1hq1sq8d16", Dir::fwd_t, DType::bf16)), std::nullopt);
    EXPECT_THROW(describe_graph(make("b1hq1sq8d16", Dir::fwd_bwd, DType::bf16)), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::cudnn
