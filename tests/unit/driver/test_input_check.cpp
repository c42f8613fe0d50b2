// The input check (driver/input_check.hpp): the plan's input buffers after its run must hold what
// prepare() packed, byte for byte, gaps included.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/strided_buffer.hpp"
#include "core/geometry.hpp"
#include "driver/input_check.hpp"
#include "../test_helpers.hpp"

using namespace sdpa;

namespace {

/// A bf16 backward whose dO rows have a gap of 3 elements past D (--strides=dO:...), with every
/// input tensor filled with distinct values, and its buffers packed as a backend packs them.
struct Packed {
    Problem p = test::make_problem({1, 2, 2, 4, 4, 8, 8}, Dir::bwd, DType::bf16);
    SdpaInputs in;
    std::map<Role, std::vector<std::byte>> bytes;
    Packed() {
        p.strides = *parse_role_layouts("dO:88x44x11x1");
        const Geometry geo = geometry(p);
        for (const TensorGeom* t : geo.inputs()) {
            Tensor* x = in.of(t->role);
            if (!x) continue;
            *x = Tensor(t->dims, DType::f32);
            for (std::size_t k = 0; k < x->size(); ++k) x->data[k] = round_to(DType::bf16, 0.125f * static_cast<float>(k % 61));
            bytes[t->role] = pack_input(*t, *x);
        }
    }
    std::vector<InputBuffer> now() const {
        std::vector<InputBuffer> out;
        for (const auto& [role, b] : bytes) out.push_back({role, b});
        return out;
    }
};

}  // namespace

TEST(InputCheck, UntouchedBuffersPass) {
    const Packed k;
    EXPECT_EQ(modified_input(k.p, k.in, k.now()), std::nullopt);
}

TEST(InputCheck, AWrittenElementIsNamedWithItsValues) {
    Packed k;
    const TensorGeom& t = geometry(k.p).at(Role::dO);
    const std::int64_t at = t.offset(0, 1, 2, 3);
    const float zero = 0;
    encode(DType::bf16, &zero, k.bytes[Role::dO].data() + at * 2, 1);
    const auto why = modified_input(k.p, k.in, k.now());
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("dO: 1 element(s) modified by the vendor"), std::string::npos) << *why;
    EXPECT_NE(why->find("(0,1,2,3)"), std::string::npos) << *why;
    EXPECT_NE(why->find(fmt::format("was {:g}, now 0", k.in.dO.at(0, 1, 2, 3))), std::string::npos) << *why;
}

TEST(InputCheck, AWriteIntoAGapCountsToo) {
    Packed k;
    const TensorGeom& t = geometry(k.p).at(Role::dO);
    const std::int64_t gap = t.offset(0, 0, 0, 7) + 1;  // past the row's last column
    const float one = 1;
    encode(DType::bf16, &one, k.bytes[Role::dO].data() + gap * 2, 1);
    const auto why = modified_input(k.p, k.in, k.now());
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("dO: 1 element(s)"), std::string::npos) << *why;
    EXPECT_NE(why->find(fmt::format("element offset {}", gap)), std::string::npos) << *why;
}

TEST(InputCheck, ABufferOfAnotherSizeIsNamed) {
    Packed k;
    k.bytes[Role::Q].resize(k.bytes[Role::Q].size() - 2);
    const auto why = modified_input(k.p, k.in, k.now());
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("Q: the buffer has"), std::string::npos) << *why;
}
