// FLOP and byte counts (core/flops.hpp) against hand-computed values.
#include "core/flops.hpp"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

/// B=b, H_q=2, H_kv=1, D_qk=4, D_v=8: fwd = 2*2*N*12 = 48 N, bwd = 2*2*N*(12+16) = 112 N.
Problem prb(std::int64_t b, std::int64_t sq, std::int64_t skv, Mask mask, Dir dir) {
    Problem p;
    p.dims = Dims{b, 2, 1, sq, skv, 4, 8};
    p.mask = mask;
    p.dir = dir;
    return p;
}

TEST(Flops, NoMaskCountsEveryScore) {
    // N = B*S_q*S_kv = 2*3*5 = 30.
    EXPECT_EQ(flops(prb(2, 3, 5, Mask::none, Dir::fwd_t)), 48 * 30);
    EXPECT_EQ(flops(prb(2, 3, 5, Mask::none, Dir::fwd_i)), 48 * 30);
    EXPECT_EQ(flops(prb(2, 3, 5, Mask::none, Dir::bwd)), 112 * 30);
    EXPECT_EQ(flops(prb(2, 3, 5, Mask::bias, Dir::bwd)), 112 * 30);  // a bias hides nothing
}

TEST(Flops, CausalTopLeftCountsTheDiagonal) {
    // S_q=3 < S_kv=5, j <= i: rows see 1, 2, 3 keys: N = 6.
    EXPECT_EQ(flops(prb(1, 3, 5, Mask::causal_tl, Dir::fwd_t)), 288);
    EXPECT_EQ(flops(prb(1, 3, 5, Mask::causal_tl, Dir::bwd)), 672);
    // S_q=5 > S_kv=3: rows see 1, 2, 3, 3, 3 keys: N = 12.
    EXPECT_EQ(flops(prb(1, 5, 3, Mask::causal_tl, Dir::fwd_t)), 576);
    EXPECT_EQ(flops(prb(1, 5, 3, Mask::causal_tl, Dir::bwd)), 1344);
    // Square 4x4: 1+2+3+4 = 10, summed over B = 2: N = 20.
    EXPECT_EQ(flops(prb(2, 4, 4, Mask::causal_tl, Dir::fwd_t)), 48 * 20);
}

TEST(Flops, CausalBottomRightShiftsByTheLengthDifference) {
    // S_q=3 < S_kv=5, j <= i + 2: rows see 3, 4, 5 keys: N = 12.
    EXPECT_EQ(flops(prb(1, 3, 5, Mask::causal_br, Dir::fwd_t)), 576);
    EXPECT_EQ(flops(prb(1, 3, 5, Mask::causal_br, Dir::bwd)), 1344);
    // S_q=5 > S_kv=3, j <= i - 2: rows see 0, 0, 1, 2, 3 keys: N = 6 (two rows fully masked).
    EXPECT_EQ(flops(prb(1, 5, 3, Mask::causal_br, Dir::fwd_t)), 288);
    EXPECT_EQ(flops(prb(1, 5, 3, Mask::causal_br, Dir::bwd)), 672);
}

TEST(Flops, PaddingCountsOnlyValidRowsAndKeys) {
    // B=2, S_q=S_kv=4, causal_tl; batch 0 full (10), batch 1 valid 2x3: rows see 1, 2 -> 3. N = 13.
    Problem p = prb(2, 4, 4, Mask::causal_tl, Dir::fwd_t);
    p.seq_len_q = {4, 2};
    p.seq_len_kv = {4, 3};
    EXPECT_EQ(flops(p), 48 * 13);
}

TEST(Flops, LlamaShapeMatchesTheClosedForm) {
    // b1hq32hkv8sq4096d128 causal_tl: N = S(S+1)/2; fwd = 2*32*N*256, bwd = 2*32*N*640.
    Problem p;
    p.dims = Dims{1, 32, 8, 4096, 4096, 128, 128};
    p.mask = Mask::causal_tl;
    const std::int64_t n = 4096LL * 4097 / 2;
    EXPECT_EQ(flops(p), 2LL * 32 * n * 256);
    p.dir = Dir::bwd;
    EXPECT_EQ(flops(p), 2LL * 32 * n * 640);
}

TEST(Bytes, InputsReadOnceOutputsWrittenOnce) {
    // bf16, Q 2*3*4=24, K 5*4=20, V 5*8=40, O 2*3*8=48 elements, stats 6 f32.
    Problem p = prb(1, 3, 5, Mask::none, Dir::fwd_i);
    p.dt = DType::bf16;
    EXPECT_EQ(bytes_moved(p), (24 + 20 + 40 + 48) * 2);
    p.dir = Dir::fwd_t;
    EXPECT_EQ(bytes_moved(p), (24 + 20 + 40 + 48) * 2 + 6 * 4);
    p.dir = Dir::bwd;  // Q K V O dO + stats in, dQ dK dV out
    EXPECT_EQ(bytes_moved(p), (2 * (24 + 20 + 40) + 2 * 48) * 2 + 6 * 4);
    p.dir = Dir::fwd_i;
    p.mask = Mask::bias;  // [1,H_q,S_q,S_kv] f32 = 2*3*5*4 bytes
    p.bias_shape = BiasShape::bh;
    p.mask_dt = DType::f32;
    EXPECT_EQ(bytes_moved(p), (24 + 20 + 40 + 48) * 2 + 120);
}

}  // namespace
}  // namespace sdpa
