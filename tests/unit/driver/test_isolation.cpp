// Running a case in a child process (driver/isolation.hpp): the result comes back intact
// (NaN included), a crash is FAILED with the signal's name, a hang is killed at the deadline.
#include "driver/isolation.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>

#include <omp.h>
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "driver/run_case.hpp"
#include "reports/jsonl_reporter.hpp"

namespace sdpa {
namespace {

Case small_case(const char* backend) {
    Case c;
    c.backend = backend;
    c.prb.dims = Dims{1, 2, 2, 8, 8, 4, 4};
    return c;
}

TEST(Isolation, ResultRoundTripsThroughCborWithNaN) {
    CaseResult r;
    r.index = 7;
    r.status = Status::failed;
    r.reason = "dQ: \"quoted\"\n";
    r.ms = 1.25;
    r.repro = "--dir=bwd b1sq2d2";
    OutputCheck chk;
    chk.output = Output::dK;
    chk.pass = false;
    chk.got = NAN;
    chk.expected = -INFINITY;
    chk.worst_index = {1, 2, 3, 4};
    r.checks = {chk};
    r.notes = {"note"};
    const CaseResult back = nlohmann::json::from_cbor(nlohmann::json::to_cbor(nlohmann::json(r))).get<CaseResult>();
    EXPECT_EQ(back.index, 7u);
    EXPECT_EQ(back.status, Status::failed);
    EXPECT_EQ(back.reason, r.reason);
    EXPECT_EQ(back.ms, 1.25);
    EXPECT_EQ(back.repro, r.repro);
    ASSERT_EQ(back.checks.size(), 1u);
    EXPECT_EQ(back.checks[0].output, Output::dK);
    EXPECT_TRUE(std::isnan(back.checks[0].got));
    EXPECT_EQ(back.checks[0].expected, -INFINITY);
    EXPECT_EQ(back.checks[0].worst_index, (std::array<std::int64_t, 4>{1, 2, 3, 4}));
    EXPECT_EQ(back.notes, r.notes);
}

TEST(Isolation, ChildFailureReasons) {
    // Wait statuses as the kernel encodes them: signal in the low 7 bits, exit code in bits 8-15.
    EXPECT_EQ(child_failure_reason(SIGSEGV), "crashed: Segmentation fault (SIGSEGV, signal 11)");
    EXPECT_EQ(child_failure_reason(SIGKILL), "crashed: Killed (SIGKILL, signal 9)");
    EXPECT_EQ(child_failure_reason(3 << 8), "the case's child process exited with status 3 without a result");
}

TEST(Isolation, PassingCaseComesBack) {
    const CaseResult r = run_case_isolated(small_case("ref"), 5, TimingOptions{}, RunLimits{}, 0);
    EXPECT_EQ(r.status, Status::passed) << r.reason;
    EXPECT_EQ(r.index, 5u);
    EXPECT_EQ(r.repro, "--backend=ref b1hq2sq8d4");
    EXPECT_EQ(r.checks.size(), 2u);  // fwd_t: O and stats
}

TEST(Isolation, IsolatedResultEqualsInProcessFieldByField) {
    // A dropout backward: output checks with every whole-output figure, a dropout report, notes.
    Case c = small_case("ref");
    c.prb.dir = Dir::bwd;
    c.prb.mask = Mask::causal_tl;
    c.prb.dropout = Dropout{0.25f, 7, 3};
    c.prb.dt = DType::bf16;  // outputs rounded to bf16: the whole-output figures are not 0
    nlohmann::json iso = json_record(run_case_isolated(c, 2, TimingOptions{}, RunLimits{}, 0));
    // In this process on one thread: a fork after OpenMP has started its pool may hang the
    // children of the later tests (the reference is bitwise the same for any thread count).
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto be = make_backend("ref");
    nlohmann::json in = json_record(run_case(c, *be, 2));
    omp_set_num_threads(threads);
    ASSERT_EQ(in["status"], "PASSED") << in.dump();
    ASSERT_FALSE(in["dropout_checks"].is_null());
    for (const char* wall : {"case_ms", "phases_ms"}) {  // wall times, the only fields allowed to differ
        EXPECT_EQ(iso[wall].is_null(), in[wall].is_null()) << wall;
        in.erase(wall);
        iso.erase(wall);
    }
    for (auto it = in.begin(); it != in.end(); ++it) EXPECT_EQ(iso[it.key()], it.value()) << "field " << it.key();
    EXPECT_EQ(iso.size(), in.size());
    ASSERT_TRUE(in["outputs"][0]["norm_worst"].is_number()) << in["outputs"][0].dump();
    EXPECT_NE(in["outputs"][0]["norm_worst"], 0.0);  // figures --isolate used to drop
    EXPECT_NE(in["outputs"][0]["norm_ratio"], 1.0);
}

TEST(Isolation, SegfaultIsFailedWithSignalName) {
    const CaseResult r = run_case_isolated(small_case("test:segv"), 0, TimingOptions{}, RunLimits{}, 0);
    EXPECT_EQ(r.status, Status::failed);
    // Under ASan the child reports the SEGV itself and exits 1 unless ASAN_OPTIONS has
    // handle_segv=0 (tests/CMakeLists.txt sets it for the sanitizer run).
    EXPECT_NE(r.reason.find("SIGSEGV"), std::string::npos) << r.reason;
    EXPECT_EQ(r.repro, "--backend=test:segv b1hq2sq8d4");
}

TEST(Isolation, HangIsKilledAtTheDeadline) {
    const auto t0 = std::chrono::steady_clock::now();
    const CaseResult r = run_case_isolated(small_case("test:sleep"), 1, TimingOptions{}, RunLimits{}, 0.5);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_NE(r.reason.find("timeout"), std::string::npos) << r.reason;
    EXPECT_GE(s, 0.5);
    EXPECT_LT(s, 10.0);
    EXPECT_GE(r.ms, 500.0);
}

}  // namespace
}  // namespace sdpa
