// Unit tests of the sampled check (--check=sample:N): the rows choose_rows() picks, the sampled
// reference against the full one row by row, and the comparison on a sample (an error in a sampled
// row fails, a NaN anywhere fails, a column identity catches what the rows miss).
#include "compare/compare.hpp"
#include "core/dropout.hpp"
#include "fillers/fill.hpp"
#include "ref/row_sample.hpp"
#include "ref/sdpa_ref.hpp"
#include "../test_helpers.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sdpa {
namespace {

using i64 = std::int64_t;

bool holds(const std::vector<i64>& v, i64 x) { return std::binary_search(v.begin(), v.end(), x); }

TEST(ChooseRows, EdgesFirstThenDrawnSortedAndDistinct) {
    Problem p = test::make_problem({1, 2, 1, 1000, 700, 32, 32}, Dir::bwd, DType::bf16, Mask::causal_br);
    const RowSample s = choose_rows(p, 40);
    ASSERT_EQ(s.q.size(), 40u);
    ASSERT_EQ(s.kv.size(), 40u);
    for (const auto* v : {&s.q, &s.kv}) {
        EXPECT_TRUE(std::is_sorted(v->begin(), v->end()));
        EXPECT_EQ(std::adjacent_find(v->begin(), v->end()), v->end());
    }
    // First and last live rows; causal_br with S_q > S_kv: query 300 is the first that sees a key,
    // and the rows before it (masked whole, scanned outside the sample) are not spent on.
    for (const i64 r : {i64{999}, i64{300}}) EXPECT_TRUE(holds(s.q, r)) << r;
    EXPECT_GE(s.q.front(), 300) << "a row that sees no key was sampled";
    for (const i64 r : {i64{0}, i64{699}}) EXPECT_TRUE(holds(s.kv, r)) << r;
    // The last multiple of 128 (896) and of 16 that is not one of 32 (976), both sides.
    for (const i64 r : {i64{895}, i64{896}, i64{975}, i64{976}}) EXPECT_TRUE(holds(s.q, r)) << r;
    EXPECT_EQ(choose_rows(p, 40).q, s.q) << "deterministic in the problem";
    p.seed = 2;
    EXPECT_NE(choose_rows(p, 40).q, s.q) << "the drawn rows follow --seed";
}

TEST(ChooseRows, PaddingEdgesAndSmallProblems) {
    Problem p = test::make_problem({2, 1, 1, 300, 300, 16, 16}, Dir::bwd);
    p.seq_len_q = {200, 131};
    p.seq_len_kv = {77, 300};
    const RowSample s = choose_rows(p, 32);
    // Row 200 is padding in both batches: not live, not taken.
    for (const i64 r : {i64{199}, i64{130}, i64{131}}) EXPECT_TRUE(holds(s.q, r)) << r;
    EXPECT_LT(s.q.back(), 200);
    for (const i64 r : {i64{76}, i64{77}, i64{299}}) EXPECT_TRUE(holds(s.kv, r)) << r;
    const RowSample all = choose_rows(test::make_problem({1, 1, 1, 20, 9, 8, 8}), 64);
    EXPECT_EQ(all.q.size(), 20u);
    EXPECT_EQ(all.kv.size(), 9u);
    EXPECT_FALSE(all.sampled(test::make_problem({1, 1, 1, 20, 9, 8, 8})));
}

TEST(ChooseRows, OnlyRowsThatSeeAKeyAndKeysThatAreSeen) {
    // Four batches of padded queries under causal_br: in each, only the last rows of its valid
    // length see a key (S_kv = 33 < the valid lengths), the others and the padding are masked whole.
    Problem p = test::make_problem({4, 7, 1, 142, 33, 16, 16}, Dir::bwd, DType::f32, Mask::causal_br);
    p.seq_len_q = {57, 88, 100, 66};
    const auto sees_a_key = [&](i64 i) {
        for (i64 b = 0; b < 4; ++b) {
            const auto [lo, hi] = visible_keys(p, b, i);
            if (i < valid_q(p, b) && hi > lo) return true;
        }
        return false;
    };
    for (const i64 n : {1, 4, 8}) {
        const RowSample s = choose_rows(p, n);
        ASSERT_EQ(s.q.size(), static_cast<std::size_t>(n));
        for (const i64 i : s.q) EXPECT_TRUE(sees_a_key(i)) << "N = " << n << ": row " << i << " sees no key";
        EXPECT_TRUE(holds(s.q, 99)) << "the last live row first";
    }
    // N covers every live row (S_q = 64 rows, 24 of them live: 40..63): every row, checked whole.
    Problem c = test::make_problem({1, 1, 1, 64, 24, 8, 8}, Dir::bwd, DType::f32, Mask::causal_br);
    const RowSample all_live = choose_rows(c, 24);
    EXPECT_EQ(all_live.q.size(), 64u);
    EXPECT_EQ(all_live.kv.size(), 24u);
    EXPECT_FALSE(all_live.sampled(c));
    const RowSample some = choose_rows(c, 23);
    EXPECT_EQ(some.q.size(), 23u);
    EXPECT_GE(some.q.front(), 40);
    EXPECT_EQ(describe_sample(c, some), "23/64 query rows, 23/24 key rows");
    // Keys checked whole (N >= the 8 keys, all seen) are not called sampled.
    Problem k = test::make_problem({1, 1, 1, 64, 8, 8, 8}, Dir::bwd, DType::f32, Mask::causal_tl);
    const RowSample ks = choose_rows(k, 8);
    EXPECT_EQ(ks.kv.size(), 8u);
    EXPECT_EQ(describe_sample(k, ks), "8/64 query rows");
}

/// `part` (the sampled reference: the rows, or columns, `rows` of dimension `dim`) equals those of
/// `full` bitwise.
void expect_rows_equal(const Tensor& full, const Tensor& part, int dim, const std::vector<i64>& rows, const char* what) {
    const Tensor want = gather(full, dim, rows);
    ASSERT_EQ(want.dims, part.dims) << what;
    ASSERT_GT(part.size(), 0u) << what;
    for (std::size_t e = 0; e < want.size(); ++e) {
        const auto idx = want.index(e);
        ASSERT_EQ(want.data[e], part.data[e]) << what << " at (" << idx[0] << "," << idx[1] << "," << idx[2] << ","
                                              << idx[3] << ") of the sample";
    }
}

struct SampledCase {
    std::string name;
    Problem p;
};

std::vector<SampledCase> sampled_cases() {
    std::vector<SampledCase> v;
    const auto add = [&](std::string name, Problem p) { v.push_back({std::move(name), std::move(p)}); };
    add("gqa_causal_tl_bf16", test::make_problem({2, 4, 2, 150, 130, 40, 24}, Dir::bwd, DType::bf16, Mask::causal_tl));
    add("causal_br_f16", test::make_problem({1, 2, 1, 90, 200, 32, 32}, Dir::bwd, DType::f16, Mask::causal_br));
    Problem w = test::make_problem({1, 3, 3, 140, 140, 16, 16}, Dir::bwd, DType::f32, Mask::window);
    w.window_left = 17;
    w.window_right = 3;
    add("window_f32", w);
    Problem pad = test::make_problem({2, 2, 1, 130, 110, 32, 32}, Dir::bwd, DType::bf16, Mask::causal_br);
    pad.seq_len_q = {100, 130};
    pad.seq_len_kv = {110, 47};
    add("padding_causal_br", pad);
    Problem bias = test::make_problem({2, 2, 2, 100, 120, 16, 16}, Dir::bwd, DType::f32, Mask::bias);
    bias.bias_shape = BiasShape::bh;
    bias.dmask = true;
    add("bias_dmask", bias);
    Problem row = bias;
    row.bias_shape = BiasShape::b_row;
    add("bias_row_dmask", row);
    Problem last = test::make_problem({1, 2, 2, 70, 70, 16, 16}, Dir::bwd, DType::f32, Mask::bias);
    last.mask_fill = MaskFill::causal_last_row;
    add("causal_last_row", last);
    Problem drop = test::make_problem({1, 2, 1, 100, 90, 16, 16}, Dir::bwd, DType::bf16, Mask::causal_tl);
    drop.dropout = Dropout{0.25f, 7, 3};
    add("dropout", drop);
    return v;
}

class SampledRef : public ::testing::TestWithParam<SampledCase> {};

TEST_P(SampledRef, RowsAreTheFullReferencesRows) {
    const Problem& p = GetParam().p;
    SdpaInputs in = fill_inputs(p);
    const auto mask = p.dropout ? ref_dropout_mask(p) : nullptr;
    displace(p, in, mask.get());
    const RefOptions opt = default_ref_options(p, mask.get());
    const RowSample s = choose_rows(p, 12);
    ASSERT_TRUE(s.sampled(p));
    const RefForward f = ref_forward(p, in, opt), fs = ref_forward_sampled(p, in, opt, s);
    expect_rows_equal(f.O, fs.O, 2, s.q, "O");
    expect_rows_equal(f.stats, fs.stats, 2, s.q, "stats");
    expect_rows_equal(f.M_O, fs.M_O, 2, s.q, "M_O");
    expect_rows_equal(f.M_stats, fs.M_stats, 2, s.q, "M_stats");
    const RefBackward b = ref_backward(p, in, opt), bs = ref_backward_sampled(p, in, opt, s);
    expect_rows_equal(b.dQ, bs.dQ, 2, s.q, "dQ");
    expect_rows_equal(b.M_dQ, bs.M_dQ, 2, s.q, "M_dQ");
    expect_rows_equal(b.dK, bs.dK, 2, s.kv, "dK");
    expect_rows_equal(b.M_dK, bs.M_dK, 2, s.kv, "M_dK");
    expect_rows_equal(b.dV, bs.dV, 2, s.kv, "dV");
    expect_rows_equal(b.M_dV, bs.M_dV, 2, s.kv, "M_dV");
    if (p.dmask) {
        expect_rows_equal(b.dMask, bs.dMask, 3, s.kv, "dMask");
        expect_rows_equal(b.M_dMask, bs.M_dMask, 3, s.kv, "M_dMask");
    }
    if (p.dropout) {
        EXPECT_TRUE(bs.dK_sum.empty()) << "no column identities with dropout";
        return;
    }
    // The column identities hold for the full reference within a small part of their magnitude.
    const i64 group = p.dims.H_q / p.dims.H_kv;
    for (i64 bb = 0; bb < p.dims.B; ++bb)
        for (i64 hk = 0; hk < p.dims.H_kv; ++hk)
            for (i64 e = 0; e < p.dims.D_v; ++e) {
                double dk = 0, dv = 0;
                for (i64 j = 0; j < valid_kv(p, bb); ++j) {
                    if (e < p.dims.D_qk) dk += b.dK.at(bb, hk, j, e);
                    dv += b.dV.at(bb, hk, j, e);
                }
                // bf16/f16: the emulation rounds P before dV = P^T dO, so rows of P sum to 1 +- u.
                const double u = 2 * unit_roundoff(p.dt);
                EXPECT_NEAR(dv, bs.dV_sum.at(bb, hk, 0, e), u * bs.M_dV_sum.at(bb, hk, 0, e) + 1e-6) << group;
                if (e < p.dims.D_qk) EXPECT_NEAR(dk, 0.0, u * bs.M_dK_sum.at(bb, hk, 0, e) + 1e-6);
            }
}

INSTANTIATE_TEST_SUITE_P(Cases, SampledRef, ::testing::ValuesIn(sampled_cases()),
        [](const auto& info) { return info.param.name; });

/// A bf16 backward with its sampled reference, and the outputs of a right kernel (the full
/// reference, rounded to bf16).
struct Bench {
    Problem p;
    SdpaInputs in;
    RowSample s;
    RefBackward ref;
    SdpaOutputs got;
    explicit Bench(DType dt = DType::bf16)
        : p(test::make_problem({1, 2, 1, 300, 300, 32, 32}, Dir::bwd, dt, Mask::causal_tl)) {
        in = fill_inputs(p);
        displace(p, in);
        s = choose_rows(p, 16);
        ref = ref_backward_sampled(p, in, default_ref_options(p), s);
        const RefBackward full = ref_backward(p, in, default_ref_options(p));
        got.dQ = full.dQ;
        got.dK = full.dK;
        got.dV = full.dV;
        for (Tensor* t : {&got.dQ, &got.dK, &got.dV})
            for (float& x : t->data) x = round_to(dt, x);
    }
    std::vector<OutputCheck> check() const { return check_outputs(p, got, nullptr, &ref, {}, &s); }
    /// The first key row the sample leaves out.
    i64 unsampled_key() const {
        for (i64 j = 0;; ++j)
            if (!holds(s.kv, j)) return j;
    }
};

TEST(SampledCheck, RightKernelPassesAndSaysWhatItChecked) {
    const Bench t;
    for (const OutputCheck& c : t.check()) {
        EXPECT_TRUE(c.pass) << fmt::format("{}", c.output) << ": " << c.reason;
        EXPECT_EQ(c.sampled, 16) << fmt::format("{}", c.output);
        EXPECT_EQ(c.sample_of, 300) << fmt::format("{}", c.output);
        if (c.output != Output::dQ) {
            EXPECT_GT(c.column_sum_worst, 0.0) << fmt::format("{}", c.output);
            EXPECT_LT(c.column_sum_worst, 1.0) << fmt::format("{}", c.output);
        }
    }
    EXPECT_EQ(describe_sample(t.p, t.s), "16/300 query rows, 16/300 key rows");
}

TEST(SampledCheck, ZeroTrustCountsTheWholeOutput) {
    // A right kernel: the zero fractions are the full check's (the sampled rows' reference, the
    // output elsewhere), not the sampled rows' own.
    Bench t;
    const RefBackward full = ref_backward(t.p, t.in, default_ref_options(t.p));
    const auto whole = check_outputs(t.p, t.got, nullptr, &full, {}, nullptr);
    const auto sampled = t.check();
    ASSERT_EQ(whole.size(), sampled.size());
    EXPECT_GT(whole[0].zero_fraction, 0.0);  // dQ, dK have zeros here (dV none): the fractions say something
    EXPECT_GT(whole[1].zero_fraction, 0.0);
    for (std::size_t k = 0; k < whole.size(); ++k) {
        EXPECT_NEAR(sampled[k].zero_fraction, whole[k].zero_fraction, 1e-12) << fmt::format("{}", whole[k].output);
        EXPECT_NEAR(sampled[k].got_zero_fraction, whole[k].got_zero_fraction, 1e-12) << fmt::format("{}", whole[k].output);
    }
    // A kernel that writes zeros in every row the sample leaves out: its sampled rows pass, but
    // most of its output is zero, which zero trust does not take.
    for (i64 i = 0; i < t.p.dims.S_q; ++i)
        if (!holds(t.s.q, i))
            for (i64 h = 0; h < t.p.dims.H_q; ++h)
                for (i64 d = 0; d < t.p.dims.D_qk; ++d) t.got.dQ.at(0, h, i, d) = 0.f;
    const OutputCheck dq = t.check()[0];
    EXPECT_TRUE(dq.pass) << dq.reason;
    EXPECT_TRUE(dq.mistrusted);
    EXPECT_GT(dq.got_zero_fraction, 0.9);
}

TEST(SampledCheck, ErrorInSampledRowFails) {
    Bench t;
    t.got.dQ.at(0, 1, t.s.q[5], 3) += 1.f;
    const auto checks = t.check();
    EXPECT_FALSE(checks[0].pass);
    EXPECT_EQ(checks[0].failure, CheckFailure::bound);
    EXPECT_EQ(checks[0].worst_index[2], t.s.q[5]);
}

TEST(SampledCheck, NonFiniteOutsideTheSampleFails) {
    Bench t;
    const i64 j = t.unsampled_key();
    t.got.dV.at(0, 0, j, 7) = NAN;
    const auto checks = t.check();
    EXPECT_FALSE(checks[2].pass);
    EXPECT_EQ(checks[2].unsampled_nonfinite, 1);
    EXPECT_NE(checks[2].reason.find("outside the sampled rows"), std::string::npos) << checks[2].reason;
}

TEST(SampledCheck, ColumnIdentityCatchesAnUnsampledKeyRow) {
    // f32: one dV row the sample leaves out, off by 3%: no sampled element moves, the column sum
    // does (the identity's bound is the sum of the per-element bounds: N u |x| against one row's
    // error, so at bf16 it takes errors in many rows; docs/trust.md#sampled-checks).
    Bench t(DType::f32);
    const i64 j = t.unsampled_key();
    for (i64 e = 0; e < 32; ++e) t.got.dV.at(0, 0, j, e) *= 1.03f;
    const auto checks = t.check();
    EXPECT_TRUE(checks[1].pass) << checks[1].reason;
    EXPECT_FALSE(checks[2].pass);
    EXPECT_EQ(checks[2].failure, CheckFailure::column_sum) << checks[2].reason;
    EXPECT_GT(checks[2].column_sum_worst, 1.0);
    // dK: the same row 50% off moves a sum that is 0 (its bound, from an upper bound of sum_j M_dK_j,
    // is looser than dV's: ~27 times a 1% error of this row).
    Bench k(DType::f32);
    for (i64 e = 0; e < 32; ++e) k.got.dK.at(0, 0, j, e) *= 1.5f;
    const auto kc = k.check();
    EXPECT_EQ(kc[1].failure, CheckFailure::column_sum) << kc[1].reason << " worst " << kc[1].column_sum_worst;
    // bf16: every unsampled dV row of a head doubled (a tile rescale missing everywhere but the edges).
    Bench b;
    for (i64 jj = 0; jj < 300; ++jj)
        if (!holds(b.s.kv, jj))
            for (i64 e = 0; e < 32; ++e) b.got.dV.at(0, 0, jj, e) *= 2.f;
    const auto bc = b.check();
    EXPECT_EQ(bc[2].failure, CheckFailure::column_sum) << bc[2].reason << " worst " << bc[2].column_sum_worst;
}

}  // namespace
}  // namespace sdpa
