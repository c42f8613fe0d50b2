// --mode=B: rerun_differs() compares two runs of a plan bit for bit, over every output of the
// direction (Geometry::output_list()).
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "core/geometry.hpp"
#include "driver/determinism.hpp"

using namespace sdpa;

namespace {

/// A plan whose dQ element (0,0,1,2) changes on its second run when `flaky`.
class CountingPlan final : public Plan {
public:
    explicit CountingPlan(bool flaky) : flaky_(flaky) {}
    void execute() override {
        ++runs_;
        out_.dQ = Tensor({1, 1, 2, 4}, DType::f32, 0.25f);
        if (flaky_ && runs_ == 2) out_.dQ.at(0, 0, 1, 2) = std::nextafter(0.25f, 1.f);
    }
    void poison_outputs() override {
        ++poisoned_;
        out_ = SdpaOutputs{};
    }
    SdpaOutputs read_outputs() override { return out_; }
    int runs_ = 0, poisoned_ = 0;

private:
    bool flaky_;
    SdpaOutputs out_;
};

}  // namespace

TEST(Determinism, EqualRunsPassAndThePlanIsPoisonedFirst) {
    CountingPlan plan(false);
    plan.execute();
    const SdpaOutputs first = plan.read_outputs();
    EXPECT_EQ(rerun_differs(plan, {Output::dQ, Output::dK, Output::dV}, first), std::nullopt);
    EXPECT_EQ(plan.runs_, 2);
    EXPECT_EQ(plan.poisoned_, 1);
}

TEST(Determinism, OneUlpDifferenceFailsWithItsElement) {
    CountingPlan plan(true);
    plan.execute();
    const SdpaOutputs first = plan.read_outputs();
    const auto why = rerun_differs(plan, {Output::dQ, Output::dK, Output::dV}, first);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("dQ"), std::string::npos) << *why;
    EXPECT_NE(why->find("1 element(s)"), std::string::npos) << *why;
    EXPECT_NE(why->find("(0,0,1,2)"), std::string::npos) << *why;
}

TEST(Determinism, NegativeZeroIsNotPositiveZero) {
    SdpaOutputs a, b;
    a.O = Tensor({1, 1, 1, 1}, DType::f32, 0.f);
    b.O = Tensor({1, 1, 1, 1}, DType::f32, -0.f);
    class Fixed final : public Plan {
    public:
        explicit Fixed(SdpaOutputs o) : o_(std::move(o)) {}
        void execute() override {}
        void poison_outputs() override {}
        SdpaOutputs read_outputs() override { return o_; }
        SdpaOutputs o_;
    } plan(b);
    EXPECT_TRUE(rerun_differs(plan, {Output::O}, a).has_value());
}

TEST(Determinism, EveryOutputOfTheDirectionIsCompared) {
    // --mode=B used to stop before dMask (and never saw amax): each differing output alone must
    // fail, and the list comes from the geometry (bwd with --dmask, fp8 with amax).
    Problem p;
    p.dir = Dir::bwd;
    p.mask = Mask::bias;
    p.dmask = true;
    p.dims = Dims{1, 1, 1, 4, 4, 4, 4};
    EXPECT_EQ(geometry(p).output_list(), (std::vector<Output>{Output::dQ, Output::dK, Output::dV, Output::dMask}));
    p.dt = DType::e4m3;
    p.dmask = false;
    p.mask = Mask::none;
    EXPECT_EQ(geometry(p).output_list(), (std::vector<Output>{Output::dQ, Output::dK, Output::dV, Output::amax}));
    const std::vector<Output> all{Output::O, Output::stats, Output::dQ, Output::dK, Output::dV, Output::dMask, Output::amax};
    for (const Output o : all) {
        SdpaOutputs a;
        for (const Output x : all) a.of(x) = Tensor({1, 1, 2, 2}, DType::f32, 1.5f);
        SdpaOutputs b = a;
        b.of(o).at(0, 0, 1, 1) = std::nextafter(1.5f, 2.f);
        const auto why = bitwise_difference(all, a, b);
        ASSERT_TRUE(why.has_value()) << format_as(o);
        EXPECT_EQ(why->rfind(fmt::format("{}: 1 element(s) differ, first at (0,0,1,1)", o), 0), 0u) << *why;
        EXPECT_EQ(bitwise_difference({Output::O}, a, b).has_value(), o == Output::O);
    }
}
