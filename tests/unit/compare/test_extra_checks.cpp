// Whole-output checks (compare/extra_checks.hpp) through check_output: each must be able to fail.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "compare/compare.hpp"
#include "small_problem.hpp"
#include "compare/extra_checks.hpp"

using namespace sdpa;

namespace {

using test::small;

/// The per-head sums of squares check_output takes in its pass, for calling check_head_norms alone.
std::vector<HeadSquares> squares(const Tensor& got, const Tensor& ref, const Tensor& mag) {
    std::vector<HeadSquares> heads(static_cast<std::size_t>(ref.dims[0] * ref.dims[1]));
    const std::size_t n = ref.size() / heads.size();
    for (std::size_t k = 0; k < ref.size(); ++k) {
        HeadSquares& h = heads[k / n];
        h.got += static_cast<double>(got.data[k]) * got.data[k];
        h.ref += static_cast<double>(ref.data[k]) * ref.data[k];
        h.mag += static_cast<double>(mag.data[k]) * mag.data[k];
    }
    return heads;
}

/// check_head_norms on whole tensors (dims [B,H,S,D]).
void head_norms(const Tensor& got, const Tensor& ref, const Tensor& mag, double c, double u_eff, double tiny,
        OutputCheck& r) {
    check_head_norms(squares(got, ref, mag), ref.dims[1], ref.dims[2] * ref.dims[3], c, u_eff, tiny, r);
}

}  // namespace

TEST(NormCheck, AllZeroHeadOfTinyValuesFailsThoughEveryElementPasses) {
    // Head 1's values are 1e-4 next to head 0's 100: the global floor max(M)/1024 lets every
    // element of an all-zero head 1 pass the per-element bound; the per-head norm does not.
    const Problem p = small();
    Tensor ref({1, 2, 6, 8}, DType::f32, 100.f);
    for (std::int64_t i = 0; i < 6; ++i)
        for (std::int64_t d = 0; d < 8; ++d) ref.at(0, 1, i, d) = 1e-4f;
    const Tensor mag = ref;
    Tensor got = ref;
    EXPECT_TRUE(check_output(output_rule(p, Output::O), got, {ref, mag, 4}).pass);
    for (std::int64_t i = 0; i < 6; ++i)
        for (std::int64_t d = 0; d < 8; ++d) got.at(0, 1, i, d) = 0.f;
    const OutputCheck c = check_output(output_rule(p, Output::O), got, {ref, mag, 4});
    EXPECT_LT(c.worst_ratio, 1.0);  // the per-element bound alone would pass it
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.norm_head, (std::array<std::int64_t, 2>{0, 1}));
    EXPECT_EQ(c.norm_ratio, 0.0);
    EXPECT_NE(c.reason.find("norm of head"), std::string::npos);
}

TEST(NormCheck, SubnormalHeadFlushedToZeroPassesButATinyNormalHeadZeroedFails) {
    // --random found it: oneDNN flushes an f32 head of O whose values are all near 1e-42 to 0
    // (FTZ). Below the smallest normal no error is a wrong kernel; above it the norm still bites.
    const Problem p = small(Mask::none, DType::f32);
    for (const float tiny : {1e-42f, 1e-30f}) {
        Tensor ref({1, 2, 6, 8}, DType::f32, 1.f);
        for (std::int64_t i = 0; i < 6; ++i)
            for (std::int64_t d = 0; d < 8; ++d) ref.at(0, 1, i, d) = tiny;
        const Tensor mag = ref;
        Tensor got = ref;
        for (std::int64_t i = 0; i < 6; ++i)
            for (std::int64_t d = 0; d < 8; ++d) got.at(0, 1, i, d) = 0.f;
        const OutputCheck c = check_output(output_rule(p, Output::O), got, {ref, mag, 4});
        EXPECT_EQ(c.pass, tiny < 0x1p-126f) << tiny;
        if (!c.pass) {
            EXPECT_EQ(c.failure, CheckFailure::norm);
        }
    }
}

TEST(NormCheck, MissingRescaleOfOneHeadFails) {
    const Problem p = small(Mask::none, DType::f32);
    Tensor ref({1, 2, 6, 8}, DType::f32, 1.f);
    const Tensor mag = ref;
    Tensor got = ref;
    for (std::int64_t i = 0; i < 6; ++i)
        for (std::int64_t d = 0; d < 8; ++d) got.at(0, 0, i, d) *= 1.0f + 1e-5f;  // ~170 u_f32
    OutputCheck c;
    head_norms(got, ref, mag, 4.0, 0x1p-24 * 3, 0x1p-149, c);
    EXPECT_FALSE(c.pass);
    EXPECT_NEAR(c.norm_ratio, 1.0 + 1e-5, 1e-7);
    // Within 4 u_eff the same check passes.
    for (std::int64_t i = 0; i < 6; ++i)
        for (std::int64_t d = 0; d < 8; ++d) got.at(0, 0, i, d) = 1.0f + 0x1p-23f;
    OutputCheck ok;
    head_norms(got, ref, mag, 4.0, 0x1p-24 * 3, 0x1p-149, ok);
    EXPECT_TRUE(ok.pass);
    EXPECT_LT(ok.norm_worst, 1.0);
}

TEST(NormCheck, HeadWithZeroReferenceNeedsOutputWithinTheMagnitude) {
    // Reference 0 by cancellation (M > 0): the output may be up to c u ||M||, not more.
    Tensor ref({1, 1, 2, 2}, DType::f32, 0.f), mag({1, 1, 2, 2}, DType::f32, 1.f);
    Tensor got = ref;
    got.data[0] = 0.001f;  // < 4 * 2^-8 * 2 = 0.03
    OutputCheck a;
    head_norms(got, ref, mag, 4.0, 0x1p-8, 0, a);
    EXPECT_TRUE(a.pass);
    got.data[0] = 0.1f;
    OutputCheck b;
    head_norms(got, ref, mag, 4.0, 0x1p-8, 0, b);
    EXPECT_FALSE(b.pass);
}

TEST(StatsSumCheck, Log2StatsFailAndExactStatsPass) {
    Problem p = small(Mask::none, DType::f32);
    Tensor ref({1, 2, 6, 1}, DType::f32, 3.5f);
    const Tensor mag({1, 2, 6, 1}, DType::f32, 1e3f);  // scores with cancellation: M_stats >> |stats|
    OutputCheck ok;
    check_stats_sums(output_rule(p, Output::stats), ref, ref, mag, ok);
    EXPECT_TRUE(ok.pass);
    EXPECT_EQ(ok.stats_sum_worst, 0.0);
    Tensor got = ref;
    got.at(0, 1, 2, 0) = static_cast<float>(3.5 / std::numbers::ln2);
    OutputCheck c;
    check_stats_sums(output_rule(p, Output::stats), got, ref, mag, c);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.failure, CheckFailure::stats_sum);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 1, 2, 0}));
    EXPECT_NE(c.reason.find("softmax convention"), std::string::npos);
    // The slack is 1e-5 + 16 u_f32 M_stats = 1e-3 here: an error of 5e-4 (a rounding of the scores'
    // magnitude, which --random found oneDNN's f32 to make) passes, one of 5e-3 does not.
    got.at(0, 1, 2, 0) = 3.5f + 5e-4f;
    OutputCheck near;
    check_stats_sums(output_rule(p, Output::stats), got, ref, mag, near);
    EXPECT_TRUE(near.pass);
    got.at(0, 1, 2, 0) = 3.5f + 5e-3f;
    OutputCheck far;
    check_stats_sums(output_rule(p, Output::stats), got, ref, mag, far);
    EXPECT_FALSE(far.pass);
    // With M_stats below |stats| the slack still scales with |stats| (1e-5 + 16 u 3.5 ~ 1.3e-5).
    const Tensor small_mag({1, 2, 6, 1}, DType::f32, 1.f);
    got.at(0, 1, 2, 0) = 3.5f + 4e-5f;
    OutputCheck tight;
    check_stats_sums(output_rule(p, Output::stats), got, ref, small_mag, tight);
    EXPECT_FALSE(tight.pass);
}

TEST(StatsSumCheck, FullyMaskedRowsAreExempt) {
    const Problem p = small(Mask::causal_br, DType::f32);  // rows 0, 1 see no key
    Tensor ref({1, 2, 6, 1}, DType::f32, 2.f);
    for (int h = 0; h < 2; ++h) ref.at(0, h, 0, 0) = ref.at(0, h, 1, 0) = INFINITY;
    const Tensor mag({1, 2, 6, 1}, DType::f32, 1.f);
    EXPECT_TRUE(check_output(output_rule(p, Output::stats), ref, {ref, mag, 0}).pass);
}

TEST(ZeroCountCheck, KernelZerosWhereTheReferenceIsTinyAreMistrusted) {
    // The reference is tiny but non-zero (so its own zero trust is silent); M is large by
    // cancellation, so a kernel that writes zeros passes both the element and the norm bound.
    const Problem p = small(Mask::none, DType::bf16);
    const Tensor ref({1, 2, 6, 8}, DType::f32, 1e-6f), mag({1, 2, 6, 8}, DType::f32, 1.f);
    Tensor got({1, 2, 6, 8}, DType::f32, 0.f);
    const OutputCheck c = check_output(output_rule(p, Output::dV), got, {ref, mag, 4});
    EXPECT_TRUE(c.pass);
    EXPECT_EQ(c.zero_fraction, 0.0);
    EXPECT_EQ(c.got_zero_fraction, 1.0);
    EXPECT_TRUE(c.mistrusted);
    got = ref;
    const OutputCheck d = check_output(output_rule(p, Output::dV), got, {ref, mag, 4});
    EXPECT_FALSE(d.mistrusted);
}

TEST(ZeroCountCheck, StructuralZerosAreCountedApart) {
    const Problem p = small(Mask::causal_br, DType::f32);  // rows 0, 1 of 6 fully masked
    Tensor ref({1, 2, 6, 8}, DType::f32, 1.f);
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 2; ++i)
            for (int d = 0; d < 8; ++d) ref.at(0, h, i, d) = 0.f;
    const Tensor mag({1, 2, 6, 8}, DType::f32, 1.f);
    const OutputCheck c = check_output(output_rule(p, Output::O), ref, {ref, mag, 4});
    EXPECT_TRUE(c.pass);
    EXPECT_EQ(c.structural_zeros, 2 * 2 * 8);
    EXPECT_EQ(c.got_zero_fraction, 0.0);
    EXPECT_FALSE(c.mistrusted);
}
