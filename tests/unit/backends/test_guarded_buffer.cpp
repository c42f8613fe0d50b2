#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/guarded_buffer.hpp"
#include "backends/strided_buffer.hpp"
#include "compare/compare.hpp"

using namespace sdpa;

namespace {

TensorGeom geom(ElemType t, std::array<std::int64_t, 4> dims, std::array<std::int64_t, 4> strides) {
    TensorGeom g;
    g.role = Role::dQ;
    g.type = t;
    g.dims = dims;
    g.strides = strides;
    g.output = true;
    return g;
}

}  // namespace

TEST(GuardedBuffer, PrefilledWithNanAndCountsUnwritten) {
    GuardedBuffer b(geom(ElemType::f32, {1, 1, 4, 4}, {16, 16, 4, 1}));
    ASSERT_EQ(b.size(), 16u * 4);
    auto* f = static_cast<float*>(b.data());
    for (int i = 0; i < 16; ++i) ASSERT_TRUE(std::isnan(f[i]));
    EXPECT_EQ(b.check().unwritten, 16);
    for (int i = 0; i < 13; ++i) f[i] = 0.5f * i;
    const OutputIntegrity r = b.check();
    EXPECT_EQ(r.unwritten, 3);
    EXPECT_EQ(r.touched_before, 0u);
    EXPECT_EQ(r.touched_after, 0u);
    EXPECT_EQ(r.gap_written, 0);
    b.poison();
    EXPECT_EQ(b.check().unwritten, 16);
}

TEST(GuardedBuffer, DetectsWritesOutsideThePayload) {
    GuardedBuffer b(geom(ElemType::bf16, {1, 1, 1, 8}, {8, 8, 8, 1}));  // eight 16-bit elements
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

TEST(GuardedBuffer, StrideGapsArePrefilledAndAWriteIntoOneIsReported) {
    // [1,2,3,4] with a row pitch of 10 (bshd-like, 2 spare elements after the two heads of a row).
    const TensorGeom t = geom(ElemType::f32, {1, 2, 3, 4}, {30, 4, 10, 1});
    GuardedBuffer b(t);
    ASSERT_EQ(b.size(), static_cast<std::size_t>(t.span()) * 4);
    ASSERT_EQ(t.span(), 28);  // 1 + 1*4 + 2*10 + 3
    Tensor host(t.dims, DType::f32);
    for (std::size_t i = 0; i < host.size(); ++i) host.data[i] = static_cast<float>(i);
    b.write(host);
    OutputIntegrity r = b.check();
    EXPECT_TRUE(r.clean()) << r.gap_written << " " << r.unwritten;
    EXPECT_EQ(b.read().data, host.data);
    auto* f = static_cast<float*>(b.data());
    EXPECT_TRUE(std::isnan(f[8]) && std::isnan(f[9]));  // the gap after row s = 0 stays NaN
    f[18] = 0.f;  // the gap of row s = 1: offset 18 = 1*10 + 8, past both heads of that row
    r = b.check();
    EXPECT_EQ(r.gap_written, 1);
    EXPECT_EQ(r.first_gap, 18);
    EXPECT_NE(r.first_gap_where.find("element offset 18"), std::string::npos) << r.first_gap_where;
    EXPECT_FALSE(r.clean());
    // The compare turns it into a FAILED output naming the gap.
    Problem p;
    p.dims = {1, 2, 3, 3, 4, 4, 4};
    const Tensor mag(t.dims, DType::f32, 1.f);
    const OutputCheck c = check_output(output_rule(p, Output::dQ), host, {host, mag, 3}, r);
    EXPECT_FALSE(c.pass);
    EXPECT_FALSE(c.located);
    EXPECT_NE(c.reason.find("wrote into the stride gap of dQ at element offset 18"), std::string::npos) << c.reason;
}

TEST(GuardedBuffer, ALargerLibraryBufferCountsItsTailAsGap) {
    const TensorGeom t = geom(ElemType::f32, {1, 1, 2, 2}, {4, 4, 2, 1});
    GuardedBuffer b(t, 6);
    ASSERT_EQ(b.size(), 6u * 4);
    b.write(Tensor(t.dims, DType::f32, 1.f));
    EXPECT_TRUE(b.check().clean());
    static_cast<float*>(b.data())[5] = 2.f;
    EXPECT_EQ(b.check().gap_written, 1);
}

TEST(StridedBuffer, PackPutsTheCanaryInGapsAndGatherReadsLogicalElements) {
    TensorGeom t = geom(ElemType::bf16, {1, 2, 2, 2}, {8, 2, 4, 1});  // pitch 4 for 2 heads x 2: no gap
    Tensor host(t.dims, DType::bf16);
    for (std::size_t i = 0; i < host.size(); ++i) host.data[i] = static_cast<float>(i + 1);
    std::vector<std::byte> bytes = pack_input(t, host);
    EXPECT_EQ(bytes.size(), 8u * 2);
    EXPECT_EQ(gather(t, bytes.data(), 8).data, host.data);
    t.strides = {12, 2, 6, 1};  // pitch 6: two gap elements after each row
    bytes = pack_input(t, host);
    ASSERT_EQ(bytes.size(), static_cast<std::size_t>(t.span()) * 2);
    float gap = 0;
    decode(DType::bf16, bytes.data() + 4 * 2, &gap, 1);
    EXPECT_EQ(gap, kInputGapCanary);
    EXPECT_EQ(gather(t, bytes.data(), t.span()).data, host.data);
    // A read past the buffer (a fault with foreign strides) sees the canary.
    TensorGeom wide = t;
    wide.strides = {100, 2, 50, 1};
    const Tensor far = gather(wide, bytes.data(), t.span());
    EXPECT_EQ(far.data.back(), kInputGapCanary);
}

TEST(GuardedBuffer, CompareTurnsGuardReportsIntoFailures) {
    Problem p;
    p.dims = {1, 1, 1, 4, 4, 8, 8};
    const Tensor ref({1, 1, 4, 8}, DType::f32, 1.f), mag({1, 1, 4, 8}, DType::f32, 1.f);
    OutputIntegrity outside;
    outside.touched_after = 12;
    OutputCheck c = check_output(output_rule(p, Output::O), ref, {ref, mag, 4}, outside);
    EXPECT_FALSE(c.pass);
    EXPECT_NE(c.reason.find("wrote outside O"), std::string::npos) << c.reason;
    OutputIntegrity unwritten;
    unwritten.unwritten = 3;
    c = check_output(output_rule(p, Output::dV), ref, {ref, mag, 4}, unwritten);
    EXPECT_FALSE(c.pass);
    EXPECT_NE(c.reason.find("3 element(s) of dV not written"), std::string::npos) << c.reason;
}

TEST(GuardedBuffer, OnePassOverALargeStridedBufferFindsTheFirstGapWriteAndSkipsUnspecifiedRows) {
    // [2,4,300,64] bf16 with a row pitch of 4 * 64 + 16: 16 gap elements after each row, 614,400
    // logical elements (the pass runs on every thread).
    const TensorGeom t = geom(ElemType::bf16, {2, 4, 300, 64}, {300 * 272, 64, 272, 1});
    GuardedBuffer b(t);
    Tensor host(t.dims, DType::bf16, 1.f);
    b.write(host);
    EXPECT_TRUE(b.check().clean());
    auto* e = static_cast<std::uint16_t*>(b.data());
    e[1 * 300 * 272 + 200 * 272 + 260] = 0;  // a gap element of batch 1, row 200
    e[0 * 300 * 272 + 17 * 272 + 270] = 0;   // one of batch 0, row 17: the first in memory
    e[5] = 0xFFFF;                           // a logical element back to the prefill
    OutputIntegrity r = b.check();
    EXPECT_EQ(r.gap_written, 2);
    EXPECT_EQ(r.first_gap, 17 * 272 + 270);
    EXPECT_EQ(r.unwritten, 1);
    // Rows from 100 of batch 0 and from 250 of batch 1 are the kernel's to leave: not unwritten.
    b.poison();
    b.set_unspecified_rows({100, 250});
    for (std::int64_t a = 0; a < 2; ++a)
        for (std::int64_t h = 0; h < 4; ++h)
            for (std::int64_t s = 0; s < (a == 0 ? 100 : 250); ++s)
                for (std::int64_t d = 0; d < 64; ++d) e[t.offset(a, h, s, d)] = 0;
    r = b.check();
    EXPECT_EQ(r.unwritten, 0);
    EXPECT_EQ(r.gap_written, 0);
    e[t.offset(1, 3, 249, 63)] = 0xFFFF;  // a row that must be written
    EXPECT_EQ(b.check().unwritten, 1);
}
