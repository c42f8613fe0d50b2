#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "compare/compare.hpp"
#include "small_problem.hpp"

using namespace sdpa;

namespace {

using test::small;

Tensor filled(std::array<std::int64_t, 4> dims, float v) { return Tensor(dims, DType::f32, v); }

}  // namespace

TEST(Compare, IdenticalOutputPassesWithZeroRatio) {
    const Problem p = small();
    const Tensor ref = filled({1, 2, 6, 8}, 1.5f), mag = filled({1, 2, 6, 8}, 2.f);
    const OutputCheck c = check_output(output_rule(p, Output::O), ref, {ref, mag, 4});
    EXPECT_TRUE(c.pass);
    EXPECT_FALSE(c.mistrusted);
    EXPECT_EQ(c.worst_ratio, 0.0);
}

TEST(Compare, PerturbedElementFailsWithItsIndexAndBound) {
    const Problem p = small();
    const Tensor ref = filled({1, 2, 6, 8}, 1.5f), mag = filled({1, 2, 6, 8}, 2.f);
    Tensor got = ref;
    // bf16 O: bound = 6 * (2^-8 + 2^-24*sqrt(4)) * (2 + 2/1024) ~= 0.0469; an error of 0.05 must fail...
    got.at(0, 1, 4, 3) += 0.05f;
    OutputCheck c = check_output(output_rule(p, Output::O), got, {ref, mag, 4});
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 1, 4, 3}));
    EXPECT_FLOAT_EQ(c.got, 1.55f);
    EXPECT_FLOAT_EQ(c.expected, 1.5f);
    EXPECT_NEAR(c.bound, 6 * (0x1p-8 + 0x1p-24 * 2) * (2 + 2.0 / 1024), 1e-9);
    EXPECT_GT(c.worst_ratio, 1.0);
    // ...and an error of 0.03 must pass, with its margin reported.
    got.at(0, 1, 4, 3) = 1.53f;
    c = check_output(output_rule(p, Output::O), got, {ref, mag, 4});
    EXPECT_TRUE(c.pass);
    EXPECT_GT(c.worst_ratio, 0.5);
    EXPECT_LT(c.worst_ratio, 1.0);
}

TEST(Compare, NanWhereReferenceIsFiniteFails) {
    const Problem p = small(Mask::none, DType::f32);
    const Tensor ref = filled({1, 2, 4, 8}, 1.f), mag = filled({1, 2, 4, 8}, 1.f);
    Tensor got = ref;
    got.at(0, 0, 2, 5) = NAN;
    const OutputCheck c = check_output(output_rule(p, Output::dK), got, {ref, mag, 12});
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
    EXPECT_TRUE(check_output(output_rule(p, Output::dQ), got, {ref, mag, 4}).pass);
    got.at(0, 1, 1, 7) = 1e-30f;  // tiny, far inside the bound, but the row is fully masked
    const OutputCheck c = check_output(output_rule(p, Output::dQ), got, {ref, mag, 4});
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
    EXPECT_TRUE(check_output(output_rule(p, Output::stats), got, {ref, mag, 0}).pass);  // default: +inf
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 2; ++i) got.at(0, h, i, 0) = 0.f;  // oneDNN's convention
    EXPECT_FALSE(check_output(output_rule(p, Output::stats), got, {ref, mag, 0}).pass);
    const Conventions zero{0.f};
    EXPECT_TRUE(check_output(output_rule(p, Output::stats, zero), got, {ref, mag, 0}).pass);
    got.at(0, 0, 1, 0) = NAN;
    const OutputCheck c = check_output(output_rule(p, Output::stats, zero), got, {ref, mag, 0});
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 0, 1, 0}));
}

TEST(Compare, MostlyZeroReferenceIsMistrusted) {
    const Problem p = small();
    Tensor ref = filled({1, 2, 6, 8}, 0.f);
    ref.at(0, 0, 0, 0) = 1.f;
    const Tensor mag = filled({1, 2, 6, 8}, 1.f);
    const OutputCheck c = check_output(output_rule(p, Output::O), ref, {ref, mag, 4});
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
        const OutputCheck c = check_output(output_rule(p, Output::O), got, {ref, mag, 4});
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
    EXPECT_FALSE(check_output(output_rule(p, Output::O), got, {ref, bad_mag, 4}).pass);
}

TEST(Compare, ShapeMismatchFails) {
    const Problem p = small();
    const Tensor ref = filled({1, 2, 6, 8}, 1.f), got = filled({1, 2, 8, 6}, 1.f);
    const OutputCheck c = check_output(output_rule(p, Output::O), got, {ref, ref, 4});
    EXPECT_FALSE(c.pass);
    EXPECT_NE(c.reason.find("shape"), std::string::npos);
}

// Zero by construction (docs/trust.md#zero-by-construction): decided from the problem alone.
TEST(Compare, ZeroByConstructionFollowsTheOneKeyRowsAndTheHiddenKeys) {
    Problem p = small(Mask::causal_tl);  // S_q 6, S_kv 4: query 0 sees key 0 only, query 1 keys 0-1
    p.dir = Dir::bwd;
    const auto at = [](std::int64_t i) { return std::array<std::int64_t, 4>{0, 1, i, 3}; };
    EXPECT_TRUE(zero_by_construction(p, Output::dQ, at(0)));   // one key: dS = 0 on its row
    EXPECT_FALSE(zero_by_construction(p, Output::dQ, at(1)));  // two keys
    EXPECT_FALSE(zero_by_construction(p, Output::dK, at(0)));  // key 0 is also seen by queries 1-5
    EXPECT_FALSE(zero_by_construction(p, Output::dV, at(0)));  // dV = P^T dO: never by construction
    EXPECT_FALSE(zero_by_construction(p, Output::O, at(0)));
    p.dims.S_kv = 1;  // every query sees the one key: dS = 0 everywhere, so are dQ, dK and dMask
    EXPECT_TRUE(zero_by_construction(p, Output::dK, at(0)));
    for (std::int64_t i = 0; i < p.dims.S_q; ++i) EXPECT_TRUE(zero_by_construction(p, Output::dQ, at(i))) << i;
    p.mask = Mask::window;  // window:0,0 with S_q = S_kv: a diagonal, one key per query and query per key
    p.dims.S_kv = 6;
    EXPECT_TRUE(zero_by_construction(p, Output::dQ, at(4)));
    EXPECT_TRUE(zero_by_construction(p, Output::dK, at(4)));
    p.mask = Mask::bias;  // a [1,1,1,S_kv] bias sums dS over every row: zero only if every row's is
    p.bias_shape = BiasShape::one_row;
    p.dmask = true;
    EXPECT_FALSE(zero_by_construction(p, Output::dMask, {0, 0, 0, 2}));
    p.dims.S_kv = 1;
    EXPECT_TRUE(zero_by_construction(p, Output::dMask, {0, 0, 0, 0}));
}

// The comparison's one-sweep form gives, element for element, what the per-element rule gives.
TEST(Compare, ZeroByConstructionSweepIsTheElementRule) {
    std::vector<Problem> ps;
    for (const Mask m : {Mask::none, Mask::causal_tl, Mask::causal_br, Mask::window, Mask::bias})
        for (const std::int64_t skv : {1, 3, 6, 9}) {
            Problem p = small(m);
            p.dir = Dir::bwd;
            p.dims.B = 2;
            p.dims.S_kv = skv;
            p.window_left = p.window_right = 0;
            if (m == Mask::bias) {
                p.mask_fill = MaskFill::causal_last_row;
                p.dmask = true;
            }
            ps.push_back(p);
            p.seq_len_kv = {1, skv};  // key padding: batch 0 sees one key
            ps.push_back(p);
        }
    std::int64_t flagged = 0;
    for (Problem p : ps)
        for (const BiasShape bs : {BiasShape::one, BiasShape::b, BiasShape::one_row, BiasShape::bh_row}) {
            p.bias_shape = bs;
            for (const Output out : {Output::dQ, Output::dK, Output::dV, Output::dMask}) {
                if (out == Output::dMask && !p.dmask) continue;
                const Dims& d = p.dims;
                const std::array<std::int64_t, 4> dims = out == Output::dMask ? bias_dims(p)
                        : out == Output::dQ ? std::array<std::int64_t, 4>{d.B, d.H_q, d.S_q, d.D_qk}
                                            : std::array<std::int64_t, 4>{d.B, d.H_kv, d.S_kv, d.D_qk};
                const ZeroByConstruction z = zero_by_construction_sweep(p, out, dims);
                for (std::int64_t a = 0; a < dims[0]; ++a)
                    for (std::int64_t c = 0; c < dims[2]; ++c)
                        for (std::int64_t j = 0; j < dims[3]; ++j) {
                            const bool want = zero_by_construction(p, out, {a, 0, c, j});
                            ASSERT_EQ(z.any() && z.at(a * dims[2] + c, j), want)
                                    << fmt::format("{} mask {} S_kv {} bias {} at ({},{},{})", out, p.mask, d.S_kv,
                                               static_cast<int>(bs), a, c, j);
                            flagged += want;
                        }
            }
        }
    EXPECT_GT(flagged, 0);
}

TEST(Compare, ZeroByConstructionIsHeldToTheBoundButNotToZeroTrust) {
    Problem p = small(Mask::none, DType::f32);
    p.dir = Dir::bwd;
    p.dims.S_kv = 1;  // dQ is 0 by construction everywhere
    const Tensor zero = filled({1, 2, 6, 8}, 0.f), mag = filled({1, 2, 6, 8}, 1.f);
    OutputCheck c = check_output(output_rule(p, Output::dQ), zero, {zero, mag, 1});
    EXPECT_TRUE(c.pass);
    EXPECT_FALSE(c.mistrusted);  // was MISTRUSTED: 100% of the reference zero
    EXPECT_EQ(c.zero_by_construction, 96);
    EXPECT_EQ(c.zero_fraction, 0.0);
    Tensor got = zero;
    got.at(0, 1, 3, 2) = 0.01f;  // a kernel that writes a value there still fails the bound
    c = check_output(output_rule(p, Output::dQ), got, {zero, mag, 1});
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.failure, CheckFailure::bound);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 1, 3, 2}));
    // dV is not zero by construction: a reference of zeros there is still MISTRUSTED.
    const Tensor zero_v = filled({1, 2, 1, 8}, 0.f), mag_v = filled({1, 2, 1, 8}, 1.f);
    EXPECT_TRUE(check_output(output_rule(p, Output::dV), zero_v, {zero_v, mag_v, 6}).mistrusted);
}

namespace {

/// An O of [2,3,520,64] under causal_br (S_kv = 512: rows 0..7 see no key and hold 0): 199,680
/// elements, so the pass runs in parallel over several blocks per head. ref random, mag |ref| + 1,
/// got ref with small errors.
struct Large {
    Problem p = small(Mask::causal_br, DType::bf16);
    Tensor ref, mag, got;
    Large() {
        p.dims = {2, 3, 3, 520, 512, 64, 64};
        ref = mag = got = Tensor({2, 3, 520, 64}, DType::f32);
        std::mt19937 rng(5);
        std::normal_distribution<float> n(0.f, 1.f);
        for (std::size_t i = 0; i < ref.size(); ++i) {
            if (ref.index(i)[2] < 8) continue;  // fully masked rows: 0
            ref.data[i] = n(rng);
            mag.data[i] = std::fabs(ref.data[i]) + 1.f;
            got.data[i] = ref.data[i] + 1e-3f * n(rng);
        }
    }
};

/// check_output of `l` on `threads` threads.
OutputCheck check_on(const Large& l, const Tensor& got, int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    OutputCheck c = check_output(output_rule(l.p, Output::O), got, {l.ref, l.mag, 512});
    omp_set_num_threads(saved);
    return c;
}

}  // namespace

TEST(Compare, TheParallelPassGivesOneAnswerForAnyThreadCount) {
    Large l;
    // Two elements with the same, largest error in different blocks: the first in flat order is the worst.
    for (const auto& [b, h, i, d] : {std::array<std::int64_t, 4>{1, 2, 300, 5}, {0, 1, 400, 7}}) {
        l.ref.at(b, h, i, d) = 1.f;
        l.got.at(b, h, i, d) = 1.5f;
        l.mag.at(b, h, i, d) = 2.f;
    }
    const OutputCheck one = check_on(l, l.got, 1);
    EXPECT_FALSE(one.pass);
    EXPECT_EQ(one.failure, CheckFailure::bound);
    EXPECT_EQ(one.worst_index, (std::array<std::int64_t, 4>{0, 1, 400, 7}));
    EXPECT_EQ(one.elements, 2 * 3 * 520 * 64);
    EXPECT_EQ(one.structural_zeros, 2 * 3 * 8 * 64);
    for (const int threads : {2, 3}) {
        const OutputCheck c = check_on(l, l.got, threads);
        EXPECT_EQ(c.worst_index, one.worst_index) << threads;
        EXPECT_EQ(c.worst_ratio, one.worst_ratio) << threads;
        EXPECT_EQ(c.bound, one.bound) << threads;
        EXPECT_EQ(c.norm_worst, one.norm_worst) << threads;  // the same sums in the same order
        EXPECT_EQ(c.norm_ratio, one.norm_ratio) << threads;
        EXPECT_EQ(c.norm_head, one.norm_head) << threads;
        EXPECT_EQ(c.zero_fraction, one.zero_fraction) << threads;
        EXPECT_EQ(c.got_zero_fraction, one.got_zero_fraction) << threads;
    }
    // The norm of each head is the one its elements give (sums of squares in f64).
    double g2 = 0, e2 = 0;
    for (std::int64_t i = 0; i < 520; ++i)
        for (std::int64_t d = 0; d < 64; ++d) {
            g2 += static_cast<double>(l.got.at(one.norm_head[0], one.norm_head[1], i, d)) * l.got.at(one.norm_head[0], one.norm_head[1], i, d);
            e2 += static_cast<double>(l.ref.at(one.norm_head[0], one.norm_head[1], i, d)) * l.ref.at(one.norm_head[0], one.norm_head[1], i, d);
        }
    EXPECT_NEAR(one.norm_ratio, std::sqrt(g2 / e2), 1e-12);
}

TEST(Compare, ARowWithANonFiniteValueIsStillComparedElementByElement) {
    Large l;
    // A NaN and, in the same row, an error past the bound; a later NaN in another head.
    l.got.at(1, 0, 20, 1) = NAN;
    l.got.at(0, 2, 500, 3) = NAN;
    l.got.at(0, 2, 500, 60) += 1.f;
    for (const int threads : {1, 2}) {
        const OutputCheck c = check_on(l, l.got, threads);
        EXPECT_EQ(c.failure, CheckFailure::nonfinite) << threads;
        EXPECT_EQ(c.nonfinite, 2) << threads;
        EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 2, 500, 3})) << threads;  // the first NaN
        EXPECT_GT(c.worst_ratio, 1.0) << threads;  // the row's finite elements were compared
    }
    // A fully masked row must still hold exact zeros, found wherever it is.
    Large m;
    m.got.at(1, 1, 7, 63) = 1e-30f;
    const OutputCheck c = check_on(m, m.got, 2);
    EXPECT_EQ(c.failure, CheckFailure::masked_rows);
    EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{1, 1, 7, 63}));
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
    OutputCheck c = check_output(output_rule(p, Output::dK), got, {ref, mag, 12});
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.failure, CheckFailure::masked_rows) << c.reason;
    // Under the convention they are skipped (and counted), and the rest still has to match.
    Conventions conv;
    conv.padded_grad_rows_unspecified = true;
    c = check_output(output_rule(p, Output::dK, conv), got, {ref, mag, 12});
    EXPECT_TRUE(c.pass) << c.reason;
    EXPECT_EQ(c.unchecked, past);
    got.at(1, 1, 3, 7) = 1.5f;  // a valid row still counts
    EXPECT_FALSE(check_output(output_rule(p, Output::dK, conv), got, {ref, mag, 12}).pass);
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

TEST(Compare, ANonFiniteMagnitudeIsItsOwnFailureNotAPass) {
    // The reference is finite everywhere, but its magnitude overflowed at two elements, where the
    // kernel is far off: before this check the bound there was inf (or NaN) and passed any error.
    for (const float bad : {INFINITY, NAN}) {
        Large l;
        l.mag.at(0, 1, 100, 5) = bad;
        l.got.at(0, 1, 100, 5) += 1e6f;
        l.mag.at(1, 2, 300, 7) = bad;
        for (const int threads : {1, 2}) {
            const OutputCheck c = check_on(l, l.got, threads);
            EXPECT_FALSE(c.pass) << threads;
            EXPECT_EQ(c.failure, CheckFailure::mag_nonfinite) << threads;
            EXPECT_EQ(c.mag_nonfinite, 2) << threads;
            EXPECT_EQ(c.worst_index, (std::array<std::int64_t, 4>{0, 1, 100, 5})) << threads;  // the first one
        }
    }
    // The same output with finite magnitudes passes: the failure is the magnitude's alone.
    Large ok;
    EXPECT_TRUE(check_on(ok, ok.got, 2).pass);
}
