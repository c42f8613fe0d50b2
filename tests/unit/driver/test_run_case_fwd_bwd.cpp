// fwd_bwd in the driver (driver/run_case.cpp): the vendor's forward is checked, then its own O and
// stats feed the vendor backward (and the reference backward); a wrong forward stops the chain.
// A spy backend wraps the reference backend, records what each prepare() received and can
// corrupt the forward's O.
#include "driver/run_case.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/ref/ref_backend.hpp"

#include "../test_helpers.hpp"

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
    Case c = test::make_case(test::make_problem({2, 4, 2, 16, 24, 8, 8}, Dir::fwd_bwd, DType::bf16, Mask::window),
            "ref");
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

TEST(RunCaseSampled, AForwardSamplesQueryRowsOnlyAndSaysSo) {
    // A forward's outputs have no key rows: every key enters each sampled row, and the label, the
    // result's `sample` field, names the query rows alone; fwd_bwd's backward samples keys too.
    RefBackend ref;
    Case c = test::make_case(test::make_problem({1, 2, 1, 300, 200, 16, 16}, Dir::fwd_t), "ref");
    c.sample_rows = 8;
    CaseResult r = run_case(c, ref, 0);
    EXPECT_EQ(r.status, Status::passed) << r.reason;
    EXPECT_EQ(r.sample, "8/300 query rows");
    c.prb.dims.S_q = 8;  // every query row: a full check, not a sampled one
    r = run_case(c, ref, 0);
    EXPECT_EQ(r.status, Status::passed) << r.reason;
    EXPECT_EQ(r.sample, "");
    c.prb.dims.S_q = 300;
    c.prb.dir = Dir::fwd_bwd;
    r = run_case(c, ref, 0);
    EXPECT_EQ(r.status, Status::passed) << r.reason;
    EXPECT_EQ(r.sample, "8/300 query rows, 8/200 key rows");
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

/// A reference-backed vendor for the dropout rerun rules: with `ignore_seed` its generator uses
/// seed 1 whatever the seed (and declares so, so the exact comparison cannot see it); with
/// `kernel_ignores_seed` the kernel does so while the declared mask follows the seed (a mask read
/// back from somewhere else than the kernel); with `p0_ulp` a Dropout of p = 0 moves O element 0
/// by one ulp (inside every tolerance, not bitwise); with `no_dropout_doubled` the graph without
/// dropout doubles O element 0 (far outside the bound) while p = 0 is right.
class DropoutSpy final : public Backend {
public:
    bool ignore_seed = false, kernel_ignores_seed = false, p0_ulp = false, no_dropout_doubled = false;
    std::string_view name() const override { return "ref"; }
    std::string version() const override { return "dropout spy"; }
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(seen(p)); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        RefKernel k;
        k.compute = [this](const Problem& q, const SdpaInputs& x) {
            Problem used = q;
            if (kernel_ignores_seed && used.dropout) used.dropout->seed = 1;
            const auto mask = dropout_mask(used);
            RefOptions opt;
            opt.dropout = mask.get();
            SdpaOutputs o = reference_as_vendor(q, x, opt);
            if (p0_ulp && q.dropout && q.dropout->p == 0.f && !o.O.empty())
                o.O.data[0] = std::nextafter(o.O.data[0], 1e30f);
            if (no_dropout_doubled && !q.dropout && !o.O.empty()) o.O.data[0] = 2 * o.O.data[0] + 1;
            return o;
        };
        return make_reference_plan(p, in, std::move(k));
    }

private:
    Problem seen(Problem p) const {
        if (ignore_seed && p.dropout) p.dropout->seed = 1;
        return p;
    }
};

Case dropout_case(Dims d, Dir dir, Dropout dr, Mask mask = Mask::none) {
    Case c = test::make_case(test::make_problem(d, dir, Problem{}.dt, mask));
    c.prb.dropout = dr;
    return c;
}

// Tiny problems: identical masks for seed and seed + 1 are likely by chance there, and few visible
// differences cannot be required to change a rounded output; a correct vendor never FAILS.
TEST(RunCaseDropout, TinyProblemsNeverFailTheSeedRule) {
    DropoutSpy spy;
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
        for (const auto& c : {dropout_case(Dims{1, 1, 1, 1, 1, 1, 1}, Dir::fwd_t, Dropout{0.1f, seed, 1}),
                 dropout_case(Dims{1, 2, 2, 1, 33, 8, 8}, Dir::fwd_t, Dropout{0.2f, seed, 5}, Mask::causal_tl),
                 dropout_case(Dims{1, 2, 2, 32, 32, 16, 16}, Dir::bwd, Dropout{1e-9f, seed, 1}),
                 dropout_case(Dims{1, 2, 2, 8, 8, 8, 8}, Dir::fwd_bwd, Dropout{0.99999f, seed, 1})}) {
            const CaseResult r = run_case(c, spy, 0);
            EXPECT_NE(r.status, Status::failed) << r.repro << ": " << r.reason;
        }
    }
}

TEST(RunCaseDropout, AGeneratorThatIgnoresTheSeedFails) {
    DropoutSpy spy;
    spy.ignore_seed = true;
    const CaseResult r = run_case(dropout_case(Dims{1, 2, 2, 32, 32, 16, 16}, Dir::fwd_t, Dropout{0.3f, 7, 2}), spy, 0);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_NE(r.reason.find("dropout: the mask for seed 8 equals the mask for seed 7"), std::string::npos) << r.reason;
    // A kernel that ignores the seed while its declared mask follows it: seed 1 agrees with the
    // reference, seed 2 leaves the outputs as they were.
    spy.ignore_seed = false;
    spy.kernel_ignores_seed = true;
    const CaseResult k = run_case(dropout_case(Dims{1, 2, 2, 32, 32, 16, 16}, Dir::fwd_t, Dropout{0.3f, 1, 2}), spy, 0);
    EXPECT_EQ(k.status, Status::failed);
    EXPECT_EQ(k.reason, "dropout: changing the seed from 1 to 2 left every output bitwise unchanged (the masks differ "
                        "in at least 64 visible elements)");
}

// p = 0 must be no dropout: within each output's bound in --mode=C (an ulp from run to run is a
// correct non-deterministic kernel), bitwise where determinism is asked for (--mode=B,
// --deterministic=true); in fwd_t, bwd and both halves of fwd_bwd.
TEST(RunCaseDropout, PZeroMustBeNoDropoutWithinTheBoundAndBitwiseWhereAsked) {
    DropoutSpy spy;
    spy.p0_ulp = true;
    for (Dir dir : {Dir::fwd_t, Dir::fwd_bwd}) {
        const CaseResult r = run_case(dropout_case(Dims{1, 2, 2, 16, 16, 8, 8}, dir, Dropout{0.f, 1, 1}), spy, 0);
        EXPECT_EQ(r.status, Status::passed) << r.repro << ": " << r.reason;
        Case det = dropout_case(Dims{1, 2, 2, 16, 16, 8, 8}, dir, Dropout{0.f, 1, 1});
        det.prb.deterministic = true;
        const CaseResult d = run_case(det, spy, 0);
        EXPECT_EQ(d.status, Status::failed) << d.repro;
        EXPECT_NE(d.reason.find("dropout: --dropout=0:1:1 is not bitwise equal to no dropout: O: 1 element(s) differ, "
                                "first at (0,0,0,0)"), std::string::npos) << d.reason;
    }
    Case b = dropout_case(Dims{1, 2, 2, 16, 16, 8, 8}, Dir::fwd_t, Dropout{0.f, 1, 1});
    b.mode = Mode::B;
    const CaseResult rb = run_case(b, spy, 0);
    EXPECT_EQ(rb.status, Status::failed) << rb.repro;
    EXPECT_NE(rb.reason.find("is not bitwise equal to no dropout"), std::string::npos) << rb.reason;
    spy.p0_ulp = false;
    spy.no_dropout_doubled = true;  // p = 0 right, no dropout wrong: the rerun fails its bound
    const CaseResult far = run_case(dropout_case(Dims{1, 2, 2, 16, 16, 8, 8}, Dir::fwd_t, Dropout{0.f, 1, 1}), spy, 0);
    EXPECT_EQ(far.status, Status::failed) << far.repro;
    EXPECT_NE(far.reason.find("dropout: without dropout (--dropout=0:1:1 must equal it within the bound): O: error "
                              "exceeds the bound at (0,0,0,0)"), std::string::npos) << far.reason;
    spy.no_dropout_doubled = false;
    for (Dir dir : {Dir::fwd_t, Dir::bwd, Dir::fwd_bwd}) {
        const CaseResult r = run_case(dropout_case(Dims{1, 2, 2, 16, 16, 8, 8}, dir, Dropout{0.f, 1, 1}), spy, 0);
        EXPECT_EQ(r.status, Status::passed) << r.repro << ": " << r.reason;
    }
}

}  // namespace
}  // namespace sdpa

namespace sdpa {
namespace {

// The driver's steps (run_case.hpp case_steps): what each mode does with each direction; the
// backend never sees fwd_bwd.
TEST(CaseSteps, EachModeAndDirection) {
    using K = Step::Kind;
    auto steps = [](Mode m, Dir d) {
        Case c;
        c.mode = m;
        c.prb.dir = d;
        return case_steps(c);
    };
    EXPECT_EQ(steps(Mode::C, Dir::fwd_t), (std::vector<Step>{{K::check, Dir::fwd_t}}));
    EXPECT_EQ(steps(Mode::C, Dir::fwd_bwd), (std::vector<Step>{{K::check, Dir::fwd_t}, {K::check, Dir::bwd}}));
    EXPECT_EQ(steps(Mode::P, Dir::bwd), (std::vector<Step>{{K::time, Dir::bwd}}));
    EXPECT_EQ(steps(Mode::CP, Dir::fwd_i), (std::vector<Step>{{K::check, Dir::fwd_i}, {K::time, Dir::fwd_i}}));
    EXPECT_EQ(steps(Mode::B, Dir::bwd), (std::vector<Step>{{K::check, Dir::bwd}, {K::rerun, Dir::bwd}}));
    EXPECT_EQ(steps(Mode::L, Dir::fwd_bwd), std::vector<Step>{});
    for (const Mode m : {Mode::P, Mode::CP, Mode::B}) EXPECT_EQ(steps(m, Dir::fwd_bwd), std::nullopt);
    for (const Dir d : {Dir::fwd_i, Dir::fwd_t, Dir::bwd, Dir::fwd_bwd})
        for (const Mode m : {Mode::C, Mode::P, Mode::CP, Mode::B})
            if (const auto s = steps(m, d)) {
                for (const Step& x : *s) EXPECT_NE(x.dir, Dir::fwd_bwd);
            }
}

}  // namespace
}  // namespace sdpa
