// The fault-injecting backend: names, and that each fault changes what the reference gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "backends/faulty/faulty_backend.hpp"
#include "compare/compare.hpp"
#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

#include "../test_helpers.hpp"

using namespace sdpa;

namespace {

SdpaOutputs run(const std::string& backend, const Problem& p) {
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    auto be = make_backend(backend);
    EXPECT_NE(be, nullptr) << backend;
    auto plan = be->prepare(p, in);
    plan->execute();
    return plan->read_outputs();
}

Problem prb(Dir dir, Mask mask, Dims d, const char* strides = "none") {
    Problem p = test::make_problem(d, dir, Problem{}.dt, mask);
    p.strides = *parse_role_layouts(strides);
    return p;
}

/// Number of elements that differ (NaN counts as different).
std::int64_t differing(const Tensor& a, const Tensor& b) {
    std::int64_t n = 0;
    for (std::size_t k = 0; k < a.size(); ++k) n += !(a.data[k] == b.data[k]);
    return n;
}

}  // namespace

TEST(FaultyBackend, NamesResolveThroughTheRegistry) {
    for (const auto& row : kFaultNames) {
        const std::string name = std::string(kFaultyPrefix) + std::string(row.name);
        auto be = make_backend(name);
        ASSERT_NE(be, nullptr) << name;
        EXPECT_EQ(be->name(), name);
    }
    EXPECT_EQ(make_backend("faulty:"), nullptr);
    EXPECT_EQ(make_backend("faulty:no_such_fault"), nullptr);
    EXPECT_EQ(make_backend("faultyX"), nullptr);
    const auto names = family_names(kFaultyPrefix);
    EXPECT_NE(std::find(names.begin(), names.end(), "faulty:do_strides_as_o"), names.end());
    EXPECT_EQ(names.size(), kFaultNames.size());
}

TEST(FaultyBackend, EveryKindChangesTheOutputsOfItsTargetCase) {
    const struct {
        const char* kind;
        Problem p;
        Output out;
    } cases[] = {
        {"causal_off_by_one", prb(Dir::fwd_t, Mask::causal_tl, {1, 2, 2, 16, 16, 8, 8}), Output::O},
        {"causal_tl_br_swapped", prb(Dir::fwd_t, Mask::causal_br, {1, 2, 2, 8, 24, 8, 8}), Output::O},
        {"stats_log2", prb(Dir::fwd_t, Mask::none, {1, 2, 2, 8, 8, 8, 8}), Output::stats},
        {"stats_first_head_of_group", prb(Dir::fwd_t, Mask::none, {1, 4, 2, 8, 8, 8, 8}), Output::stats},
        {"gqa_no_reduce", prb(Dir::bwd, Mask::none, {1, 4, 1, 8, 8, 8, 8}), Output::dK},
        {"dq_no_scale", prb(Dir::bwd, Mask::none, {1, 2, 2, 8, 8, 64, 8}), Output::dQ},
        {"drop_last_key", prb(Dir::fwd_t, Mask::none, {1, 2, 2, 8, 9, 8, 8}), Output::O},
        {"tail_unmasked", prb(Dir::fwd_t, Mask::causal_tl, {1, 2, 2, 80, 80, 8, 8}), Output::O},
        {"stale_head_pad", prb(Dir::bwd, Mask::none, {1, 2, 2, 8, 8, 24, 8}), Output::dQ},
        {"nan_masked_rows", prb(Dir::fwd_t, Mask::causal_br, {1, 2, 2, 12, 8, 8, 8}), Output::O},
        {"stats_strides_ignored", prb(Dir::fwd_t, Mask::none, {2, 4, 4, 8, 8, 8, 8}, "stats:bshd"), Output::stats},
        {"do_strides_as_o", prb(Dir::bwd, Mask::none, {1, 4, 4, 8, 8, 8, 8}, "dO:bshd"), Output::dV},
        {"stride_gap_write", prb(Dir::bwd, Mask::none, {1, 2, 2, 8, 8, 8, 8}, "dK:qkv"), Output::dK},
    };
    for (const auto& c : cases) {
        const SdpaOutputs good = run("ref", c.p), bad = run(std::string("faulty:") + c.kind, c.p);
        const auto pick = [&](const SdpaOutputs& o) -> const Tensor& { return o.of(c.out); };
        ASSERT_EQ(pick(good).size(), pick(bad).size()) << c.kind;
        EXPECT_TRUE(good.integrity_of(c.out).clean()) << c.kind;
        if (std::string_view(c.kind) == "stride_gap_write") {  // right values, written past the rows
            EXPECT_EQ(differing(pick(good), pick(bad)), 0) << c.kind;
            EXPECT_GT(bad.integrity_of(c.out).gap_written, 0) << c.kind;
        } else {
            EXPECT_GT(differing(pick(good), pick(bad)), 0) << c.kind;
        }
    }
}

TEST(FaultyBackend, StrideFaultsAreNoOpsOnDenseBuffers) {
    // A kernel that ignores strides is right by luck when the strides are the defaults.
    for (const char* kind : {"stats_strides_ignored", "do_strides_as_o", "stride_gap_write"}) {
        const Problem p = prb(Dir::bwd, Mask::none, {1, 2, 2, 8, 8, 8, 8});
        const SdpaOutputs good = run("ref", p), bad = run(std::string("faulty:") + kind, p);
        EXPECT_EQ(differing(good.dQ, bad.dQ) + differing(good.dK, bad.dK) + differing(good.dV, bad.dV), 0) << kind;
        EXPECT_TRUE(bad.integrity_of(Output::dK).clean()) << kind;
    }
}

TEST(FaultyBackend, Log2StatsAreNaturalStatsOverLn2) {
    const Problem p = prb(Dir::fwd_t, Mask::none, {1, 1, 1, 4, 4, 8, 8});
    const SdpaOutputs good = run("ref", p), bad = run("faulty:stats_log2", p);
    for (std::size_t k = 0; k < good.stats.size(); ++k)
        EXPECT_FLOAT_EQ(bad.stats.data[k], static_cast<float>(good.stats.data[k] / std::log(2.0)));
}

namespace {

/// The checks of the outputs `backend` gives for p against the reference (compare/compare.hpp).
std::vector<OutputCheck> checked(const std::string& backend, const Problem& p) {
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    auto be = make_backend(backend);
    EXPECT_NE(be, nullptr) << backend;
    EXPECT_FALSE(be->support(p)) << backend;
    auto plan = be->prepare(p, in);
    plan->execute();
    const SdpaOutputs got = plan->read_outputs();
    const RefOptions opt = default_ref_options(p);
    if (p.dir == Dir::bwd) {
        const RefBackward b = ref_backward(p, in, opt);
        return check_outputs(p, got, nullptr, &b, be->conventions());
    }
    const RefForward f = ref_forward(p, in, opt);
    return check_outputs(p, got, &f, nullptr, be->conventions());
}

/// Sets kBoundFractionVariable for the life of the object.
struct BoundFraction {
    explicit BoundFraction(const char* f) { ::setenv(kBoundFractionVariable, f, 1); }
    ~BoundFraction() { ::unsetenv(kBoundFractionVariable); }
};

}  // namespace

TEST(FaultyBackend, BoundFractionPutsEveryMarginAtItsFraction) {
    const BoundFraction f("0.6");
    for (const Dir dir : {Dir::fwd_t, Dir::bwd})
        for (const Mask mask : {Mask::none, Mask::causal_br}) {
            Problem p = prb(dir, mask, {2, 4, 2, 24, 32, 16, 16});
            p.fill = Fill::normal;
            for (const auto& c : checked("faulty:bound_fraction", p)) {
                EXPECT_TRUE(c.pass) << fmt::format("{}", c.output) << ": " << c.reason;
                if (c.output == Output::stats) EXPECT_LT(c.worst_ratio, 0.05) << "stats are left exact";
                else EXPECT_NEAR(c.worst_ratio, 0.6, 0.05) << fmt::format("{}", c.output);  // f32: up to the rounding of the shifted value
                EXPECT_LT(c.norm_worst, 1) << fmt::format("{}", c.output);
            }
        }
    // bf16: the shifted value is stored in bf16, whose rounding (up to u |x| <= u M) is up to 1/c = 1/4
    // of a bf16 bound c u M.
    Problem p = prb(Dir::bwd, Mask::causal_tl, {1, 2, 2, 16, 16, 16, 16});
    p.dt = DType::bf16;
    p.fill = Fill::normal;
    for (const auto& c : checked("faulty:bound_fraction", p)) {
        EXPECT_TRUE(c.pass) << fmt::format("{}", c.output) << ": " << c.reason;
        EXPECT_NEAR(c.worst_ratio, 0.6, 0.25) << fmt::format("{}", c.output);
    }
}

TEST(FaultyBackend, BoundFractionAboveOneFailsAndAMalformedOneIsNamed) {
    {
        const BoundFraction f("1.5");
        const auto checks = checked("faulty:bound_fraction", prb(Dir::fwd_t, Mask::none, {1, 2, 2, 16, 16, 16, 16}));
        ASSERT_FALSE(checks.empty());
        EXPECT_FALSE(checks[0].pass);
        EXPECT_EQ(checks[0].failure, CheckFailure::bound);
        EXPECT_NEAR(checks[0].worst_ratio, 1.5, 0.05);
    }
    const BoundFraction f("-0.1");
    const auto be = make_backend("faulty:bound_fraction");
    const auto why = be->support(prb(Dir::fwd_t, Mask::none, {1, 1, 1, 8, 8, 8, 8}));
    ASSERT_TRUE(why);
    EXPECT_EQ(why->status, Status::invalid_arguments);
    EXPECT_NE(why->reason.find("SDPABENCH_FAULTY_BOUND_FRACTION='-0.1'"), std::string::npos) << why->reason;
}

TEST(FaultyBackend, RepeatComputesTheSameOutputsNTimesAndAMalformedCountIsNamed) {
    const Problem p = prb(Dir::bwd, Mask::causal_tl, {1, 2, 2, 16, 16, 16, 16});
    const SdpaOutputs once = run("faulty:dq_no_scale", p);
    ::setenv(kRepeatVariable, "3", 1);
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    auto plan = make_backend("faulty:dq_no_scale")->prepare(p, in);
    plan->execute();
    const SdpaOutputs thrice = plan->read_outputs();
    EXPECT_EQ(differing(once.dQ, thrice.dQ) + differing(once.dK, thrice.dK) + differing(once.dV, thrice.dV), 0);
    const auto notes = plan->notes();
    EXPECT_NE(std::find(notes.begin(), notes.end(), "every run computes its outputs 3 times (SDPABENCH_FAULTY_REPEAT)"),
            notes.end());
    ::setenv(kRepeatVariable, "0", 1);
    const auto why = make_backend("faulty:dq_no_scale")->support(p);
    ::unsetenv(kRepeatVariable);
    ASSERT_TRUE(why);
    EXPECT_EQ(why->status, Status::invalid_arguments);
    EXPECT_NE(why->reason.find("SDPABENCH_FAULTY_REPEAT='0' is not a whole number in [1, 1000]"), std::string::npos)
            << why->reason;
}

// SDPABENCH_FAULTY_REPEAT's extra computations are work only: with an even N a nondeterministic
// kind's two runs in a row still differ (its phase steps once per run, not N times).
TEST(FaultyBackend, RepeatKeepsANondeterministicKindNondeterministic) {
    Problem p = prb(Dir::bwd, Mask::none, {1, 2, 2, 16, 16, 16, 16});
    p.fill = Fill::normal;
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    ::setenv(kRepeatVariable, "2", 1);
    auto be = make_backend("faulty:dq_nondeterministic");
    ::unsetenv(kRepeatVariable);
    auto plan = be->prepare(p, in);
    plan->execute();
    const SdpaOutputs first = plan->read_outputs();
    plan->execute();
    const SdpaOutputs second = plan->read_outputs();
    EXPECT_GT(differing(first.dQ, second.dQ), 0);
    EXPECT_EQ(differing(first.dK, second.dK) + differing(first.dV, second.dV), 0);
}
