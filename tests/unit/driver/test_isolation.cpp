// Running a case in a child process (driver/isolation.hpp): the result comes back intact
// (NaN included), a crash is FAILED with the signal's name, a hang is killed at the deadline.
#include "driver/isolation.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <set>
#include <string>

#include <omp.h>
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "driver/run_case.hpp"
#include "reports/jsonl_reporter.hpp"
#include "reports/result_fields.hpp"

#include "../test_helpers.hpp"

namespace sdpa {
namespace {

Case small_case(const char* backend) { return test::make_case(test::make_problem({1, 2, 2, 8, 8, 4, 4}), backend); }

TEST(Isolation, ResultRoundTripsThroughItsRecordWithNaN) {
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
    const CaseResult back = result_from_record(nlohmann::json::from_cbor(nlohmann::json::to_cbor(json_record(r))));
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

/// The JSONL records of `c` run in a child and in this process, with the wall times (the only
/// fields allowed to differ) removed.
std::pair<nlohmann::json, nlohmann::json> isolated_and_in_process(const Case& c) {
    nlohmann::json iso = json_record(run_case_isolated(c, 2, TimingOptions{}, RunLimits{}, 0));
    // In this process on one thread: a fork after OpenMP has started its pool may hang the
    // children of the later tests (the reference is bitwise the same for any thread count).
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto be = make_backend(c.backend);
    nlohmann::json in = json_record(run_case(c, *be, 2));
    omp_set_num_threads(threads);
    for (const char* wall : {"case_ms", "phases_ms", "vendor_cpu_util"}) {  // measured: differ run to run
        EXPECT_EQ(iso[wall].is_null(), in[wall].is_null()) << wall;
        in.erase(wall);
        iso.erase(wall);
    }
    return {iso, in};
}

TEST(Isolation, IsolatedResultEqualsInProcessFieldByField) {
    // Every output a direction can have, each with its whole-output figures: a dropout backward
    // with dMask (dQ, dK, dV, dMask, a dropout report, notes), a forward (O, stats), and an fp8
    // backward on the fp8 test backend (amax).
    Case bwd = small_case("ref");
    bwd.prb.dir = Dir::bwd;
    bwd.prb.mask = Mask::bias;
    bwd.prb.bias_shape = BiasShape::b;  // [B,1,S_q,S_kv]: dMask sums over the heads
    bwd.prb.dmask = true;
    bwd.prb.dropout = Dropout{0.25f, 7, 3};
    bwd.prb.dt = DType::bf16;  // outputs rounded to bf16: the whole-output figures are not 0
    Case fwd = small_case("ref");
    fwd.prb.mask = Mask::causal_br;
    fwd.prb.dims.S_kv = 5;  // S_q > S_kv: fully masked rows (structural zeros, masked-row stats)
    Case fp8 = small_case("test:fp8");
    fp8.prb.dir = Dir::bwd;
    fp8.prb.dt = DType::e4m3;
    std::set<std::string> outputs;
    for (const Case& c : {bwd, fwd, fp8}) {
        SCOPED_TRACE(repro(c));
        const auto [iso, in] = isolated_and_in_process(c);
        ASSERT_NE(in["status"], "FAILED") << in.dump();
        for (auto it = in.begin(); it != in.end(); ++it) EXPECT_EQ(iso[it.key()], it.value()) << "field " << it.key();
        EXPECT_EQ(iso.size(), in.size());
        for (const auto& o : in["outputs"]) {
            outputs.insert(o["output"].get<std::string>());
            EXPECT_EQ(o.size(), check_fields().size()) << o.dump();  // every field of the table, written
        }
        if (c.prb.dropout) {
            ASSERT_FALSE(in["dropout_checks"].is_null());
            EXPECT_TRUE(in["dropout_checks"]["keep_p_value"].is_number());
        }
        if (c.prb.dt == DType::bf16) {
            ASSERT_TRUE(in["outputs"][0]["norm_worst"].is_number()) << in["outputs"][0].dump();
            EXPECT_NE(in["outputs"][0]["norm_worst"], 0.0);  // figures --isolate used to drop
            EXPECT_NE(in["outputs"][0]["norm_ratio"], 1.0);
        }
    }
    std::set<std::string> all;
    for (const auto& row : kOutputNames) all.insert(std::string(row.name));
    EXPECT_EQ(outputs, all);
}

/// An output check with every stored field away from its default.
OutputCheck check_off_defaults() {
    OutputCheck c;
    c.output = Output::dMask;
    c.pass = false;
    c.failure = CheckFailure::norm;
    c.mistrusted = true;
    c.reason = "r";
    c.located = false;
    c.worst_ratio = INFINITY;
    c.worst_index = {1, 2, 3, 4};
    c.got = NAN;
    c.expected = -1.5f;
    c.err = 2;
    c.bound = 3;
    c.nonfinite = 4;
    c.ref_nonfinite = 5;
    c.zero_fraction = 0.25;
    c.norm_worst = 1.5;
    c.norm_ratio = 0.5;
    c.norm_head = {1, 1};
    c.stats_sum_worst = 0.125;
    c.got_zero_fraction = 0.5;
    c.structural_zeros = 6;
    c.saturated = 7;
    c.unchecked = 8;
    c.zero_by_construction = 9;
    c.mistrust = "m";
    return c;
}

TEST(Isolation, RecordRoundTripsEveryStoredField) {
    // A result with every stored field away from its default survives json_record ->
    // result_from_record -> json_record unchanged: a field the table cannot set back fails here.
    CaseResult r;
    r.index = 3;
    r.id = "id #2";
    r.timed_out = true;
    r.crashed = true;
    r.status = Status::mistrusted;
    r.reason = "why";
    r.ms = 12.5;
    r.repro = "--dir=bwd b1sq2d2";
    r.notes = {"a", "b"};
    r.info = CaseInfo{.backend = "ref", .engine = "cpu", .mode = "B", .dir = "bwd", .dt = "bf16",
        .mask = "bias", .prb = "b1sq2d2", .name = "n", .dropout = "0.5:1:2"};
    r.checked = true;
    r.flops = 1234;
    r.bytes = 5678;
    r.phases_ms = {1, 2, 3, 4, 5, 6};
    r.alone_status = "PASSED";
    r.expect = ExpectOutcome{Expected::xfail, "known", false};
    PerfResult p;
    p.time = TimingStats{3, 1.0, 2.0, 2.5, 4.0};
    p.compile_ms = 7;
    p.cold_cache = true;
    p.gflops_at_min = 10;
    p.gflops_at_median = 8;
    p.gflops_at_max = 5;
    p.gbytes_per_s_at_median = 3;
    p.samples_ms = {1.0, 2.0, 4.0};
    p.peak_tflops = 100;
    r.perf = p;
    DropoutReport d;
    d.mask = "mask";
    d.failures = {"f1"};
    d.stats.heads = 4;
    d.stats.keep = WorstHead{0.25, 0.5, 1, 2};
    d.stats.pairs = WorstHead{0.125, 0.75, 3, 1};
    d.stats.identical_heads = 1;
    d.stats.distinct_checked = true;
    d.stats.threshold = 1e-7;
    r.dropout = d;
    r.minimized = MinimizeReport{"--dir=bwd b1sq1d1", "dQ:bound", 9, 4, true};
    r.checks = {check_off_defaults()};
    const nlohmann::json j = json_record(r);
    const CaseResult back = result_from_record(nlohmann::json::from_cbor(nlohmann::json::to_cbor(j)));
    EXPECT_EQ(json_record(back), j);
    EXPECT_EQ(back.checks.at(0).zero_by_construction, 9);
    EXPECT_FALSE(back.checks.at(0).located);
    EXPECT_TRUE(std::isnan(back.checks.at(0).got));
    EXPECT_EQ(back.checks.at(0).worst_ratio, INFINITY);
    EXPECT_EQ(back.dropout->stats.pairs.b, 3);
    EXPECT_EQ(back.perf->samples_ms, p.samples_ms);
    EXPECT_EQ(back.expect.kind, Expected::xfail);
    EXPECT_EQ(back.info.dropout, "0.5:1:2");
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
