#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "driver/knobs.hpp"
#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "backends/onednn/onednn_graph.hpp"
#include "driver/run_case.hpp"
#include "../graph/json_test_util.hpp"

using namespace sdpa;
using namespace sdpa::onednn;
using sdpa::json_test::kGqa;
using sdpa::json_test::kMha;

namespace {

/// test::make_problem with the sizes last.
Problem make(Dir dir, DType dt, Mask mask, Dims d) { return test::make_problem(d, dir, dt, mask); }

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

// ---- Implicit causal mask and device-tensor dropout scalars --------------------------------

namespace {

Problem implicit_causal(Dir dir, DType dt, Mask mask, Dims d) {
    Problem p = make(dir, dt, mask, d);
    p.implicit_mask = true;
    return p;
}

/// Runs p on the oneDNN backend through the driver (fill, run, reference, compare).
CaseResult run_onednn(const Problem& p) {
    Case c;
    c.prb = p;
    c.backend = "onednn";
    auto be = make_backend("onednn");
    EXPECT_TRUE(be);
    if (!be) return {};
    return run_case(c, *be, 0);
}

}  // namespace

// The implicit causal mask (GenIndex, [Add S_kv, Subtract S_q,] GreaterEqual, Select) has no
// mask port and stays one fused partition, forward and backward, MHA and GQA.
TEST(OnednnGraph, ImplicitCausalGraphsAreOnePartition) {
    for (Mask mask : {Mask::causal_tl, Mask::causal_br})
        for (Dir dir : {Dir::fwd_t, Dir::bwd})
            for (const Dims& d : {kMha, kGqa}) {
                SCOPED_TRACE(fmt::format("{} {} H_kv={}", mask, dir, d.H_kv));
                const Problem p = implicit_causal(dir, DType::bf16, mask, d);
                SdpaGraph g = build_sdpa_graph(p, dnnl::engine::kind::cpu);
                EXPECT_EQ(g.inputs.count(Port::mask), 0u);
                ASSERT_EQ(g.inputs.count(Port::mask_fill), 1u);
                EXPECT_EQ(g.inputs.count(Port::causal_s_kv), mask == Mask::causal_br ? 1u : 0u);
                EXPECT_EQ(g.inputs.count(Port::causal_s_q), mask == Mask::causal_br ? 1u : 0u);
                if (mask == Mask::causal_br) {
                    EXPECT_EQ(g.inputs.at(Port::causal_s_kv).lt.get_data_type(), dnnl::graph::logical_tensor::data_type::s32);
                    EXPECT_EQ(g.inputs.at(Port::causal_s_kv).lt.get_property_type(),
                            dnnl::graph::logical_tensor::property_type::host_scalar);
                }
                // The explicit form: one mask Add; the implicit one: GenIndex x2, GreaterEqual, Select
                // (+ Add and Subtract for causal_br) instead.
                const int extra = mask == Mask::causal_br ? 6 : 4;
                const int explicit_ops = build_sdpa_graph(make(dir, DType::bf16, mask, d), dnnl::engine::kind::cpu).op_count;
                EXPECT_EQ(g.op_count, explicit_ops - 1 + extra);
                g.graph.finalize();
                const auto parts = g.graph.get_partitions();
                ASSERT_EQ(parts.size(), 1u);
                EXPECT_TRUE(parts[0].is_supported());
                EXPECT_EQ(static_cast<int>(parts[0].get_ops_num()), g.op_count);
            }
}

// The implicit causal masks on oneDNN against the reference, with S_q != S_kv both ways
// (causal_br with S_q > S_kv hides the first rows entirely), forward then backward in bf16.
TEST(OnednnRun, ImplicitCausalFwdBwdPasses) {
    for (Mask mask : {Mask::causal_tl, Mask::causal_br})
        for (const auto& [sq, skv] : {std::pair<std::int64_t, std::int64_t>{33, 17}, {17, 33}})
            for (std::int64_t h_kv : {2, 4}) {
                const Problem p = implicit_causal(Dir::fwd_bwd, DType::bf16, mask, Dims{2, 4, h_kv, sq, skv, 32, 16});
                SCOPED_TRACE(knobs(p) + " " + descriptor(p.dims));
                ASSERT_EQ(validate(p), std::nullopt);
                const CaseResult r = run_onednn(p);
                if (r.status == Status::skipped) GTEST_SKIP() << r.reason;
                EXPECT_EQ(r.status, Status::passed) << r.reason;
                EXPECT_TRUE(r.checked);
                ASSERT_EQ(r.checks.size(), 5u);  // O, stats, dQ, dK, dV
                EXPECT_NE(r.repro.find("--mask-form=implicit"), std::string::npos) << r.repro;
                // The graphs that ran are the implicit ones (GenIndex ... Select, no mask Add).
                for (Dir half : {Dir::fwd_t, Dir::bwd}) {
                    Problem q = p;
                    q.dir = half;
                    const std::string note = fmt::format("{}: oneDNN graph: {} ops, 1 partition(s)",
                            half == Dir::fwd_t ? "fwd" : "bwd", describe_sdpa_graph(q).ops.size());
                    EXPECT_NE(std::find(r.notes.begin(), r.notes.end(), note), r.notes.end())
                            << note << " not in: " << fmt::format("{}", fmt::join(r.notes, " | "));
                }
            }
}

// Dropout with seed, offset and probability bound as [1] device tensors: the backward (and the
// forward with its mask checks) passes on oneDNN.
TEST(OnednnRun, DropoutDeviceScalarsPass) {
    for (Dir dir : {Dir::bwd, Dir::fwd_t})
        for (const Dims& d : {kMha, kGqa}) {
            Problem p = make(dir, DType::bf16, Mask::none, d);
            p.dropout = Dropout{0.25f, 1234, 7};
            p.dropout_device_scalars = true;
            SCOPED_TRACE(knobs(p) + " " + descriptor(p.dims));
            ASSERT_EQ(validate(p), std::nullopt);
            SdpaGraph g = build_sdpa_graph(p, dnnl::engine::kind::cpu);
            ASSERT_EQ(g.inputs.count(Port::dropout_seed), 1u);
            EXPECT_EQ(g.inputs.at(Port::dropout_seed).lt.get_property_type(),
                    dnnl::graph::logical_tensor::property_type::undef);
            EXPECT_EQ(g.inputs.at(Port::dropout_seed).lt.get_dims(), (std::vector<std::int64_t>{1}));
            const CaseResult r = run_onednn(p);
            if (r.status == Status::skipped) GTEST_SKIP() << r.reason;
            EXPECT_EQ(r.status, Status::passed) << r.reason;
            EXPECT_TRUE(r.checked);
            EXPECT_NE(r.repro.find("--dropout-property=tensor"), std::string::npos) << r.repro;
        }
}

namespace sdpa {
namespace {

// --expected-n-partitions on the real oneDNN plan: its training graphs are one partition.
TEST(OnednnRun, ExpectedPartitionsReadsThePlansCount) {
    auto be = make_backend("onednn");
    ASSERT_TRUE(be);
    for (const Dir dir : {Dir::fwd_t, Dir::bwd}) {
        Case c;
        c.backend = "onednn";
        c.prb.dims = Dims{1, 2, 2, 16, 16, 16, 16};
        c.prb.dir = dir;
        c.prb.dt = DType::bf16;
        c.prb.mask = Mask::causal_tl;
        c.expected_partitions = 1;
        EXPECT_EQ(run_case(c, *be, 0).status, Status::passed) << fmt::format("{}", dir);
        c.expected_partitions = 2;
        const CaseResult r = run_case(c, *be, 0);
        EXPECT_EQ(r.status, Status::failed);
        EXPECT_EQ(r.reason, fmt::format("onednn split the {} graph into 1 partition(s), --expected-n-partitions=2", dir));
    }
}

}  // namespace
}  // namespace sdpa
