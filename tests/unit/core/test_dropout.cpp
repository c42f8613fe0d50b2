// Unit tests of core/dropout.hpp: the knob's spelling, Philox4x32-10 against its published answers,
// the two generators, the generator-free mask checks, and (with oneDNN built in) oneDNN's generator
// against the library's own kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "driver/knobs.hpp"
#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "core/dropout.hpp"
#include "core/problem.hpp"

using namespace sdpa;

namespace {

using i64 = std::int64_t;

Problem make(Dims d, Dropout dr) {
    Problem p;
    p.dims = d;
    p.dropout = dr;
    return p;
}

/// The whole mask of m over p's dims, row-major [B, H_q, S_q, S_kv].
std::vector<std::uint8_t> whole(const Problem& p, const DropoutMask& m) {
    const Dims& d = p.dims;
    std::vector<std::uint8_t> z(static_cast<std::size_t>(d.B * d.H_q * d.S_q * d.S_kv));
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i)
                m.keep_row(b, h, i, 0, d.S_kv, &z[static_cast<std::size_t>(((b * d.H_q + h) * d.S_q + i) * d.S_kv)]);
    return z;
}

}  // namespace

TEST(DropoutKnob, ParsesAndSpellsBack) {
    const auto d = parse_dropout("0.1:7:9");
    ASSERT_TRUE(d);
    EXPECT_FLOAT_EQ(d->p, 0.1f);
    EXPECT_EQ(d->seed, 7u);
    EXPECT_EQ(d->offset, 9u);
    EXPECT_EQ(dropout_name(*d), "0.1:7:9");
    EXPECT_EQ(parse_dropout(dropout_name(*d)), d);
    const auto dflt = parse_dropout("0.5");
    ASSERT_TRUE(dflt);
    EXPECT_EQ(dflt->seed, Dropout{}.seed);
    EXPECT_EQ(dflt->offset, Dropout{}.offset);
    EXPECT_EQ(parse_dropout("0")->p, 0.f);
    EXPECT_EQ(parse_dropout("0.2:18446744073709551615:0")->seed, 18446744073709551615ull);
    std::string why;
    EXPECT_FALSE(parse_dropout("1", &why));
    EXPECT_EQ(why, "the probability 1 must be in [0, 1) (1 would drop every element)");
    EXPECT_FALSE(parse_dropout("-0.1", &why));
    EXPECT_FALSE(parse_dropout("x", &why));
    EXPECT_EQ(why, "the probability 'x' is not a number (want P[:SEED[:OFFSET]], P in [0, 1))");
    EXPECT_FALSE(parse_dropout("0.1:-3", &why));
    EXPECT_EQ(why, "the seed '-3' is not an unsigned 64-bit integer");
    EXPECT_FALSE(parse_dropout("0.1:3:4:5", &why));
    EXPECT_EQ(why, "the offset '4:5' is not an unsigned 64-bit integer");
    EXPECT_FALSE(parse_dropout("nan", &why));
    EXPECT_FALSE(parse_dropout("inf", &why));
    EXPECT_EQ(why, "the probability inf must be a finite number in [0, 1)");
    EXPECT_FALSE(parse_dropout("-0.1", &why));
    EXPECT_EQ(why, "the probability -0.1 must be in [0, 1)");
    // f32 is what the vendors get: values that round to 1 or to 0 are refused, -0 is 0.
    EXPECT_FALSE(parse_dropout("0.999999999", &why));
    EXPECT_EQ(why, "the probability 0.999999999 rounds to 1 in f32 (the largest below 1 is 0.99999994)");
    EXPECT_FALSE(parse_dropout("1e-50", &why));
    EXPECT_EQ(why, "the probability 1e-50 rounds to 0 in f32 (write 0 for a Dropout that drops nothing)");
    EXPECT_EQ(dropout_name(*parse_dropout("-0")), "0:1:1");
    EXPECT_EQ(parse_dropout("0.99999994")->p, std::nextafter(1.f, 0.f));
}

// Known answers of Philox4x32-10 (Random123's kat_vectors, as published with Salmon et al. 2011).
TEST(DropoutPhilox, KnownAnswers) {
    std::uint32_t c0[4] = {0, 0, 0, 0};
    philox4x32_10(c0, 0);
    EXPECT_EQ(c0[0], 0x6627e8d5u);
    EXPECT_EQ(c0[1], 0xe169c58du);
    EXPECT_EQ(c0[2], 0xbc57ac4cu);
    EXPECT_EQ(c0[3], 0x9b00dbd8u);
    std::uint32_t c1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
    philox4x32_10(c1, 0xffffffffffffffffull);
    EXPECT_EQ(c1[0], 0x408f276du);
    EXPECT_EQ(c1[1], 0x41c83b0eu);
    EXPECT_EQ(c1[2], 0xa20bc7c6u);
    EXPECT_EQ(c1[3], 0x6d5451fdu);
    std::uint32_t c2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
    philox4x32_10(c2, (std::uint64_t{0x299f31d0u} << 32) | 0xa4093822u);
    EXPECT_EQ(c2[0], 0xd16cfe09u);
    EXPECT_EQ(c2[1], 0x94fdccebu);
    EXPECT_EQ(c2[2], 0x5001e420u);
    EXPECT_EQ(c2[3], 0x24126ea1u);
}

TEST(DropoutPhilox, KeepThreshold) {
    EXPECT_TRUE(philox_keeps(1u, 0.f));
    EXPECT_FALSE(philox_keeps(0u, 0.f));  // r > 0: the only draw p = 0 drops (probability 2^-32)
    EXPECT_FALSE(philox_keeps(0x7fffffffu, 0.5f));
    EXPECT_TRUE(philox_keeps(0x80000000u, 0.5f));
    EXPECT_FALSE(philox_keeps(0xffffffffu, 1.f));
}

// The ref generator: keyed by (seed, offset, b, h, i, j), so a row read in pieces equals the row
// read whole (any tiling, any thread), and seed, offset, head and batch each change it.
TEST(DropoutRefGenerator, CounterBasedAndKeyed) {
    const Problem p = make(Dims{2, 3, 3, 40, 70, 8, 8}, Dropout{0.3f, 5, 2});
    const auto m = ref_dropout_mask(p);
    std::vector<std::uint8_t> row(70), a(70);
    m->keep_row(1, 2, 17, 0, 70, row.data());
    m->keep_row(1, 2, 17, 0, 13, a.data());
    m->keep_row(1, 2, 17, 13, 57, a.data() + 13);
    EXPECT_EQ(row, a);
    const auto z = whole(p, *m);
    Problem q = p;
    q.dropout->seed = 6;
    EXPECT_NE(whole(q, *ref_dropout_mask(q)), z);
    q = p;
    q.dropout->offset = 3;
    EXPECT_NE(whole(q, *ref_dropout_mask(q)), z);
    // p = 0 keeps every element (a fed mask of p = 0 is all ones).
    q = p;
    q.dropout->p = 0.f;
    const auto all = whole(q, *ref_dropout_mask(q));
    EXPECT_EQ(std::count(all.begin(), all.end(), std::uint8_t{1}), static_cast<std::ptrdiff_t>(all.size()));
    const MaskStatistics st = mask_statistics(p, *m);
    EXPECT_FALSE(st.failure) << *st.failure;
    EXPECT_EQ(st.heads, 6);
    EXPECT_TRUE(st.distinct_checked);
    EXPECT_GT(st.keep.p_value, st.threshold);
}

// Each generator-free check fails on the bug it targets, with the values in its sentence.
TEST(DropoutStatistics, EachRuleCatchesItsBug) {
    const Problem p = make(Dims{1, 4, 4, 64, 64, 8, 8}, Dropout{0.2f, 9, 4});
    const auto good = ref_dropout_mask(p);
    // One mask for every head.
    const auto same = remapped_dropout_mask(good, [](i64, i64) { return std::pair<i64, i64>{0, 0}; }, "one mask");
    MaskStatistics st = mask_statistics(p, *same);
    ASSERT_TRUE(st.failure);
    EXPECT_EQ(st.identical_heads, 3);
    EXPECT_EQ(*st.failure, "dropout mask: 3 head(s) repeat an earlier head's mask, e.g. (b,h) = (0,1) equals (0,0)");
    // Keep rate p instead of 1 - p.
    Problem swapped = p;
    swapped.dropout->p = 0.8f;
    st = mask_statistics(p, *ref_dropout_mask(swapped));
    ASSERT_TRUE(st.failure);
    EXPECT_NE(st.failure->find("binomial p-value 0 <"), std::string::npos) << *st.failure;
    EXPECT_NE(st.failure->find("expected 0.8000"), std::string::npos) << *st.failure;
    // Neighbours sharing one draw: oneDNN's legacy offset-0 path.
    Problem legacy = p;
    legacy.dropout->offset = 0;
    st = mask_statistics(legacy, *onednn_dropout_mask(legacy));
    ASSERT_TRUE(st.failure);
    EXPECT_NE(st.failure->find("equal neighbours"), std::string::npos) << *st.failure;
    EXPECT_DOUBLE_EQ(st.pairs.rate, 1.0);
    // With an offset, oneDNN's generator passes every rule.
    st = mask_statistics(p, *onednn_dropout_mask(p));
    EXPECT_FALSE(st.failure) << *st.failure;
}

// Too few elements to tell identical masks from chance: the rule is skipped, not failed.
TEST(DropoutStatistics, TinyMasksSkipTheDistinctRule) {
    const Problem p = make(Dims{1, 8, 8, 2, 2, 8, 8}, Dropout{0.5f, 1, 1});
    const MaskStatistics st = mask_statistics(p, *ref_dropout_mask(p));
    EXPECT_FALSE(st.distinct_checked);
    EXPECT_FALSE(st.failure);
}

TEST(DropoutStatistics, FirstDifferenceNamesTheElement) {
    const Problem p = make(Dims{1, 2, 2, 8, 8, 8, 8}, Dropout{0.5f, 1, 1});
    Problem q = p;
    q.dropout->offset = 2;
    EXPECT_FALSE(first_mask_difference(p, *ref_dropout_mask(p), "forward", *ref_dropout_mask(p), "backward"));
    const auto diff = first_mask_difference(p, *ref_dropout_mask(p), "forward", *ref_dropout_mask(q), "backward");
    ASSERT_TRUE(diff);
    EXPECT_NE(diff->find("by the forward and"), std::string::npos) << *diff;
}

// oneDNN's generator replicated here must be the one its kernel runs. The probe: a forward with
// S_kv = D_v and V the identity, so O = P_d and O_ij != 0 exactly where the kernel kept (i, j).
// MHA and GQA (the 5-D graph's linear index), with an offset and on the legacy offset-0 path.
TEST(DropoutOnednn, GeneratorIsTheLibrarys) {
    auto backend = make_backend("onednn");
    if (!backend) GTEST_SKIP() << "oneDNN backend not built";
    for (const Dims d : {Dims{2, 3, 3, 20, 32, 16, 32}, Dims{1, 4, 2, 24, 16, 8, 16}})
        for (const Dropout dr : {Dropout{0.3f, 12345678901ull, 77}, Dropout{0.5f, 3, 0}, Dropout{0.1f, 1, 4294967301ull}}) {
            Problem p = make(d, dr);
            p.dir = Dir::fwd_i;
            SCOPED_TRACE(descriptor(p.dims) + " " + knobs(p));
            if (backend->support(p)) GTEST_SKIP() << backend->support(p)->reason;
            SdpaInputs in;
            in.Q = Tensor({d.B, d.H_q, d.S_q, d.D_qk}, DType::f32);
            in.K = Tensor({d.B, d.H_kv, d.S_kv, d.D_qk}, DType::f32);
            in.V = Tensor({d.B, d.H_kv, d.S_kv, d.D_v}, DType::f32);
            for (std::size_t e = 0; e < in.Q.size(); ++e) in.Q.data[e] = static_cast<float>(e % 7) * 0.25f - 0.75f;
            for (std::size_t e = 0; e < in.K.size(); ++e) in.K.data[e] = static_cast<float>(e % 5) * 0.25f - 0.5f;
            for (i64 b = 0; b < d.B; ++b)
                for (i64 h = 0; h < d.H_kv; ++h)
                    for (i64 j = 0; j < d.S_kv; ++j) in.V.at(b, h, j, j) = 1.f;
            std::unique_ptr<Plan> plan;
            try {
                plan = backend->prepare(p, in);
                plan->execute();
            } catch (const BackendError& e) {
                GTEST_SKIP() << e.what();
            }
            const SdpaOutputs out = plan->read_outputs();
            const auto want = whole(p, *backend->dropout_mask(p));
            i64 bad = 0, kept = 0;
            for (i64 b = 0; b < d.B; ++b)
                for (i64 h = 0; h < d.H_q; ++h)
                    for (i64 i = 0; i < d.S_q; ++i)
                        for (i64 j = 0; j < d.S_kv; ++j) {
                            const bool k = out.O.at(b, h, i, j) != 0.f;
                            kept += k;
                            bad += k != static_cast<bool>(want[static_cast<std::size_t>(((b * d.H_q + h) * d.S_q + i) * d.S_kv + j)]);
                        }
            EXPECT_EQ(bad, 0);
            EXPECT_GT(kept, 0);
        }
}
