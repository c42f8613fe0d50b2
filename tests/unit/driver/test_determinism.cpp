// --mode=B: rerun_differs() compares two runs of a plan bit for bit.
#include <gtest/gtest.h>

#include <cmath>

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
    EXPECT_EQ(rerun_differs(plan, first), std::nullopt);
    EXPECT_EQ(plan.runs_, 2);
    EXPECT_EQ(plan.poisoned_, 1);
}

TEST(Determinism, OneUlpDifferenceFailsWithItsElement) {
    CountingPlan plan(true);
    plan.execute();
    const SdpaOutputs first = plan.read_outputs();
    const auto why = rerun_differs(plan, first);
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
    EXPECT_TRUE(rerun_differs(plan, a).has_value());
}
