// Structural rules (core/validate.hpp): each hipDNN-style rule fires with its values, the
// shapes a Problem implies pass, and 64-bit byte-count overflow is caught exactly.
#include "core/geometry.hpp"
#include "core/validate.hpp"

#include <string>

#include <gtest/gtest.h>

#include "../test_helpers.hpp"

namespace sdpa {
namespace {

Problem problem(Dims d, Dir dir = Dir::bwd) { return test::make_problem(d, dir); }

/// Consistent bwd shapes of b2hq8hkv2sq16skv32dqk8dv4 with a [B,1,S_q,S_kv] bias.
GraphShapes good() {
    Problem p = problem(Dims{2, 8, 2, 16, 32, 8, 4});
    p.mask = Mask::bias;
    p.bias_shape = BiasShape::b;
    return shapes_of(p);
}

std::string err(const GraphShapes& g) {
    const auto e = validate_shapes(g);
    return e ? *e : std::string("(valid)");
}

TEST(ValidateShapes, ProblemShapesPass) {
    const GraphShapes g = good();
    EXPECT_EQ(g.Q.dims, (std::vector<std::int64_t>{2, 8, 16, 8}));
    EXPECT_EQ(g.V.dims, (std::vector<std::int64_t>{2, 2, 32, 4}));
    EXPECT_EQ(g.bias.dims, (std::vector<std::int64_t>{2, 1, 16, 32}));
    EXPECT_EQ(validate_shapes(g), std::nullopt);
    EXPECT_FALSE(shapes_of(problem(Dims{}, Dir::fwd_i)).stats.present);
    EXPECT_FALSE(shapes_of(problem(Dims{}, Dir::fwd_t)).O.present);
}

TEST(ValidateShapes, EachRuleNamesItsValues) {
    GraphShapes g = good();
    g.Q.dims = {2, 8, 16};
    EXPECT_EQ(err(g), "rank rule: Q must have rank 4, got rank 3 [2, 8, 16]");
    g = good();
    g.K.dims[0] = 3;
    EXPECT_EQ(err(g), "batch rule: Q, K and V must have the same batch: Q 2 K 3 V 2");
    g = good();
    g.K.dims[3] = 16;
    EXPECT_EQ(err(g), "head-size rule: D_qk must be equal for Q and K: Q 8 K 16");
    g = good();
    g.V.dims[2] = 31;
    EXPECT_EQ(err(g), "sequence rule: S_kv must be equal for K and V: K 32 V 31");
    g = good();
    g.K.dims[1] = 3;
    EXPECT_EQ(err(g), "GQA rule: H_q = 8 must be a multiple of H_kv = 3");
    g = good();
    g.V.dims[1] = 16;
    EXPECT_EQ(err(g), "GQA rule: H_q = 8 must be a multiple of the V heads = 16");
    g = good();
    g.dO.dims[3] = 8;
    EXPECT_EQ(err(g), "shape rule: dO [2, 8, 16, 8] must be shaped like O [2, 8, 16, 4]");
    g = good();
    g.O.dims[2] = 15;
    EXPECT_EQ(err(g), "shape rule: O [2, 8, 15, 4] must be shaped like [B,H_q,S_q,D_v] [2, 8, 16, 4]");
    g = good();
    g.Q.dims[2] = 0;
    EXPECT_EQ(err(g), "dimension rule: Q [2, 8, 0, 8] has dimension 2 = 0; every dimension must be positive");
}

TEST(ValidateShapes, Bias) {
    GraphShapes g = good();
    g.bias.dims = {1, 16, 32};  // rank 3, broadcast over B: fine
    EXPECT_EQ(validate_shapes(g), std::nullopt);
    g.bias.dims = {16, 1};  // [S_q, 1]: fine
    EXPECT_EQ(validate_shapes(g), std::nullopt);
    g.bias.dims = {1, 1, 1, 2, 16, 32};
    EXPECT_EQ(err(g), "bias rule: the bias must have rank 2 to 4, got rank 6 [1, 1, 1, 2, 16, 32]");
    g.bias.dims = {2, 1, 16, 31};
    EXPECT_EQ(err(g), "bias rule: the bias's last dimension must be S_kv = 32 or 1, got 31 in [2, 1, 16, 31]");
    g.bias.dims = {2, 1, 8, 32};
    EXPECT_EQ(err(g), "bias rule: the bias's second-to-last dimension must be S_q = 16 or 1, got 8 in [2, 1, 8, 32]");
    g.bias.dims = {2, 4, 16, 32};
    EXPECT_EQ(err(g), "bias rule: bias dimension 1 must be 8 or 1, got 4 in [2, 4, 16, 32]");
    g.bias.dims = {3, 16, 32};  // rank 3: the leading dim is H_q
    EXPECT_EQ(err(g), "bias rule: bias dimension 0 must be 8 or 1, got 3 in [3, 16, 32]");
}

TEST(ValidateShapes, DropoutPaddingScale) {
    GraphShapes g = good();
    g.dropout_mask = {true, {1, 8, 16, 32}, "u8"};
    EXPECT_EQ(validate_shapes(g), std::nullopt);
    g.dropout_mask.dims = {1, 8, 16};
    EXPECT_EQ(err(g), "rank rule: the dropout mask must have rank 4, got rank 3 [1, 8, 16]");
    g.dropout_mask.dims = {2, 3, 16, 32};
    EXPECT_EQ(err(g), "dropout rule: dropout mask [2, 3, 16, 32] must broadcast to [B,H_q,S_q,S_kv] = [2, 8, 16, 32]");
    g = good();
    g.seq_len_q = {true, {2, 1, 1, 1}, "s32"};
    EXPECT_EQ(validate_shapes(g), std::nullopt);
    g.seq_len_q.dt = "f32";
    EXPECT_EQ(err(g), "padding rule: seq_len_q must be s32 (INT32), got f32");
    g.seq_len_kv = {true, {2, 1, 1}, "s32"};
    g.seq_len_q.dt = "s32";
    EXPECT_EQ(err(g), "padding rule: seq_len_kv must be shaped [B,1,1,1] = [2, 1, 1, 1], got [2, 1, 1]");
    g = good();
    g.scale_count = 2;
    EXPECT_EQ(err(g), "scale rule: the scale must be given exactly once, got 2");
}

TEST(ValidateSizes, Overflow64) {
    // B*H_q*S_q*S_kv*8 bytes: 2^20 * 2^20 * 2^20 * 8 = 2^63 overflows; 2^59 * 8 = 2^62 does not.
    EXPECT_EQ(validate_geometry(geometry(problem(Dims{1, 1, 1, 1 << 20, 1 << 20, 1, 1}))), std::nullopt);
    const auto big = validate_geometry(geometry(problem(Dims{1 << 20, 1, 1, 1 << 20, 1 << 20, 1, 1})));
    ASSERT_TRUE(big.has_value());
    EXPECT_EQ(*big, "size rule: scores [B,H_q,S_q,S_kv] = [1048576, 1, 1048576, 1048576] at 8 bytes per "
                    "element overflows 64-bit byte counts");
    const auto q = validate_geometry(geometry(problem(Dims{1, 1, 1, std::int64_t{1} << 40, 1, std::int64_t{1} << 22, 1})));
    ASSERT_TRUE(q.has_value());
    EXPECT_NE(q->find("Q [B,H_q,S_q,D_qk] = [1, 1, 1099511627776, 4194304]"), std::string::npos) << *q;
    // validate() applies the size rule.
    Problem p = problem(Dims{1 << 20, 1, 1, 1 << 20, 1 << 20, 1, 1});
    ASSERT_TRUE(validate(p).has_value());
    EXPECT_NE(validate(p)->find("size rule"), std::string::npos);
}

}  // namespace
}  // namespace sdpa
