#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/guarded_buffer.hpp"
#include "compare/compare.hpp"

using namespace sdpa;

TEST(GuardedBuffer, PrefilledWithNanAndCountsUnwritten) {
    GuardedBuffer b(16 * 4, 4);
    auto* f = static_cast<float*>(b.data());
    for (int i = 0; i < 16; ++i) ASSERT_TRUE(std::isnan(f[i]));
    EXPECT_EQ(b.check().unwritten, 16);
    for (int i = 0; i < 13; ++i) f[i] = 0.5f * i;
    const OutputIntegrity r = b.check();
    EXPECT_EQ(r.unwritten, 3);
    EXPECT_EQ(r.touched_before, 0u);
    EXPECT_EQ(r.touched_after, 0u);
    b.poison();
    EXPECT_EQ(b.check().unwritten, 16);
}

TEST(GuardedBuffer, DetectsWritesOutsideThePayload) {
    GuardedBuffer b(8 * 2, 2);  // eight 16-bit elements
    auto* p = static_cast<unsigned char*>(b.data());
    std::memset(p, 0, b.size());
    EXPECT_TRUE(b.check().clean());
    p[b.size() + 5] = 0x00;  // one byte past the end (+5)
    p[-1] ^= 0xFF;           // the byte right before the payload
    const OutputIntegrity r = b.check();
    EXPECT_EQ(r.touched_after, 1u);
    EXPECT_EQ(r.touched_before, 1u);
    EXPECT_FALSE(r.clean());
}

TEST(GuardedBuffer, CompareTurnsGuardReportsIntoFailures) {
    Problem p;
    p.dims = {1, 1, 1, 4, 4, 8, 8};
    const Tensor ref({1, 1, 4, 8}, DType::f32, 1.f), mag({1, 1, 4, 8}, DType::f32, 1.f);
    OutputIntegrity outside;
    outside.touched_after = 12;
    OutputCheck c = check_output(p, Output::O, ref, ref, mag, 4, {}, outside);
    EXPECT_FALSE(c.pass);
    EXPECT_NE(c.reason.find("wrote outside O"), std::string::npos) << c.reason;
    OutputIntegrity unwritten;
    unwritten.unwritten = 3;
    c = check_output(p, Output::dV, ref, ref, mag, 4, {}, unwritten);
    EXPECT_FALSE(c.pass);
    EXPECT_NE(c.reason.find("3 element(s) of dV not written"), std::string::npos) << c.reason;
}
