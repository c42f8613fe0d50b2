// What ran, in the driver (driver/run_case.cpp): every case that reached its vendor carries the
// plan's implementation and bound tensors (tagged for fwd_bwd's two plans), and --impl /
// --skip-impl SKIP a case with the name it got. The reference backend stands in for a vendor.
#include "driver/run_case.hpp"

#include <gtest/gtest.h>

#include "backends/registry.hpp"
#include "driver/case_parser.hpp"

namespace sdpa {
namespace {

Case one_case(const std::vector<std::string>& tokens) {
    const auto es = parse_cases(tokens);
    EXPECT_EQ(es.size(), 1u);
    return es.at(0).c.value();
}

CaseResult run(const std::vector<std::string>& tokens, ImplSelection sel = {}) {
    const Case c = one_case(tokens);
    const auto be = make_backend(c.backend);
    return run_case(c, *be, 0, TimingOptions{}, RunLimits{0, std::move(sel)});
}

TEST(RunCaseImpl, ResultCarriesTheImplementationAndTheTensorsAsBound) {
    const CaseResult r = run({"--backend=ref", "--dir=bwd", "--layout=bshd", "b1hq2hkv1sq8skv16d4"});
    EXPECT_EQ(r.status, Status::passed) << r.reason;
    EXPECT_EQ(r.impl.name, "sdpabench ref_backward");
    EXPECT_TRUE(r.impl.parts.empty());
    // Every input and output role with its strides: K is [B,H_kv,S_kv,D] in bshd memory.
    std::vector<std::string> names;
    for (const auto& t : r.tensors) names.push_back(t.name);
    EXPECT_EQ(names, (std::vector<std::string>{"Q", "K", "V", "O", "dO", "stats", "dQ", "dK", "dV"}));
    EXPECT_EQ(r.tensors[1], (BoundTensor{"K", "f32", {1, 1, 16, 4}, {64, 4, 4, 1}}));
    EXPECT_EQ(r.tensors[5], (BoundTensor{"stats", "f32", {1, 2, 8, 1}, {16, 8, 1, 1}}));
}

TEST(RunCaseImpl, FwdBwdTagsEachPlan) {
    const CaseResult r = run({"--backend=faulty:stats_log2", "--dir=fwd_bwd", "b1hq1sq4d4"});
    EXPECT_EQ(r.impl.name, "fwd: sdpabench reference with the fault stats_log2");
    const CaseResult ok = run({"--backend=ref", "--dir=fwd_bwd", "b1hq1sq4d4"});
    EXPECT_EQ(ok.status, Status::passed) << ok.reason;
    EXPECT_EQ(ok.impl.name, "fwd: sdpabench ref_forward; bwd: sdpabench ref_backward");
    ASSERT_FALSE(ok.tensors.empty());
    EXPECT_EQ(ok.tensors.front().name, "fwd: Q");
    EXPECT_EQ(ok.tensors.back().name, "bwd: dV");
}

TEST(RunCaseImpl, SkipImplAndImplSkipWithTheName) {
    CaseResult r = run({"--backend=ref", "b1hq1sq4d4"}, {{}, {"ref_forward"}});
    EXPECT_EQ(r.status, Status::skipped);
    EXPECT_EQ(r.reason, "implementation 'sdpabench ref_forward' matches --skip-impl=ref_forward");
    EXPECT_EQ(r.impl.name, "sdpabench ref_forward");  // the name it got is reported
    r = run({"--backend=ref", "b1hq1sq4d4"}, {{"*backward"}, {}});
    EXPECT_EQ(r.status, Status::skipped);
    EXPECT_EQ(r.reason, "implementation 'sdpabench ref_forward' matches no --impl pattern (*backward)");
    r = run({"--backend=ref", "--dir=bwd", "b1hq1sq4d4"}, {{"*backward"}, {"ref_forward"}});
    EXPECT_EQ(r.status, Status::passed) << r.reason;
    r = run({"--backend=ref", "--mode=P", "--dir=bwd", "b1hq1sq4d4"}, {{"forward"}, {}});  // P: before timing
    EXPECT_EQ(r.status, Status::skipped);
    EXPECT_FALSE(r.perf.has_value());
}

}  // namespace
}  // namespace sdpa
