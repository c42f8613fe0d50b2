// fwd_bwd in the driver (driver/run_case.cpp): the vendor's forward is checked, then its own O and
// stats feed the vendor backward (and the reference backward); a wrong forward stops the chain.
// A spy backend wraps the reference backend, records what each prepare() received and can
// corrupt the forward's O.
#include "driver/run_case.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "backends/ref/ref_backend.hpp"

namespace sdpa {
namespace {

/// Wraps a plan and adds `delta` to O element 0 after each run (0: no change).
class SkewedPlan final : public Plan {
public:
    SkewedPlan(std::unique_ptr<Plan> inner, float delta) : inner_(std::move(inner)), delta_(delta) {}
    void execute() override { inner_->execute(); }
    void poison_outputs() override { inner_->poison_outputs(); }
    SdpaOutputs read_outputs() override {
        SdpaOutputs o = inner_->read_outputs();
        if (!o.O.empty()) o.O.data[0] += delta_;
        return o;
    }

private:
    std::unique_ptr<Plan> inner_;
    float delta_;
};

/// The reference backend, recording (direction, inputs) of every prepare().
class SpyBackend final : public Backend {
public:
    float skew = 0.f;
    std::vector<std::pair<Dir, SdpaInputs>> prepared;
    std::vector<SdpaOutputs> forward_outputs;

    std::string_view name() const override { return "ref"; }
    std::string version() const override { return "spy"; }
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        prepared.emplace_back(p.dir, in);
        return std::make_unique<SkewedPlan>(ref_.prepare(p, in), p.dir == Dir::bwd ? 0.f : skew);
    }

private:
    RefBackend ref_;
};

Case make_case() {
    Case c;
    c.backend = "ref";
    c.prb.dims = Dims{2, 4, 2, 16, 24, 8, 8};
    c.prb.dir = Dir::fwd_bwd;
    c.prb.dt = DType::bf16;
    c.prb.mask = Mask::window;
    c.prb.window_left = 5;
    c.prb.window_right = 1;
    c.prb.seq_len_kv = {24, 13};
    return c;
}

TEST(RunCaseFwdBwd, ChecksForwardThenFeedsItsOwnOutputsToTheBackward) {
    SpyBackend spy;
    const CaseResult r = run_case(make_case(), spy, 0);
    EXPECT_EQ(r.status, Status::passed) << r.reason;
    ASSERT_EQ(r.checks.size(), 5u);  // O, stats, dQ, dK, dV
    EXPECT_EQ(r.checks[0].output, Output::O);
    EXPECT_EQ(r.checks[1].output, Output::stats);
    EXPECT_EQ(r.checks[4].output, Output::dV);
    ASSERT_EQ(spy.prepared.size(), 2u);
    EXPECT_EQ(spy.prepared[0].first, Dir::fwd_t);
    EXPECT_EQ(spy.prepared[1].first, Dir::bwd);
    // The backward got the forward plan's O (rounded to bf16 by the backend) and stats, exactly.
    const SdpaInputs& bin = spy.prepared[1].second;
    RefBackend ref;
    Problem pf = make_case().prb;
    pf.dir = Dir::fwd_t;
    auto plan = ref.prepare(pf, spy.prepared[0].second);
    plan->execute();
    const SdpaOutputs fo = plan->read_outputs();
    EXPECT_EQ(bin.O.data, fo.O.data);
    EXPECT_EQ(bin.stats.data, fo.stats.data);
    EXPECT_EQ(bin.O.dt, DType::bf16);
    EXPECT_FALSE(bin.dO.empty());
}

TEST(RunCaseFwdBwd, WrongForwardFailsAndSkipsTheBackward) {
    SpyBackend spy;
    spy.skew = 100.f;
    const CaseResult r = run_case(make_case(), spy, 0);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_NE(r.reason.find("O: "), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("backward not run"), std::string::npos) << r.reason;
    EXPECT_EQ(spy.prepared.size(), 1u);  // no backward plan
}

}  // namespace
}  // namespace sdpa
