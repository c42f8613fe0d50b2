#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dtype.hpp"

using namespace sdpa;

TEST(DType, Bf16RoundsToNearestEven) {
    EXPECT_EQ(round_to(DType::bf16, 1.0f + 0x1p-8f), 1.0f);                  // tie -> even (down)
    EXPECT_EQ(round_to(DType::bf16, 1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);    // tie -> even (up)
    EXPECT_EQ(round_to(DType::bf16, 1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
    EXPECT_EQ(round_to(DType::bf16, 0.1f), 0.10009765625f);
    EXPECT_TRUE(std::isnan(round_to(DType::bf16, std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(round_to(DType::bf16, -INFINITY), -INFINITY);
}

TEST(DType, F16RoundsOverflowsAndKeepsSubnormals) {
    EXPECT_EQ(round_to(DType::f16, 65504.f), 65504.f);
    EXPECT_EQ(round_to(DType::f16, 65519.f), 65504.f);
    EXPECT_EQ(round_to(DType::f16, 65520.f), INFINITY);
    EXPECT_EQ(round_to(DType::f16, -70000.f), -INFINITY);
    EXPECT_EQ(round_to(DType::f16, 1.0f + 0x1p-11f), 1.0f);              // tie -> even
    EXPECT_EQ(round_to(DType::f16, 1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);
    EXPECT_EQ(round_to(DType::f16, 0x1p-24f), 0x1p-24f);                 // smallest subnormal
    EXPECT_EQ(round_to(DType::f16, 0x1p-26f), 0.0f);                     // below half of it
    EXPECT_EQ(round_to(DType::f16, 3 * 0x1p-25f), 2 * 0x1p-24f);         // tie -> even
    EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
    EXPECT_TRUE(std::isnan(round_to(DType::f16, NAN)));
}

TEST(DType, EveryBf16AndF16ValueRoundTrips) {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const float xb = bf16_bits_to_f32(bits);
        if (!std::isnan(xb)) {
            ASSERT_EQ(f32_to_bf16_bits(xb), bits) << "bf16 bits " << b;
        }
        const float xh = f16_bits_to_f32(bits);
        if (!std::isnan(xh)) {
            ASSERT_EQ(f32_to_f16_bits(xh), bits) << "f16 bits " << b;
        }
    }
}

TEST(DType, EncodeDecodeAreExactForRepresentableValues) {
    const float vals[] = {0.f, -1.5f, 3.140625f, 1024.f, -0.0078125f};
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
        std::uint32_t buf[8] = {};
        float back[5] = {};
        encode(dt, vals, buf, 5);
        decode(dt, buf, back, 5);
        for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], vals[i]) << format_as(dt) << " " << i;
    }
    EXPECT_EQ(unit_roundoff(DType::bf16), 1.0 / 256);
    EXPECT_EQ(size_of(DType::f16), 2u);
}
