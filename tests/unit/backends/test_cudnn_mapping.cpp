// What the cuDNN adapter would send to cuDNN (backends/cudnn/cudnn_mapping.hpp), checked without a
// GPU: tensor dims, strides, types and uids, the SDPA attributes, and that cuDNN's band rule with
// the mapped bounds keeps exactly the keys core's visible() keeps.
#include "driver/knobs.hpp"
#include "backends/cudnn/cudnn_mapping.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "backends/backend.hpp"
#include "backends/guarded_buffer.hpp"
#include "backends/registry.hpp"
#include "core/dtype.hpp"

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

// What the reports list as bound (issue 32): the graph's tensors with their names, types, dims and
// strides, inputs then outputs, then the by-value scalars.
TEST(CudnnMapping, BoundTensorsAreTheGraphsTensors) {
    Problem p = make("b2hq4hkv2sq8skv16d4", Dir::bwd, DType::bf16);
    p.layout = Layout::bshd;
    p.dropout = Dropout{0.25f, 1, 1};
    const GraphDesc g = describe_graph(p);
    const std::vector<BoundTensor> b = bound_tensors(g);
    ASSERT_EQ(b.size(), g.inputs.size() + g.outputs.size() + g.scalars.size());
    const TensorDesc* k = g.find(Uid::K);
    const auto at = [&](const std::string& name) {
        for (const BoundTensor& t : b)
            if (t.name == name) return t;
        ADD_FAILURE() << "no bound tensor " << name;
        return BoundTensor{};
    };
    EXPECT_EQ(at(k->name), (BoundTensor{k->name, "bf16", {2, 2, 16, 4}, {128, 4, 8, 1}}));
    EXPECT_EQ(b.front().name, g.inputs.front().name);
    EXPECT_EQ(b[g.inputs.size()].name, g.outputs.front().name);
    EXPECT_EQ(b.back(), (BoundTensor{g.scalars.back().name, "f32", {1, 1, 1, 1}, {1, 1, 1, 1}}));
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
    // Bounds past the sequences (2^40: "unbounded" in docs/knobs_masks.md) are clamped into int and still keep
    // exactly the visible keys; with and without padding (a bottom-right band with S_q > S_kv
    // turns on padding with full lengths, which must change nothing).
    for (Mask m : {Mask::none, Mask::causal_tl, Mask::causal_br, Mask::window})
        for (std::int64_t l : {std::int64_t{0}, std::int64_t{1}, std::int64_t{3}, std::int64_t{1} << 40})
            for (std::int64_t r : {std::int64_t{0}, std::int64_t{2}, std::int64_t{1} << 40})
                for (const char* desc : {"b2hq1sq5skv9d8", "b2hq1sq9skv5d8", "b2hq1sq6d8"})
                    for (const bool padded : {true, false}) {
                    Problem p = make(desc, Dir::fwd_t, DType::bf16, m);
                    if (m == Mask::window) {
                        p.window_left = l;
                        p.window_right = r;
                    } else if (l != 0 || r != 0) continue;
                    if (padded) p.seq_len_kv = {p.dims.S_kv, 3};
                    const GraphDesc g = describe_graph(p);
                    if (m == Mask::window) {
                        EXPECT_EQ(g.left_bound, std::min(l, p.dims.S_kv) + 1);
                        EXPECT_LE(*g.right_bound, p.dims.S_q);
                    }
                    const bool br_tall = (m == Mask::causal_br || m == Mask::window) && p.dims.S_q > p.dims.S_kv;
                    EXPECT_EQ(g.padding, padded || br_tall) << knobs(p) << " " << desc;
                    if (!g.padding) continue;  // the band below reads the lengths
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

// Dropout in cuDNN's caller-supplied-mask mode: the mask tensor [B,H_q,S_q,S_kv] dense in the io
// dtype (NVIDIA's custom-dropout sample), whatever the io layout, and the by-value f32 scalars
// scale = 1/(1-p) (forward and backward) and scale_inv = 1-p (backward only).
TEST(CudnnMapping, DropoutForwardMaskAndScale) {
    Problem p = make("b2hq4hkv2sq16skv24d32", Dir::fwd_t, DType::bf16, Mask::causal_tl);
    p.layout = Layout::bshd;  // the io layout does not reach the mask
    p.dropout = Dropout{0.25f, 7, 3};
    const GraphDesc g = describe_graph(p);
    EXPECT_TRUE(g.dropout);
    const TensorDesc* m = g.find(Uid::dropout_mask);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->name, "dropout_mask");
    EXPECT_EQ(m->geom.role, Role::dropout_mask);
    EXPECT_EQ(m->geom.dims, (A4{2, 4, 16, 24}));
    EXPECT_EQ(m->geom.strides, (A4{4 * 16 * 24, 16 * 24, 24, 1}));
    EXPECT_EQ(m->geom.type, ElemType::bf16);
    EXPECT_EQ(m->geom.span(), 2 * 4 * 16 * 24);
    EXPECT_TRUE(m->geom.input);
    EXPECT_FALSE(m->geom.output);
    EXPECT_EQ(m->geom, *dropout_mask_geom(p));
    // An input, not an output (the harness never reads it back).
    bool in_inputs = false;
    for (const TensorDesc& t : g.inputs) in_inputs = in_inputs || t.uid == Uid::dropout_mask;
    EXPECT_TRUE(in_inputs);
    for (const TensorDesc& t : g.outputs) EXPECT_NE(t.uid, Uid::dropout_mask);
    ASSERT_EQ(g.scalars.size(), 1u);
    const ScalarDesc* s = g.find_scalar(Uid::dropout_scale);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->name, "dropout_scale");
    EXPECT_EQ(s->type, ElemType::f32);
    EXPECT_EQ(s->dims, (A4{1, 1, 1, 1}));
    EXPECT_EQ(s->strides, (A4{1, 1, 1, 1}));
    EXPECT_EQ(s->value, 1.0f / (1.0f - 0.25f));
    EXPECT_EQ(g.find_scalar(Uid::dropout_scale_inv), nullptr);  // SDPA_attributes::set_dropout(mask, scale)
    EXPECT_EQ(g.find(Uid::dropout_scale), nullptr);             // scalars are not device tensors
    // The uids stay distinct from every other tensor's.
    EXPECT_EQ(static_cast<int>(Uid::dropout_mask), 13);
    EXPECT_EQ(static_cast<int>(Uid::dropout_scale), 14);
    EXPECT_EQ(static_cast<int>(Uid::dropout_scale_inv), 15);
}

TEST(CudnnMapping, DropoutBackwardScaleInverse) {
    Problem p = make("b1hq8hkv2sq48skv64d64", Dir::bwd, DType::f16);
    p.dropout = Dropout{0.1f, 1, 1};
    const GraphDesc g = describe_graph(p);
    EXPECT_TRUE(g.dropout);
    const TensorDesc* m = g.find(Uid::dropout_mask);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->geom.dims, (A4{1, 8, 48, 64}));  // H_q heads, not H_kv
    EXPECT_EQ(m->geom.strides, (A4{8 * 48 * 64, 48 * 64, 64, 1}));
    EXPECT_EQ(m->geom.type, ElemType::f16);
    ASSERT_EQ(g.scalars.size(), 2u);
    const ScalarDesc* s = g.find_scalar(Uid::dropout_scale);
    const ScalarDesc* si = g.find_scalar(Uid::dropout_scale_inv);
    ASSERT_NE(s, nullptr);
    ASSERT_NE(si, nullptr);
    EXPECT_EQ(s->value, 1.0f / (1.0f - 0.1f));
    EXPECT_EQ(si->value, 1.0f - 0.1f);
    EXPECT_EQ(si->type, ElemType::f32);
    EXPECT_EQ(si->dims, (A4{1, 1, 1, 1}));
    EXPECT_EQ(si->strides, (A4{1, 1, 1, 1}));
    EXPECT_NEAR(s->value * si->value, 1.0f, 1e-6f);
    // The backward's usual inputs are all still there.
    for (Uid u : {Uid::Q, Uid::K, Uid::V, Uid::O, Uid::dO, Uid::stats}) EXPECT_NE(g.find(u), nullptr);
}

TEST(CudnnMapping, DropoutZeroKeepsTheMaskWithScaleOne) {
    Problem p = make("b1hq2sq32d16", Dir::bwd, DType::bf16);
    p.dropout = Dropout{0.f, 1, 1};
    const GraphDesc g = describe_graph(p);
    EXPECT_TRUE(g.dropout);
    EXPECT_NE(g.find(Uid::dropout_mask), nullptr);
    EXPECT_EQ(g.find_scalar(Uid::dropout_scale)->value, 1.f);
    EXPECT_EQ(g.find_scalar(Uid::dropout_scale_inv)->value, 1.f);
    EXPECT_EQ(cudnn_precheck(p), std::nullopt);
    p.dropout->p = 0.5f;
    EXPECT_EQ(cudnn_precheck(p), std::nullopt);
}

TEST(CudnnMapping, NoDropoutNoMaskNoScalars) {
    for (Dir dir : {Dir::fwd_i, Dir::fwd_t, Dir::bwd}) {
        const Problem p = make("b1hq2sq32d16", dir, DType::bf16);
        const GraphDesc g = describe_graph(p);
        EXPECT_FALSE(g.dropout);
        EXPECT_EQ(g.find(Uid::dropout_mask), nullptr);
        EXPECT_TRUE(g.scalars.empty());
        EXPECT_FALSE(dropout_mask_geom(p).has_value());
    }
    // The two steps of a fwd_bwd case (the driver's fwd_t, then bwd) share one mask geometry.
    Problem p = make("b1hq2sq32d16", Dir::fwd_t, DType::f16);
    p.dropout = Dropout{0.2f, 3, 4};
    const auto m = dropout_mask_geom(p);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->dims, (A4{1, 2, 32, 32}));
    EXPECT_EQ(m->type, ElemType::f16);
    p.dir = Dir::bwd;
    EXPECT_EQ(*m, *dropout_mask_geom(p));
}

/// The 16-bit element at element offset `off` of `bytes`.
std::uint16_t bits_at(const std::vector<std::byte>& bytes, std::int64_t off) {
    std::uint16_t v = 0;
    std::memcpy(&v, bytes.data() + off * 2, 2);
    return v;
}

// The bytes uploaded as the mask: Z (1 or 0 in the io dtype) at the mask tensor's offsets, from the
// declared mask element for element. A pattern mask catches any index mix-up; the generator's
// mask must come out with the same keep count as keep_row gives.
TEST(CudnnMapping, DropoutMaskBytesAreZInTheIoDtype) {
    Problem p = make("b2hq3hkv1sq5skv7d8", Dir::fwd_t, DType::bf16);
    p.dropout = Dropout{0.5f, 11, 2};
    const TensorGeom t = *dropout_mask_geom(p);
    const Dims& d = p.dims;
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(d.B * d.H_q * d.S_q * d.S_kv));
    auto pattern = [](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
        return (b * 7 + h * 3 + i * 5 + j) % 3 == 0;
    };
    std::size_t e = 0;
    for (std::int64_t b = 0; b < d.B; ++b)
        for (std::int64_t h = 0; h < d.H_q; ++h)
            for (std::int64_t i = 0; i < d.S_q; ++i)
                for (std::int64_t j = 0; j < d.S_kv; ++j) keep[e++] = pattern(b, h, i, j) ? 1 : 0;
    const auto stored = stored_dropout_mask(p, keep, "pattern");
    for (DType dt : {DType::bf16, DType::f16}) {
        TensorGeom tt = t;
        tt.type = elem_type(dt);
        const std::vector<std::byte> bytes = dropout_mask_bytes(tt, *stored);
        ASSERT_EQ(bytes.size(), static_cast<std::size_t>(tt.span()) * 2);
        const std::uint16_t one = dt == DType::bf16 ? 0x3F80 : 0x3C00;
        for (std::int64_t b = 0; b < d.B; ++b)
            for (std::int64_t h = 0; h < d.H_q; ++h)
                for (std::int64_t i = 0; i < d.S_q; ++i)
                    for (std::int64_t j = 0; j < d.S_kv; ++j)
                        ASSERT_EQ(bits_at(bytes, tt.offset(b, h, i, j)), pattern(b, h, i, j) ? one : 0)
                                << format_as(dt) << " b" << b << " h" << h << " i" << i << " j" << j;
    }
    // sdpabench's generator (the mask the backend declares): same keep flags, row by row.
    const auto gen = ref_dropout_mask(p);
    const std::vector<std::byte> bytes = dropout_mask_bytes(t, *gen);
    std::vector<std::uint8_t> row(static_cast<std::size_t>(d.S_kv));
    std::int64_t kept = 0;
    for (std::int64_t b = 0; b < d.B; ++b)
        for (std::int64_t h = 0; h < d.H_q; ++h)
            for (std::int64_t i = 0; i < d.S_q; ++i) {
                gen->keep_row(b, h, i, 0, d.S_kv, row.data());
                for (std::int64_t j = 0; j < d.S_kv; ++j) {
                    kept += row[static_cast<std::size_t>(j)];
                    ASSERT_EQ(bits_at(bytes, t.offset(b, h, i, j)), row[static_cast<std::size_t>(j)] ? 0x3F80 : 0);
                }
            }
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, d.B * d.H_q * d.S_q * d.S_kv);
}

#ifdef SDPABENCH_HAVE_CUDNN
// The backend (constructed without touching a device) declares sdpabench's own generator as its
// mask, and counts the host copy of the mask tensor in its memory estimate.
TEST(CudnnMapping, BackendDeclaresTheRefMaskAndCountsIt) {
    const auto be = make_backend("cudnn");
    ASSERT_NE(be, nullptr);
    Problem p = make("b2hq4sq64skv80d32", Dir::bwd, DType::bf16);
    p.dropout = Dropout{0.1f, 7, 3};
    const auto m = be->dropout_mask(p);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(first_mask_difference(p, *m, "cudnn", *ref_dropout_mask(p), "ref"), std::nullopt);
    auto mask_bytes = [&](const Problem& q) {
        double bytes = 0;
        for (const MemoryItem& it : be->host_memory(q, 1))
            if (it.what.find("dropout mask") != std::string::npos) bytes += it.bytes;
        return bytes;
    };
    EXPECT_EQ(mask_bytes(p), 2.0 * 4 * 64 * 80 * 2);  // [B,H_q,S_q,S_kv] bf16
    p.dropout.reset();
    EXPECT_EQ(mask_bytes(p), 0.0);
}

// cuDNN's conventions (docs/cudnn.md#conventions): -inf stats on fully masked rows, and with padding
// the O, stats and gradient rows past the valid lengths unspecified (the compare tests show what
// each flag skips: tests/unit/compare/test_compare.cpp PaddedGradRows).
TEST(CudnnMapping, BackendConventions) {
    const Conventions c = make_backend("cudnn")->conventions();
    EXPECT_EQ(c.masked_row_stats, -INFINITY);
    EXPECT_TRUE(c.padded_rows_unspecified);
    EXPECT_TRUE(c.padded_grad_rows_unspecified);
    const Conventions def;  // every other backend writes its padded gradient rows as zeros
    EXPECT_FALSE(def.padded_grad_rows_unspecified);
}
#endif

TEST(CudnnMapping, Precheck) {
    EXPECT_EQ(cudnn_precheck(make("b1hq1sq8d16", Dir::fwd_t, DType::f32)),
            "cuDNN SDPA takes f16, bf16 or fp8 io only (got --dt=f32)");
    EXPECT_EQ(cudnn_precheck(make("b1hq1sq8d16", Dir::fwd_t, DType::bf16)), std::nullopt);
}

}  // namespace
}  // namespace sdpa::cudnn

namespace sdpa::cudnn {
namespace {

// fp8 (Graph::sdpa_fp8 / sdpa_fp8_backward of cuDNN frontend 1.19.1): the io tensors in the fp8
// type, stats f32, every descale and scale as a [1,1,1,1] f32 device tensor with scale =
// 1/descale, the amax outputs bound to the entries of sdpabench's amax role.
TEST(CudnnMapping, Fp8ForwardScalarsAndAmax) {
    Problem p = make("b2hq4hkv2sq64skv80d64", Dir::fwd_t, DType::e4m3, Mask::causal_tl);
    p.fp8.of(Fp8Tensor::O) = 0.0625f;
    const GraphDesc g = describe_graph(p);
    EXPECT_TRUE(g.fp8);
    EXPECT_EQ(g.find(Uid::Q)->geom.type, ElemType::e4m3);
    EXPECT_EQ(g.find(Uid::O)->geom.type, ElemType::e4m3);
    EXPECT_EQ(g.find(Uid::stats)->geom.type, ElemType::f32);
    const std::pair<Uid, float> want[] = {{Uid::descale_q, 0.75f}, {Uid::descale_k, 1.25f}, {Uid::descale_v, 0.625f},
        {Uid::descale_s, 3.f / 1024}, {Uid::scale_s, 1024.f / 3}, {Uid::scale_o, 16.f}};
    EXPECT_EQ(g.scalars.size(), std::size(want));
    for (const auto& [uid, v] : want) {
        const ScalarDesc* s = g.find_scalar(uid);
        ASSERT_NE(s, nullptr) << static_cast<int>(uid);
        EXPECT_FLOAT_EQ(s->value, v) << s->name;
        EXPECT_FALSE(s->by_value) << s->name;  // a device tensor, as NVIDIA's fp8 samples bind them
        EXPECT_EQ(s->type, ElemType::f32);
    }
    ASSERT_EQ(g.amax.size(), 2u);
    EXPECT_EQ(g.amax[0].uid, Uid::amax_s);
    EXPECT_EQ(g.amax[0].index, 0);
    EXPECT_EQ(g.amax[1].uid, Uid::amax_o);
    EXPECT_EQ(g.amax[1].index, 1);
    EXPECT_EQ(geometry(p).at(Role::amax).dims[3], 2);  // the guarded buffer the two entries live in
    EXPECT_EQ(cudnn_precheck(p), std::nullopt);        // bias, D and the architecture are cuDNN's to refuse
}

TEST(CudnnMapping, Fp8BackwardScalarsAndAmax) {
    const GraphDesc g = describe_graph(make("b1hq2sq32d64", Dir::bwd, DType::e5m2));
    EXPECT_TRUE(g.fp8);
    for (const Uid u : {Uid::O, Uid::dO, Uid::dQ, Uid::dK, Uid::dV}) EXPECT_EQ(g.find(u)->geom.type, ElemType::e5m2);
    const Fp8Descales d;
    const std::pair<Uid, float> want[] = {{Uid::descale_q, d.of(Fp8Tensor::Q)}, {Uid::descale_k, d.of(Fp8Tensor::K)},
        {Uid::descale_v, d.of(Fp8Tensor::V)}, {Uid::descale_o, d.of(Fp8Tensor::O)}, {Uid::descale_dO, d.of(Fp8Tensor::dO)},
        {Uid::descale_s, d.of(Fp8Tensor::S)}, {Uid::descale_dP, d.of(Fp8Tensor::dP)},
        {Uid::scale_s, 1 / d.of(Fp8Tensor::S)}, {Uid::scale_dQ, 1 / d.of(Fp8Tensor::dQ)},
        {Uid::scale_dK, 1 / d.of(Fp8Tensor::dK)}, {Uid::scale_dV, 1 / d.of(Fp8Tensor::dV)},
        {Uid::scale_dP, 1 / d.of(Fp8Tensor::dP)}};
    EXPECT_EQ(g.scalars.size(), std::size(want));
    for (const auto& [uid, v] : want) {
        const ScalarDesc* s = g.find_scalar(uid);
        ASSERT_NE(s, nullptr) << static_cast<int>(uid);
        EXPECT_FLOAT_EQ(s->value, v) << s->name;
    }
    ASSERT_EQ(g.amax.size(), 4u);
    const Uid order[] = {Uid::amax_dQ, Uid::amax_dK, Uid::amax_dV, Uid::amax_dP};  // kAmaxBwd
    for (std::size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(g.amax[k].uid, order[k]);
        EXPECT_EQ(g.amax[k].index, static_cast<std::int64_t>(k));
    }
    // Non-fp8 graphs have none of it.
    const GraphDesc b = describe_graph(make("b1hq2sq32d64", Dir::bwd, DType::bf16));
    EXPECT_FALSE(b.fp8);
    EXPECT_TRUE(b.amax.empty());
    EXPECT_TRUE(b.scalars.empty());
}

// The frontend declares every tensor 16-byte aligned: each amax output gets a slot of its own in the
// one guarded buffer (payload at a 4096-byte guard past a 256-byte aligned allocation), and the 12
// bytes after each entry are a stride gap that the guards check.
TEST(CudnnMapping, Fp8AmaxPointersAre16ByteAligned) {
    static_assert(GuardedBuffer::kGuardBytes % kTensorAlignment == 0);
    for (const Dir dir : {Dir::fwd_t, Dir::fwd_i, Dir::bwd}) {
        const Problem p = make("b1hq2sq32d64", dir, DType::e4m3);
        const GraphDesc g = describe_graph(p);
        ASSERT_TRUE(g.amax_buffer);
        const TensorGeom& buf = *g.amax_buffer;
        EXPECT_EQ(buf.dims, geometry(p).at(Role::amax).dims);  // the same role, only its strides differ
        EXPECT_EQ(buf.role, Role::amax);
        EXPECT_EQ(buf.strides[3], 4);
        EXPECT_TRUE(non_overlapping(buf));
        std::vector<std::size_t> offsets;
        for (const AmaxDesc& a : g.amax) {
            EXPECT_EQ(a.byte_offset % kTensorAlignment, 0u) << a.name;
            EXPECT_EQ(a.byte_offset, static_cast<std::size_t>(a.index) * kTensorAlignment) << a.name;
            offsets.push_back(a.byte_offset);
        }
        EXPECT_EQ(offsets.size(), static_cast<std::size_t>(buf.dims[3]));
        // Values written at the bound offsets read back as the amax role's entries, in order.
        GuardedBuffer gb(buf);
        for (std::size_t k = 0; k < offsets.size(); ++k) {
            const float v = 1.5f + static_cast<float>(k);
            std::memcpy(static_cast<std::byte*>(gb.data()) + offsets[k], &v, sizeof v);
        }
        EXPECT_TRUE(gb.check().clean());
        const Tensor t = gb.read();
        for (std::size_t k = 0; k < offsets.size(); ++k) EXPECT_EQ(t.data[k], 1.5f + static_cast<float>(k));
        // A kernel writing 8 bytes at the first amax pointer hits the gap.
        const float w = 2.f;
        std::memcpy(static_cast<std::byte*>(gb.data()) + offsets[0] + sizeof(float), &w, sizeof w);
        EXPECT_EQ(gb.check().gap_written, 1);
    }
    EXPECT_FALSE(describe_graph(make("b1hq2sq32d64", Dir::bwd, DType::bf16)).amax_buffer);
}

// Ragged (THD): every packed tensor names an offsets tensor [B+1] of element offsets, s32 unless
// an offset passes 2^31 - 1; empty sequences, one of length 1 and lengths that are no multiple of
// 8 give offsets that are no multiple of 8 either. Padding is on (cuDNN takes ragged offsets only
// with its padding mask), stats stay padded [B,H_q,S_q,1].
TEST(CudnnMapping, RaggedOffsetsPerPackedTensor) {
    Problem p = make("b4hq4hkv2sq13skv21dqk16dv8", Dir::bwd, DType::bf16);
    p.layout = Layout::bshd;
    p.ragged = true;
    p.seq_len_q = {0, 1, 13, 5};
    p.seq_len_kv = {3, 21, 0, 7};
    ASSERT_EQ(validate(p), std::nullopt);
    const GraphDesc g = describe_graph(p);
    EXPECT_TRUE(g.padding);
    EXPECT_EQ(g.seq_len_q, (std::vector<std::int32_t>{0, 1, 13, 5}));
    ASSERT_EQ(g.ragged.size(), 8u);  // Q, K, V, O, dO, dQ, dK, dV
    const TensorDesc* q = g.find(Uid::Q);
    ASSERT_TRUE(q->ragged);
    const auto rq = std::find_if(g.ragged.begin(), g.ragged.end(), [&](const RaggedDesc& r) { return r.uid == *q->ragged; });
    ASSERT_NE(rq, g.ragged.end());
    EXPECT_EQ(rq->type, ElemType::s32);
    EXPECT_EQ(rq->offsets, (std::vector<std::int64_t>{0, 0, 64, 64 * 14, 64 * 19}));  // H_q x D_qk = 64 per token
    const TensorDesc* dv = g.find(Uid::dV);
    ASSERT_TRUE(dv->ragged);
    const auto rv = std::find_if(g.ragged.begin(), g.ragged.end(), [&](const RaggedDesc& r) { return r.uid == *dv->ragged; });
    EXPECT_EQ(rv->offsets, (std::vector<std::int64_t>{0, 48, 384, 384, 496}));  // H_kv x D_v = 16 per token
    EXPECT_FALSE(g.find(Uid::stats)->ragged);
    EXPECT_EQ(g.find(Uid::stats)->geom.dims, (A4{4, 4, 13, 1}));
    // Not ragged: no offsets.
    p.ragged = false;
    EXPECT_TRUE(describe_graph(p).ragged.empty());
}

TEST(CudnnMapping, RaggedOffsetsPast2To31AreS64) {
    Problem p = make("b2hq64sq40000d128", Dir::fwd_i, DType::bf16);
    p.layout = Layout::bshd;
    p.ragged = true;
    p.seq_len_q = {40000, 40000};
    const GraphDesc g = describe_graph(p);
    ASSERT_FALSE(g.ragged.empty());
    EXPECT_EQ(g.ragged.front().offsets.back(), 2ll * 40000 * 64 * 128);  // 655,360,000: s32 still
    EXPECT_EQ(g.ragged.front().type, ElemType::s32);
    p.dims.B = 4;
    p.seq_len_q = {40000, 40000, 40000, 40000};
    p.dims.H_q = p.dims.H_kv = 128;
    EXPECT_EQ(describe_graph(p).ragged.front().type, ElemType::s64);  // 2,621,440,000 > 2^31 - 1
}

}  // namespace
}  // namespace sdpa::cudnn
