#include <gtest/gtest.h>

#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <tuple>

#include "fillers/fill.hpp"

#include "../test_helpers.hpp"

using namespace sdpa;

namespace {

Problem make(Dir dir, DType dt, Fill fill, Mask mask = Mask::none) {
    return test::make_problem({2, 4, 2, 24, 40, 16, 8}, dir, dt, mask, fill);
}

}  // namespace

TEST(Fill, ExactGivesSmallIntegers) {
    const SdpaInputs in = fill_inputs(make(Dir::bwd, DType::bf16, Fill::exact));
    for (const Tensor* t : {&in.Q, &in.K, &in.V, &in.dO}) {
        ASSERT_FALSE(t->empty());
        int distinct_nonzero = 0;
        for (float x : t->data) {
            ASSERT_EQ(x, std::nearbyint(x));
            ASSERT_GE(x, -2.f);
            ASSERT_LE(x, 2.f);
            distinct_nonzero += x != 0.f;
        }
        EXPECT_GT(distinct_nonzero, static_cast<int>(t->size() / 2));  // not all zeros
    }
    EXPECT_EQ(in.Q.dims, (std::array<std::int64_t, 4>{2, 4, 24, 16}));
    EXPECT_EQ(in.K.dims, (std::array<std::int64_t, 4>{2, 2, 40, 16}));
    EXPECT_EQ(in.V.dims, (std::array<std::int64_t, 4>{2, 2, 40, 8}));
    EXPECT_EQ(in.dO.dims, (std::array<std::int64_t, 4>{2, 4, 24, 8}));
    EXPECT_TRUE(in.bias.empty());
    EXPECT_TRUE(in.O.empty());
}

TEST(Fill, NormalIsRepresentableAndRoughlyStandard) {
    Problem p = make(Dir::fwd_t, DType::f16, Fill::normal);
    p.dims.S_q = 256;
    const SdpaInputs in = fill_inputs(p);
    double sum = 0, sq = 0;
    for (float x : in.Q.data) {
        ASSERT_EQ(round_to(DType::f16, x), x);
        sum += x;
        sq += double(x) * x;
    }
    const double n = static_cast<double>(in.Q.size());
    EXPECT_NEAR(sum / n, 0.0, 0.05);
    EXPECT_NEAR(sq / n, 1.0, 0.08);
    EXPECT_TRUE(in.dO.empty());  // forward: no dO
}

TEST(Fill, SeededReproducibleAndThreadCountIndependent) {
    Problem p = make(Dir::bwd, DType::f32, Fill::normal);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const SdpaInputs a = fill_inputs(p);
    omp_set_num_threads(std::max(2, threads));
    const SdpaInputs b = fill_inputs(p);
    omp_set_num_threads(threads);
    EXPECT_EQ(a.Q.data, b.Q.data);
    EXPECT_EQ(a.dO.data, b.dO.data);
    EXPECT_NE(a.Q.data, a.K.data);  // tensors have their own streams
    p.seed = 2;
    EXPECT_NE(fill_inputs(p).Q.data, a.Q.data);
}

/// FNV-1a over the bits of a tensor's values.
std::uint64_t fnv(const Tensor& t) {
    std::uint64_t h = 1469598103934665603ull;
    for (const float f : t.data) h = (h ^ std::bit_cast<std::uint32_t>(f)) * 1099511628211ull;
    return h;
}

TEST(Fill, IntegerFamiliesKeepTheirBytesOnEveryThreadCount) {
    // The vectorised chunks of the integer fills give the bytes the element-by-element loop gave
    // (the hashes were taken from it), whatever the thread count; tensors span many chunks.
    Problem p = make(Dir::bwd, DType::f32, Fill::exact, Mask::bias);
    p.dims = {2, 8, 2, 300, 280, 64, 40};
    p.bias_shape = BiasShape::b;
    p.seed = 7;
    const int threads = omp_get_max_threads();
    for (const auto& [fill, q, dO] : {std::tuple{Fill::exact, 0xd0c89e407b054383ull, 0xf31fc481a84e2b83ull},
             std::tuple{Fill::sparse, 0xe44eb5c273854383ull, 0x915d705256ce2b83ull}})
        for (const int n : {1, std::max(2, threads)}) {
            p.fill = fill;
            omp_set_num_threads(n);
            const SdpaInputs in = fill_inputs(p);
            omp_set_num_threads(threads);
            EXPECT_EQ(fnv(in.Q), q) << n;
            EXPECT_EQ(fnv(in.dO), dO) << n;
            EXPECT_EQ(fnv(in.bias), 0x331a0cba41f58683ull) << n;  // the bias is exact's in both families
        }
}

TEST(Fill, BiasTakesItsBroadcastShapeAndDtype) {
    Problem p = make(Dir::fwd_t, DType::bf16, Fill::exact, Mask::bias);
    p.mask_dt = DType::f32;
    for (auto [shape, mb, mh] : {std::tuple{BiasShape::one, 1, 1}, std::tuple{BiasShape::b, 2, 1},
                 std::tuple{BiasShape::bh, 2, 4}}) {
        p.bias_shape = shape;
        const SdpaInputs in = fill_inputs(p);
        EXPECT_EQ(in.bias.dims, (std::array<std::int64_t, 4>{mb, mh, 24, 40}));
        EXPECT_EQ(in.bias.dt, DType::f32);
        for (float x : in.bias.data) {
            ASSERT_LE(x, 0.f);
            ASSERT_GE(x, -4.f);
        }
    }
}

TEST(Displace, BackwardGetsRoundedOAndStatsWithInfForMaskedRows) {
    Problem p = make(Dir::bwd, DType::bf16, Fill::normal, Mask::causal_br);
    p.dims.S_q = 48;  // > S_kv = 40: the first 8 rows see no key under bottom-right alignment
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    ASSERT_EQ(in.O.dims, (std::array<std::int64_t, 4>{2, 4, 48, 8}));
    ASSERT_EQ(in.stats.dims, (std::array<std::int64_t, 4>{2, 4, 48, 1}));
    for (float x : in.O.data) ASSERT_EQ(round_to(DType::bf16, x), x);
    for (std::int64_t i = 0; i < 48; ++i) {
        const float st = in.stats.at(1, 3, i, 0);
        if (i < 8) {
            EXPECT_EQ(st, INFINITY) << i;
            EXPECT_EQ(in.O.at(1, 3, i, 0), 0.f);
        } else {
            EXPECT_TRUE(std::isfinite(st)) << i;
        }
    }
    Problem f = p;
    f.dir = Dir::fwd_t;
    SdpaInputs fin = fill_inputs(f);
    displace(f, fin);
    EXPECT_TRUE(fin.O.empty());  // forward: nothing to displace
}
