#include <gtest/gtest.h>

#include "backends/onednn/onednn_graph.hpp"

using namespace sdpa;
using namespace sdpa::onednn;

namespace {

Problem make(Dir dir, DType dt, Mask mask, Dims d) {
    Problem p;
    p.dims = d;
    p.dir = dir;
    p.dt = dt;
    p.mask = mask;
    return p;
}

const Dims kMha{2, 4, 4, 16, 24, 32, 16};
const Dims kGqa{2, 8, 2, 16, 24, 32, 16};

}  // namespace

TEST(OnednnGraph, MaskDimsFollowRankAndBroadcast) {
    EXPECT_EQ(mask_dims(make(Dir::fwd_t, DType::f32, Mask::none, kMha)), std::vector<std::int64_t>{});
    EXPECT_EQ(mask_dims(make(Dir::fwd_t, DType::f32, Mask::causal_tl, kMha)), (std::vector<std::int64_t>{1, 1, 16, 24}));
    EXPECT_EQ(mask_dims(make(Dir::fwd_t, DType::f32, Mask::causal_br, kGqa)), (std::vector<std::int64_t>{1, 1, 1, 16, 24}));
    Problem p = make(Dir::bwd, DType::bf16, Mask::bias, kGqa);
    p.bias_shape = BiasShape::b;
    EXPECT_EQ(mask_dims(p), (std::vector<std::int64_t>{2, 1, 1, 16, 24}));
    p.bias_shape = BiasShape::bh;  // heads split as [H_kv, H_q / H_kv], same memory order as H_q
    EXPECT_EQ(mask_dims(p), (std::vector<std::int64_t>{2, 2, 4, 16, 24}));
    p.dims = kMha;
    EXPECT_EQ(mask_dims(p), (std::vector<std::int64_t>{2, 4, 16, 24}));
}

// Window masks and padding reach oneDNN as explicit -inf entries of the additive mask: a window
// alone broadcasts over B; padding makes the mask per batch, even without another mask.
TEST(OnednnGraph, WindowAndPaddingMaskDims) {
    Problem w = make(Dir::fwd_t, DType::f32, Mask::window, kMha);
    w.window_left = 3;
    EXPECT_TRUE(has_mask_tensor(w));
    EXPECT_EQ(mask_dims(w), (std::vector<std::int64_t>{1, 1, 16, 24}));
    Problem pad = make(Dir::bwd, DType::bf16, Mask::none, kGqa);
    EXPECT_FALSE(has_mask_tensor(pad));
    pad.seq_len_kv = {24, 5};
    EXPECT_TRUE(has_mask_tensor(pad));
    EXPECT_EQ(mask_dims(pad), (std::vector<std::int64_t>{2, 1, 1, 16, 24}));
    pad.mask = Mask::bias;  // a [1,1,..] bias with padding: per batch too
    EXPECT_EQ(mask_dims(pad), (std::vector<std::int64_t>{2, 1, 1, 16, 24}));
}

TEST(OnednnGraph, ForwardPortsAndOps) {
    SdpaGraph g = build_sdpa_graph(make(Dir::fwd_t, DType::bf16, Mask::causal_tl, kGqa), dnnl::engine::kind::cpu);
    EXPECT_EQ(g.op_count, 5);  // MatMul, Multiply, Add, SoftMax, MatMul
    EXPECT_EQ(g.inputs.at(Port::Q).dims, (std::vector<std::int64_t>{2, 2, 4, 16, 32}));
    EXPECT_EQ(g.inputs.at(Port::K).dims, (std::vector<std::int64_t>{2, 2, 1, 24, 32}));
    EXPECT_EQ(g.inputs.at(Port::V).dims, (std::vector<std::int64_t>{2, 2, 1, 24, 16}));
    EXPECT_EQ(g.outputs.at(Port::O).dims, (std::vector<std::int64_t>{2, 2, 4, 16, 16}));
    EXPECT_EQ(g.outputs.at(Port::stats).dims, (std::vector<std::int64_t>{2, 2, 4, 16, 1}));
    EXPECT_EQ(g.outputs.at(Port::stats).lt.get_data_type(), dnnl::graph::logical_tensor::data_type::f32);
    EXPECT_EQ(g.inputs.count(Port::dO), 0u);

    SdpaGraph gi = build_sdpa_graph(make(Dir::fwd_i, DType::f32, Mask::none, kMha), dnnl::engine::kind::cpu);
    EXPECT_EQ(gi.op_count, 4);
    EXPECT_EQ(gi.outputs.count(Port::stats), 0u);
    EXPECT_EQ(gi.inputs.count(Port::mask), 0u);
}

TEST(OnednnGraph, BackwardPortsAndOps) {
    // 16-bit GQA with a mask: 13 core ops + mask Add + 2 TypeCasts + 2 group ReduceSums.
    SdpaGraph g = build_sdpa_graph(make(Dir::bwd, DType::bf16, Mask::causal_br, kGqa), dnnl::engine::kind::cpu);
    EXPECT_EQ(g.op_count, 18);
    EXPECT_EQ(g.outputs.at(Port::dQ).dims, (std::vector<std::int64_t>{2, 2, 4, 16, 32}));
    EXPECT_EQ(g.outputs.at(Port::dK).dims, (std::vector<std::int64_t>{2, 2, 1, 24, 32}));
    EXPECT_EQ(g.outputs.at(Port::dV).dims, (std::vector<std::int64_t>{2, 2, 1, 24, 16}));
    EXPECT_EQ(g.inputs.at(Port::stats).dims, (std::vector<std::int64_t>{2, 2, 4, 16, 1}));
    // f32 MHA without a mask: no casts, no reductions.
    SdpaGraph m = build_sdpa_graph(make(Dir::bwd, DType::f32, Mask::none, kMha), dnnl::engine::kind::cpu);
    EXPECT_EQ(m.op_count, 13);
    EXPECT_EQ(m.outputs.at(Port::dK).dims, (std::vector<std::int64_t>{2, 4, 24, 32}));
}

// The library must recognise each graph as one fused SDPA partition; a graph that falls apart
// into pieces means the pattern no longer matches what oneDNN documents.
TEST(OnednnGraph, EveryTrainingGraphIsOnePartition) {
    for (Dir dir : {Dir::fwd_t, Dir::bwd})
        for (DType dt : {DType::f32, DType::bf16})
            for (Mask mask : {Mask::none, Mask::causal_tl, Mask::bias})
                for (const Dims& d : {kMha, kGqa}) {
                    SdpaGraph g = build_sdpa_graph(make(dir, dt, mask, d), dnnl::engine::kind::cpu);
                    g.graph.finalize();
                    const auto parts = g.graph.get_partitions();
                    ASSERT_EQ(parts.size(), 1u) << format_as(dir) << " " << format_as(dt) << " " << format_as(mask)
                                                << " H_kv=" << d.H_kv;
                    EXPECT_TRUE(parts[0].is_supported());
                    EXPECT_EQ(static_cast<int>(parts[0].get_ops_num()), g.op_count);
                }
}
