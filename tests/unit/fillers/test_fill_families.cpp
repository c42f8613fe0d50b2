// The defining property of each fill family beyond exact/normal (fillers/fill.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

#include "../test_helpers.hpp"

using namespace sdpa;

namespace {

Problem make(Fill fill, DType dt = DType::bf16, Dir dir = Dir::bwd) {
    return test::make_problem({2, 4, 2, 64, 160, 32, 16}, dir, dt, Mask::none, fill);
}

}  // namespace

TEST(FillFamilies, PeakyHasStandardDeviationThree) {
    const SdpaInputs in = fill_inputs(make(Fill::peaky, DType::f32));
    for (const Tensor* t : {&in.Q, &in.K, &in.V, &in.dO}) {
        double sq = 0;
        for (float x : t->data) sq += double(x) * x;
        EXPECT_NEAR(std::sqrt(sq / static_cast<double>(t->size())), 3.0, 0.15);
    }
}

TEST(FillFamilies, SparseIsEightyPercentZerosAndSmallIntegers) {
    const SdpaInputs in = fill_inputs(make(Fill::sparse));
    for (const Tensor* t : {&in.Q, &in.K, &in.V, &in.dO}) {
        std::int64_t zeros = 0;
        for (float x : t->data) {
            ASSERT_EQ(x, std::nearbyint(x));
            ASSERT_LE(std::fabs(x), 2.f);
            zeros += x == 0.f;
        }
        EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(t->size()), 0.8, 0.03);
    }
}

TEST(FillFamilies, LseUnderflowRowsHaveLseBelowMinusEightyEight) {
    for (const DType dt : {DType::f32, DType::bf16, DType::f16}) {
        Problem p = make(Fill::lse_underflow, dt, Dir::fwd_t);
        const SdpaInputs in = fill_inputs(p);
        const RefForward f = ref_forward(p, in, default_ref_options(p));
        int underflow = 0;
        for (std::int64_t i = 0; i < p.dims.S_q; ++i) {
            const float lse = f.stats.at(1, 3, i, 0);
            ASSERT_TRUE(std::isfinite(lse));
            if (i % 4 == 1) EXPECT_LT(lse, -88.7f) << "row " << i << " " << fmt::format("{}", dt);
            else EXPECT_GT(lse, -88.7f) << "row " << i;
            underflow += lse < -88.7f;
        }
        EXPECT_EQ(underflow, 16);
    }
}

TEST(FillFamilies, SpikeKHasOneLargeChannelAndTinyDo) {
    const Problem p = make(Fill::spike_k);
    const SdpaInputs in = fill_inputs(p);
    for (std::int64_t j = 0; j < p.dims.S_kv; ++j) {
        EXPECT_EQ(in.K.at(1, 1, j, 16), 70.f);
        EXPECT_LE(std::fabs(in.K.at(1, 1, j, 15)), 2.f);
    }
    for (float x : in.dO.data) {
        ASSERT_NE(x, 0.f);
        ASSERT_LT(std::fabs(x), 3e-8f);
    }
}

TEST(FillFamilies, TileSpikesPutTheDominantKeyAtTileBoundaries) {
    const Problem p = make(Fill::tile_spikes, DType::f32, Dir::fwd_t);  // S_kv = 160
    const SdpaInputs in = fill_inputs(p);
    const std::int64_t spikes[] = {63, 64, 127, 128, 159};
    const float v = scale_tensor_value(p);
    for (std::int64_t i = 0; i < p.dims.S_q; ++i) {
        // The key with the largest score of row i is spike i % 5.
        std::int64_t best = -1;
        float best_s = -INFINITY;
        for (std::int64_t j = 0; j < p.dims.S_kv; ++j) {
            float s = 0;
            for (std::int64_t k = 0; k < p.dims.D_qk; ++k) s += in.Q.at(0, 2, i, k) * in.K.at(0, 1, j, k);
            if (s * v > best_s) {
                best_s = s * v;
                best = j;
            }
        }
        EXPECT_EQ(best, spikes[i % 5]) << "row " << i;
    }
}
