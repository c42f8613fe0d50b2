#include <gtest/gtest.h>

#include <cmath>

#include "compare/compare.hpp"
#include "tests/unit/compare/small_problem.hpp"

using namespace sdpa;

namespace {

using test::small;

Tensor filled(std::array<std::int64_t, 4> dims, float v) { return Tensor(dims, DType::f32, v); }

}  // namespace

TEST(Compare, IdenticalOutputPassesWithZeroRatio) {
    const Problem p = small();
    const Tensor ref = filled({1, 2, 6, 8}, 1.5f), mag = filled({1, 2, 6, 8}, 2.f);
    const OutputCheck c = check_output(p, Output::O, ref, ref, mag, 4);
    EXPECT_TRUE(c.pass);
    EXPECT_FALSE(c.mistrusted);
    EXPECT_EQ(c.worst_ratio, 0.0);
}

TEST(Compare, PerturbedElementFailsWithItsIndexAndBound) {
    const Problem p = small();
    const Tensor ref = filled({1, 2, 6, 8}, 1.5f), mag = filled({1, 2, 6, 8}, 2.f);
    Tensor got = ref;
    // bound = 4 * (2^-8 + 2^-24*sqrt(4)) * (2 + 2/1024) ~= 0.0313; an error of 0.05 must fail...
    got.at(0, 1, 4, 3) += 0.05f;
    OutputCheck c = check_output(p, Output::O, got, ref, mag, 4);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 1, 4, 3}));
    EXPECT_FLOAT_EQ(c.got, 1.55f);
    EXPECT_FLOAT_EQ(c.expected, 1.5f);
    EXPECT_NEAR(c.bound, 4 * (0x1p-8 + 0x1p-24 * 2) * (2 + 2.0 / 1024), 1e-9);
    EXPECT_GT(c.worst_ratio, 1.0);
    // ...and an error of 0.02 must pass, with its margin reported.
    got.at(0, 1, 4, 3) = 1.52f;
    c = check_output(p, Output::O, got, ref, mag, 4);
    EXPECT_TRUE(c.pass);
    EXPECT_GT(c.worst_ratio, 0.5);
    EXPECT_LT(c.worst_ratio, 1.0);
}

TEST(Compare, NanWhereReferenceIsFiniteFails) {
    const Problem p = small(Mask::none, DType::f32);
    const Tensor ref = filled({1, 2, 4, 8}, 1.f), mag = filled({1, 2, 4, 8}, 1.f);
    Tensor got = ref;
    got.at(0, 0, 2, 5) = NAN;
    const OutputCheck c = check_output(p, Output::dK, got, ref, mag, 12);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.nonfinite, 1);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 0, 2, 5}));
}

TEST(Compare, FullyMaskedRowsMustBeExactlyZero) {
    // causal_br with S_q = 6 > S_kv = 4: query rows 0 and 1 see no key.
    const Problem p = small(Mask::causal_br);
    Tensor ref = filled({1, 2, 6, 8}, 1.f);
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 2; ++i)
            for (int d = 0; d < 8; ++d) ref.at(0, h, i, d) = 0.f;
    const Tensor mag = filled({1, 2, 6, 8}, 1.f);
    Tensor got = ref;
    EXPECT_TRUE(check_output(p, Output::dQ, got, ref, mag, 4).pass);
    got.at(0, 1, 1, 7) = 1e-30f;  // tiny, far inside the bound, but the row is fully masked
    const OutputCheck c = check_output(p, Output::dQ, got, ref, mag, 4);
    EXPECT_FALSE(c.pass);
    EXPECT_NE(c.reason.find("fully masked"), std::string::npos);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 1, 1, 7}));
}

TEST(Compare, StatsOfMaskedRowsFollowTheBackendConvention) {
    const Problem p = small(Mask::causal_br, DType::f32);
    Tensor ref = filled({1, 2, 6, 1}, 2.f);
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 2; ++i) ref.at(0, h, i, 0) = INFINITY;
    const Tensor mag = filled({1, 2, 6, 1}, 3.f);
    Tensor got = ref;
    EXPECT_TRUE(check_output(p, Output::stats, got, ref, mag, 0).pass);  // default: +inf
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 2; ++i) got.at(0, h, i, 0) = 0.f;  // oneDNN's convention
    EXPECT_FALSE(check_output(p, Output::stats, got, ref, mag, 0).pass);
    const Conventions zero{0.f};
    EXPECT_TRUE(check_output(p, Output::stats, got, ref, mag, 0, zero).pass);
    got.at(0, 0, 1, 0) = NAN;
    const OutputCheck c = check_output(p, Output::stats, got, ref, mag, 0, zero);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 0, 1, 0}));
}

TEST(Compare, MostlyZeroReferenceIsMistrusted) {
    const Problem p = small();
    Tensor ref = filled({1, 2, 6, 8}, 0.f);
    ref.at(0, 0, 0, 0) = 1.f;
    const Tensor mag = filled({1, 2, 6, 8}, 1.f);
    const OutputCheck c = check_output(p, Output::O, ref, ref, mag, 4);
    EXPECT_TRUE(c.pass);
    EXPECT_TRUE(c.mistrusted);
    EXPECT_GT(c.zero_fraction, 0.9);
}

TEST(Compare, NonFiniteReferenceNeverPasses) {
    // A case whose reference overflows (e.g. --scale=1e38) proves nothing: it must not PASS,
    // whatever the backend wrote (NaN compares false with everything).
    const Problem p = small(Mask::none, DType::f32);
    Tensor ref = filled({1, 2, 4, 8}, 1.f);
    ref.at(0, 1, 3, 2) = NAN;
    const Tensor mag = filled({1, 2, 4, 8}, 1.f);
    for (float g : {NAN, 1.f, INFINITY}) {
        Tensor got = ref;
        got.at(0, 1, 3, 2) = g;
        const OutputCheck c = check_output(p, Output::O, got, ref, mag, 4);
        EXPECT_FALSE(c.pass) << g;
        EXPECT_EQ(c.ref_nonfinite, 1) << g;
    }
    // A NaN magnitude (bound) with a finite error must fail too, not yield ratio NaN.
    Tensor bad_mag = mag;
    bad_mag.at(0, 0, 0, 0) = NAN;
    Tensor got = ref;
    got.at(0, 1, 3, 2) = 0.f;
    ref.at(0, 1, 3, 2) = 0.f;
    got.at(0, 0, 0, 0) = 1.5f;
    EXPECT_FALSE(check_output(p, Output::O, got, ref, bad_mag, 4).pass);
}

TEST(Compare, ShapeMismatchFails) {
    const Problem p = small();
    const Tensor ref = filled({1, 2, 6, 8}, 1.f), got = filled({1, 2, 8, 6}, 1.f);
    const OutputCheck c = check_output(p, Output::O, got, ref, ref, 4);
    EXPECT_FALSE(c.pass);
    EXPECT_NE(c.reason.find("shape"), std::string::npos);
}

namespace {

/// B 2, H 2, S_q 6, S_kv 4, D 8, bwd, padded: batch 0 keeps 6 query and 2 key rows, batch 1 3 and 4.
Problem padded_bwd() {
    Problem p = small();
    p.dims.B = 2;
    p.dir = Dir::bwd;
    p.seq_len_q = {6, 3};
    p.seq_len_kv = {2, 4};
    return p;
}

}  // namespace

// Conventions::padded_grad_rows_unspecified: the dQ rows past seq_len_q and the dK, dV rows past
// seq_len_kv are skipped (cuDNN's padded backward); without it they are structural zeros that must
// be written, and O and stats follow their own flag.
TEST(PaddedGradRows, UncheckedOnlyPastTheValidLengthsOfTheirOwnSide) {
    const Problem p = padded_bwd();
    Conventions conv;
    conv.padded_grad_rows_unspecified = true;
    EXPECT_TRUE(unchecked(p, Output::dQ, {1, 0, 3, 0}, nullptr, conv));   // batch 1: 3 valid query rows
    EXPECT_FALSE(unchecked(p, Output::dQ, {1, 0, 2, 0}, nullptr, conv));
    EXPECT_FALSE(unchecked(p, Output::dQ, {0, 1, 5, 7}, nullptr, conv));  // batch 0: all 6 valid
    EXPECT_TRUE(unchecked(p, Output::dK, {0, 1, 2, 0}, nullptr, conv));   // batch 0: 2 valid key rows
    EXPECT_TRUE(unchecked(p, Output::dV, {0, 0, 3, 7}, nullptr, conv));
    EXPECT_FALSE(unchecked(p, Output::dV, {0, 0, 1, 7}, nullptr, conv));
    EXPECT_FALSE(unchecked(p, Output::dK, {1, 0, 3, 0}, nullptr, conv));  // batch 1: all 4 valid
    EXPECT_FALSE(unchecked(p, Output::O, {1, 0, 3, 0}, nullptr, conv));   // O and stats: the other flag
    EXPECT_FALSE(unchecked(p, Output::stats, {1, 0, 5, 0}, nullptr, conv));
    EXPECT_FALSE(unchecked(p, Output::dQ, {1, 0, 3, 0}, nullptr, {}));    // the default checks every row
    EXPECT_FALSE(unchecked(p, Output::dK, {0, 1, 2, 0}, nullptr, {}));
}

TEST(PaddedGradRows, LeftUntouchedPassesOnlyUnderTheConvention) {
    const Problem p = padded_bwd();
    const std::array<std::int64_t, 4> dims{2, 2, 4, 8};  // dK
    Tensor ref = filled(dims, 1.f), mag = filled(dims, 1.f);
    Tensor got = ref;
    std::int64_t past = 0;
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t h = 0; h < 2; ++h)
            for (std::int64_t j = valid_kv(p, b); j < 4; ++j)
                for (std::int64_t d = 0; d < 8; ++d) {
                    ref.at(b, h, j, d) = 0.f;   // no query sees key j: a structural zero
                    got.at(b, h, j, d) = NAN;   // the kernel left the prefill there
                    ++past;
                }
    EXPECT_EQ(past, 2 * 2 * 8);
    // The default: those rows must be written zeros.
    OutputCheck c = check_output(p, Output::dK, got, ref, mag, 12);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.failure, CheckFailure::masked_rows) << c.reason;
    // Under the convention they are skipped (and counted), and the rest still has to match.
    Conventions conv;
    conv.padded_grad_rows_unspecified = true;
    c = check_output(p, Output::dK, got, ref, mag, 12, conv);
    EXPECT_TRUE(c.pass) << c.reason;
    EXPECT_EQ(c.unchecked, past);
    got.at(1, 1, 3, 7) = 1.5f;  // a valid row still counts
    EXPECT_FALSE(check_output(p, Output::dK, got, ref, mag, 12, conv).pass);
}

TEST(PaddedGradRows, ObservedLineSaysWhatWasLeftPastTheValidLengths) {
    Problem p = padded_bwd();
    SdpaOutputs out;
    out.dQ = filled({2, 2, 6, 8}, 1.f);
    out.dK = filled({2, 2, 4, 8}, 1.f);
    out.dV = filled({2, 2, 4, 8}, 1.f);
    for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t d = 0; d < 8; ++d) {
            for (std::int64_t i = 3; i < 6; ++i) out.dQ.at(1, h, i, d) = NAN;  // 2 x 3 x 8 = 48 unwritten
            for (std::int64_t j = 2; j < 4; ++j) {
                out.dK.at(0, h, j, d) = 0.f;                                  // 32 zero
                out.dV.at(0, h, j, d) = d == 0 ? 7.f : NAN;                    // 4 other, 28 unwritten
            }
        }
    const auto seen = observed_masked_rows(p, out);
    ASSERT_TRUE(seen);
    EXPECT_NE(seen->find("observed: 6 fully masked (b,h,row)s"), std::string::npos) << *seen;
    EXPECT_NE(seen->find("dQ past the valid query lengths: 48 unwritten (NaN prefill), 0 zero, 0 other"),
            std::string::npos) << *seen;
    EXPECT_NE(seen->find("dK past the valid key lengths: 0 unwritten (NaN prefill), 32 zero, 0 other"),
            std::string::npos) << *seen;
    EXPECT_NE(seen->find("dV past the valid key lengths: 28 unwritten (NaN prefill), 0 zero, 4 other"),
            std::string::npos) << *seen;
    EXPECT_EQ(seen->find("O past"), std::string::npos) << *seen;  // a backward has no O output
    // Key padding alone (every query row valid, so none fully masked) is still reported.
    p.seq_len_q = {6, 6};
    const auto keys_only = observed_masked_rows(p, out);
    ASSERT_TRUE(keys_only);
    EXPECT_NE(keys_only->find("observed: 0 fully masked (b,h,row)s; dK past"), std::string::npos) << *keys_only;
    // No padding and no masked row: nothing to report.
    p.seq_len_q.clear();
    p.seq_len_kv.clear();
    EXPECT_FALSE(observed_masked_rows(p, out));
}
