// The phase times of a case (driver/run_case.cpp, reports/case_result.hpp Phase): each part of the
// pipeline lands in its phase, and together they are the case's time.
#include "driver/run_case.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "backends/ref/ref_backend.hpp"

#include "../test_helpers.hpp"

namespace sdpa {
namespace {

double phase(const CaseResult& r, Phase ph) { return r.phases_ms[static_cast<std::size_t>(ph)]; }

Case bwd_case() {
    return test::make_case(test::make_problem({1, 4, 2, 96, 80, 32, 32}, Dir::bwd, DType::bf16, Mask::causal_br), "ref");
}

TEST(RunCasePhases, EveryStepHasItsPhaseAndTheySumToTheCase) {
    RefBackend ref;
    const CaseResult r = run_case(bwd_case(), ref, 0);
    ASSERT_EQ(r.status, Status::passed) << r.reason;
    for (const Phase ph : {Phase::fill, Phase::displace, Phase::prepare, Phase::vendor, Phase::read, Phase::reference,
             Phase::compare})
        EXPECT_GT(phase(r, ph), 0.0) << format_as(ph);
    EXPECT_EQ(phase(r, Phase::dropout), 0.0);  // no dropout
    EXPECT_EQ(phase(r, Phase::rerun), 0.0);    // --mode=C
    EXPECT_GE(phase(r, Phase::other), 0.0);
    const double sum = std::accumulate(r.phases_ms.begin(), r.phases_ms.end(), 0.0);
    EXPECT_NEAR(sum, r.ms, 1e-9 * r.ms);  // other is what the others leave, never negative
    EXPECT_LT(phase(r, Phase::other), r.ms);

    Case b = bwd_case();
    b.mode = Mode::B;  // the bitwise rerun has its own phase
    const CaseResult rb = run_case(b, ref, 0);
    ASSERT_EQ(rb.status, Status::passed) << rb.reason;
    EXPECT_GT(phase(rb, Phase::rerun), 0.0);

    Case d = bwd_case();
    d.prb.dropout = Dropout{0.25f, 3, 1};  // the mask statistics and the reruns have theirs
    const CaseResult rd = run_case(d, ref, 0);
    ASSERT_EQ(rd.status, Status::passed) << rd.reason;
    EXPECT_GT(phase(rd, Phase::dropout), 0.0);

    Case l = bwd_case();
    l.mode = Mode::L;  // a listed case ran nothing: no time at all
    const CaseResult rl = run_case(l, ref, 0);
    EXPECT_EQ(rl.ms, 0.0);
    EXPECT_EQ(std::accumulate(rl.phases_ms.begin(), rl.phases_ms.end(), 0.0), 0.0);
}

}  // namespace
}  // namespace sdpa
