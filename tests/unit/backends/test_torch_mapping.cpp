// How the PyTorch backend maps a case onto each variant's operator arguments (backends/torch/
// torch_backend.hpp torch_mapping), checked without libtorch: is_causal only for top-left causal
// masks, an explicit merged mask for what is_causal cannot say, scale=None exactly for the f32
// default, enable_gqa for math only, and the reasons a variant cannot run a case. Also the merged
// mask's values (backends/strided_buffer.hpp), which the oneDNN backend shares.
#include "backends/torch/torch_backend.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/strided_buffer.hpp"

namespace sdpa {
namespace {

Problem make(const char* desc, Dir dir = Dir::fwd_t, Mask mask = Mask::none) {
    Problem p;
    std::string err;
    p.dims = *parse_descriptor(desc, nullptr, &err);
    p.dir = dir;
    p.mask = mask;
    return p;
}

TorchMapping mapped(const Problem& p, TorchVariant v, TorchDevice d = TorchDevice::cpu) {
    auto m = torch_mapping(p, v, d);
    if (auto* u = std::get_if<Unsupported>(&m)) ADD_FAILURE() << "unsupported: " << u->reason;
    return std::get<TorchMapping>(m);
}

/// As make(), with bf16 io (what every CUDA row takes).
Problem make16(const char* desc, Dir dir = Dir::fwd_t, Mask mask = Mask::none) {
    Problem p = make(desc, dir, mask);
    p.dt = DType::bf16;
    return p;
}

Unsupported refused(const Problem& p, TorchVariant v, TorchDevice d = TorchDevice::cpu) {
    auto m = torch_mapping(p, v, d);
    EXPECT_TRUE(std::holds_alternative<Unsupported>(m));
    return std::holds_alternative<Unsupported>(m) ? std::get<Unsupported>(m) : Unsupported{};
}

TEST(TorchMapping, CausalMasksUseIsCausalOnlyWhenTopLeftHolds) {
    using MaskArg = TorchMapping::MaskArg;
    for (TorchVariant v : {TorchVariant::math, TorchVariant::flash}) {
        const Dir dir = v == TorchVariant::math ? Dir::fwd_i : Dir::fwd_t;
        EXPECT_TRUE(mapped(make("b1hq2sq8skv16d8", dir, Mask::causal_tl), v).is_causal);
        EXPECT_TRUE(mapped(make("b1hq2sq16skv8d8", dir, Mask::causal_tl), v).is_causal);
        // Bottom-right equals top-left only for S_q == S_kv.
        EXPECT_TRUE(mapped(make("b1hq2sq8d8", dir, Mask::causal_br), v).is_causal);
        const TorchMapping br = mapped(make("b1hq2sq8skv16d8", dir, Mask::causal_br), v);
        EXPECT_FALSE(br.is_causal);
        EXPECT_EQ(br.mask, MaskArg::merged);
        EXPECT_EQ(mapped(make("b1hq2sq8d8", dir, Mask::none), v), TorchMapping{});
        Problem w = make("b1hq2sq8d8", dir, Mask::window);
        w.window_left = 2;
        EXPECT_EQ(mapped(w, v).mask, MaskArg::merged);
        Problem bias = make("b2hq2sq8d8", dir, Mask::bias);
        EXPECT_EQ(mapped(bias, v).mask, MaskArg::bias);
        bias.seq_len_kv = {8, 5};  // padding: one merged mask, the bias included
        EXPECT_EQ(mapped(bias, v).mask, MaskArg::merged);
        Problem pad = make("b2hq2sq8d8", dir, Mask::causal_tl);
        pad.seq_len_q = {3, 8};
        const TorchMapping pm = mapped(pad, v);
        EXPECT_FALSE(pm.is_causal);
        EXPECT_EQ(pm.mask, MaskArg::merged);
    }
}

TEST(TorchMapping, ScaleIsNoneExactlyForTheF32Default) {
    Problem p = make("b1hq2sq8dqk64dv16", Dir::bwd);
    EXPECT_FALSE(mapped(p, TorchVariant::math).scale.has_value());  // PyTorch's 1/sqrt(D_qk)
    p.scale = 0.5f;
    EXPECT_EQ(mapped(p, TorchVariant::math).scale, 0.5);
    p.scale_op = ScaleOp::div;
    EXPECT_EQ(mapped(p, TorchVariant::math).scale, 2.0);  // S = QK^T / 0.5
    Problem bf = make("b1hq2sq8d64", Dir::bwd);
    bf.dt = DType::bf16;  // the scale tensor is bf16: its rounded value, not PyTorch's exact default
    ASSERT_TRUE(mapped(bf, TorchVariant::flash).scale.has_value());
    EXPECT_EQ(*mapped(bf, TorchVariant::flash).scale, double(scale_tensor_value(bf)));
    bf.scale_dt = DType::f32;
    EXPECT_FALSE(mapped(bf, TorchVariant::flash).scale.has_value());
}

TEST(TorchMapping, GqaFlagForMathOnlyAndMaskGradient) {
    const Problem gqa = make("b1hq8hkv2sq8d8", Dir::bwd);
    EXPECT_TRUE(mapped(gqa, TorchVariant::math).enable_gqa);
    EXPECT_FALSE(mapped(gqa, TorchVariant::flash).enable_gqa);  // flash groups H_kv < H_q natively
    EXPECT_FALSE(mapped(make("b1hq8sq8d8", Dir::bwd), TorchVariant::math).enable_gqa);
    Problem dm = make("b2hq2sq8d8", Dir::bwd, Mask::bias);
    dm.dmask = true;
    EXPECT_TRUE(mapped(dm, TorchVariant::math).mask_grad);
    EXPECT_EQ(refused(dm, TorchVariant::flash).status, Status::unimplemented);
    // The refusal names the rows that take --dmask (kTorchVariants's takes_dmask column).
    EXPECT_EQ(refused(dm, TorchVariant::flash).reason, "torch:flash's backward returns no attn_mask gradient (--dmask "
                                                       "runs on torch:math, torch:efficient and torch:math:cuda)");
}

TEST(TorchMapping, WhatAVariantCannotRunSaysWhy) {
    // efficient and cudnn have CUDA rows only; asking for a CPU one is a programming error.
    EXPECT_THROW(torch_mapping(make("b1hq2sq8d8"), TorchVariant::efficient), std::invalid_argument);
    EXPECT_THROW(torch_mapping(make("b1hq2sq8d8"), TorchVariant::cudnn, TorchDevice::cpu), std::invalid_argument);
    const Unsupported lse = refused(make("b1hq2sq8d8", Dir::fwd_t), TorchVariant::math);
    EXPECT_EQ(lse.status, Status::unimplemented);
    EXPECT_NE(lse.reason.find("no log-sum-exp"), std::string::npos);
    Problem drop = make("b1hq2sq8d8", Dir::bwd);
    drop.dropout = Dropout{0.1f, 1, 1};
    EXPECT_EQ(refused(drop, TorchVariant::flash).status, Status::unimplemented);
    EXPECT_TRUE(std::holds_alternative<TorchMapping>(torch_mapping(drop, TorchVariant::math)));  // its dropout_mask
    ASSERT_NE(make_torch_backend("math"), nullptr);
    EXPECT_NE(make_torch_backend("math")->dropout_mask(drop), nullptr);
    EXPECT_EQ(make_torch_backend("flash")->dropout_mask(drop), nullptr);
    // D_qk != D_v is left to PyTorch (flash rejects it with its own message when it runs).
    EXPECT_TRUE(std::holds_alternative<TorchMapping>(torch_mapping(make("b1hq2sq8dqk16dv8"), TorchVariant::flash)));
    ASSERT_NE(torch_variant("flash"), nullptr);
    EXPECT_EQ(torch_variant("flash")->variant, TorchVariant::flash);
    EXPECT_EQ(torch_variant("flash")->device, TorchDevice::cpu);
    ASSERT_NE(torch_variant("flash:cuda"), nullptr);
    EXPECT_EQ(torch_variant("flash:cuda")->device, TorchDevice::cuda);
    EXPECT_EQ(torch_variant("flashy"), nullptr);
    EXPECT_EQ(torch_variant("efficient:cuda"), nullptr);  // CUDA only: one spelling, torch:efficient
    EXPECT_EQ(make_torch_backend("nope"), nullptr);
    EXPECT_EQ(make_torch_backend("torch:math"), nullptr);  // the kind alone: the registry strips the prefix
    ASSERT_NE(make_torch_backend("cudnn"), nullptr);
    EXPECT_EQ(make_torch_backend("cudnn")->name(), "torch:cudnn");
}

TEST(TorchMapping, FlashTakesUnitLastStridesMathFreshOAndStats) {
    Problem q = make("b1hq2sq16d16", Dir::fwd_t);
    q.strides = *parse_role_layouts("Q:bhds");
    const Unsupported flash_q = refused(q, TorchVariant::flash);  // the dispatcher's rule
    EXPECT_EQ(flash_q.status, Status::unimplemented);
    EXPECT_NE(flash_q.reason.find("Q has stride 16 in its last dimension"), std::string::npos);
    q.dir = Dir::fwd_i;
    EXPECT_TRUE(std::holds_alternative<TorchMapping>(torch_mapping(q, TorchVariant::math)));  // math reads any strides
    Problem d1 = make("b1hq2sq16d1", Dir::bwd);  // D = 1: the last stride is never stepped
    d1.strides = *parse_role_layouts("O:bhds");
    EXPECT_TRUE(std::holds_alternative<TorchMapping>(torch_mapping(d1, TorchVariant::flash)));
    Problem alias = make("b2hq2sq16skv13d8", Dir::bwd);
    alias.strides = *parse_role_layouts("stats:64x16x0x1");
    EXPECT_NE(refused(alias, TorchVariant::math).reason.find("aliased stats"), std::string::npos);
    EXPECT_TRUE(std::holds_alternative<TorchMapping>(torch_mapping(alias, TorchVariant::flash)));  // it reads them
    Problem implicit = make("b1hq2sq8d8", Dir::bwd, Mask::causal_tl);
    implicit.implicit_mask = true;
    EXPECT_EQ(refused(implicit, TorchVariant::flash).status, Status::unimplemented);
    Problem p0 = make("b1hq2sq8d8", Dir::bwd);
    p0.dropout = Dropout{0.f, 1, 1};  // p = 0: dropout_p = 0, nothing to replicate
    EXPECT_TRUE(std::holds_alternative<TorchMapping>(torch_mapping(p0, TorchVariant::flash)));
    EXPECT_NE(make_torch_backend("flash")->dropout_mask(p0), nullptr);
}

TEST(MergedMask, BiasWhereVisibleMinusInfinityElsewhere) {
    Problem p = make("b2hq2sq3skv4d8", Dir::fwd_t, Mask::bias);
    p.bias_shape = BiasShape::b;
    p.seq_len_kv = {4, 2};
    Tensor bias({2, 1, 3, 4}, DType::f32);
    for (std::size_t i = 0; i < bias.size(); ++i) bias.data[i] = -float(i);
    const std::vector<float> m = merged_mask_values(p, bias, {2, 2, 3, 4});
    ASSERT_EQ(m.size(), 2u * 2 * 3 * 4);
    auto at = [&](int b, int h, int i, int j) { return m[((b * 2 + h) * 3 + i) * 4 + j]; };
    EXPECT_EQ(at(0, 1, 2, 3), bias.at(0, 0, 2, 3));  // heads broadcast from the bias's 1
    EXPECT_EQ(at(1, 0, 1, 1), bias.at(1, 0, 1, 1));
    EXPECT_TRUE(std::isinf(at(1, 0, 1, 2)) && at(1, 0, 1, 2) < 0);  // key 2 past batch 1's length 2
    Problem c = make("b1hq1sq2skv3d8", Dir::fwd_t, Mask::causal_br);
    const std::vector<float> cm = merged_mask_values(c, Tensor{}, {1, 1, 2, 3});
    EXPECT_EQ(cm, (std::vector<float>{0.f, 0.f, -INFINITY, 0.f, 0.f, 0.f}));  // j <= i + 1
}

TEST(TorchMapping, CudaRowsMapByTheirOwnConventions) {
    using MaskArg = TorchMapping::MaskArg;
    const TorchDevice cuda = TorchDevice::cuda;
    // cuDNN's and FlashAttention-2's operators take 16-bit inputs only: f32 is refused before any
    // device is asked, so a case gets the same status with a GPU and without one.
    for (TorchVariant v : {TorchVariant::cudnn, TorchVariant::flash}) {
        const Unsupported f32 = refused(make("b1hq2sq8d8", Dir::fwd_t), v, cuda);
        EXPECT_EQ(f32.status, Status::unimplemented);
        EXPECT_NE(f32.reason.find("takes bf16 and f16 inputs only"), std::string::npos);
    }
    EXPECT_TRUE(std::holds_alternative<TorchMapping>(torch_mapping(make("b1hq2sq8d8"), TorchVariant::efficient, cuda)));
    // FlashAttention-2's is_causal is bottom-right, and its operator takes no attn_mask: causal_br
    // with S_q != S_kv is is_causal=True there, causal_tl with S_q != S_kv cannot be said.
    EXPECT_TRUE(mapped(make16("b1hq2sq8skv16d8", Dir::fwd_t, Mask::causal_br), TorchVariant::flash, cuda).is_causal);
    EXPECT_TRUE(mapped(make16("b1hq2sq8d8", Dir::fwd_t, Mask::causal_tl), TorchVariant::flash, cuda).is_causal);
    const Unsupported tl = refused(make16("b1hq2sq8skv16d8", Dir::fwd_t, Mask::causal_tl), TorchVariant::flash, cuda);
    EXPECT_EQ(tl.status, Status::unimplemented);
    EXPECT_NE(tl.reason.find("take no attn_mask"), std::string::npos);
    EXPECT_NE(tl.reason.find("--mask=causal_tl"), std::string::npos);
    EXPECT_EQ(refused(make16("b1hq2sq8d8", Dir::fwd_t, Mask::bias), TorchVariant::flash, cuda).status,
            Status::unimplemented);
    EXPECT_FALSE(mapped(make16("b1hq8hkv2sq8d8", Dir::bwd), TorchVariant::flash, cuda).expand_gqa);  // native
    // efficient and cudnn: top-left is_causal, an explicit mask for bottom-right, heads repeated.
    for (TorchVariant v : {TorchVariant::efficient, TorchVariant::cudnn}) {
        EXPECT_TRUE(mapped(make16("b1hq2sq16skv8d8", Dir::fwd_t, Mask::causal_tl), v, cuda).is_causal);
        const TorchMapping br = mapped(make16("b1hq2sq8skv16d8", Dir::fwd_t, Mask::causal_br), v, cuda);
        EXPECT_FALSE(br.is_causal);
        EXPECT_EQ(br.mask, MaskArg::merged);
        const TorchMapping gqa = mapped(make16("b1hq8hkv2sq8d8", Dir::bwd), v, cuda);
        EXPECT_TRUE(gqa.expand_gqa);
        EXPECT_FALSE(gqa.enable_gqa);
        EXPECT_FALSE(mapped(make16("b1hq8sq8d8", Dir::bwd), v, cuda).expand_gqa);
    }
    Problem dm = make16("b1hq2sq8d8", Dir::bwd, Mask::bias);
    dm.dmask = true;
    EXPECT_TRUE(mapped(dm, TorchVariant::efficient, cuda).mask_grad);  // its backward's grad_bias
    EXPECT_EQ(refused(dm, TorchVariant::cudnn, cuda).status, Status::unimplemented);
    EXPECT_EQ(refused(dm, TorchVariant::flash, cuda).status, Status::unimplemented);
    // math on CUDA maps as on the CPU.
    EXPECT_TRUE(mapped(make16("b1hq8hkv2sq8d8", Dir::bwd), TorchVariant::math, cuda).enable_gqa);
    EXPECT_EQ(refused(make16("b1hq2sq8d8", Dir::fwd_t), TorchVariant::math, cuda).status, Status::unimplemented);
    // The masked-row log-sum-exp each row states is the backend's convention.
    EXPECT_EQ(make_torch_backend("flash")->conventions().masked_row_stats, 0.0f);
    EXPECT_EQ(make_torch_backend("flash:cuda")->conventions().masked_row_stats, INFINITY);
    EXPECT_EQ(make_torch_backend("efficient")->conventions().masked_row_stats, -INFINITY);
    ASSERT_NE(make_torch_backend("math:cuda"), nullptr);
    EXPECT_EQ(make_torch_backend("math:cuda")->name(), "torch:math:cuda");
}

}  // namespace
}  // namespace sdpa
