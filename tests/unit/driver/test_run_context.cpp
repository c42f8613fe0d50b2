#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "backends/test/test_backends.hpp"
#include "driver/run_context.hpp"
#include "reports/jsonl_reporter.hpp"

namespace sdpa {
namespace {

GlobalOptions options() {
    GlobalOptions o;
    o.argv = {"sdpabench", "--report=postgresql:postgresql://u:s3cret@db/results", "b1hq2sq64d64"};
    o.tags = {{"note", "PGPASSWORD=s3cret"}};
    return o;
}

TEST(RunContext, NoDeviceQueryBeforeTheRunForksItsChildren) {
    // --isolate and --timeout-per-case fork a child per case: a device query (a CUDA call) in the
    // parent before that would leave every child a CUDA runtime that does not work.
    for (const bool timeout : {false, true}) {
        GlobalOptions o = options();
        o.isolate = !timeout;
        if (timeout) o.timeout_per_case = 30;
        const int before = test_device_queries();
        const RunContext ctx = run_context(o, {"ref", "test:device"});
        EXPECT_EQ(test_device_queries(), before) << (timeout ? "--timeout-per-case" : "--isolate");
        EXPECT_EQ(ctx.gpu, "");
    }
    // In-process, the device is named once.
    const int before = test_device_queries();
    const RunContext ctx = run_context(options(), {"ref", "test:device"});
    EXPECT_EQ(test_device_queries(), before + 1);
    EXPECT_EQ(ctx.gpu, "test:device (simulated, 64 MiB free)");
}

TEST(RunContext, CommandAndTagsHaveNoPassword) {
    const RunContext ctx = run_context(options(), {});
    EXPECT_EQ(ctx.command, "sdpabench --report=postgresql:postgresql://u:****@db/results b1hq2sq64d64");
    ASSERT_EQ(ctx.tags.size(), 1u);
    EXPECT_EQ(ctx.tags[0].second, "PGPASSWORD=****");
}

TEST(RunContext, NamesTheBuildTypeTheGovernorAndTheNoiseAtTheStart) {
    const RunContext ctx = run_context(options(), {});
    EXPECT_EQ(ctx.build_type, SDPABENCH_TEST_BUILD_TYPE);  // CMake's, for this build
    std::string governor;
    std::ifstream("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") >> governor;
    EXPECT_EQ(ctx.cpu_governor, governor);  // "" where the file is absent (a VM)
    ASSERT_TRUE(ctx.noise_start.has_value());
    EXPECT_EQ(ctx.noise_start->calib_reps, kNoiseCalibReps);
    EXPECT_GT(ctx.noise_start->calib_ms, 0);
    // In the report's context record, as the docs spell it.
    const nlohmann::json c = context_record(ctx).at("context");
    EXPECT_EQ(c.at("build_type"), ctx.build_type);
    EXPECT_EQ(c.at("cpu_governor"), ctx.cpu_governor);
    const nlohmann::json& start = c.at("noise").at("start");
    EXPECT_EQ(start.at("calib_reps"), kNoiseCalibReps);
    EXPECT_TRUE(start.at("calib_ms").is_number() && start.at("calib_ms").get<double>() > 0) << start;
    EXPECT_TRUE(start.at("calib_cv").is_number() && std::isfinite(start.at("calib_cv").get<double>())) << start;
    EXPECT_TRUE(start.at("loadavg").is_number() && start.at("loadavg").get<double>() >= 0) << start;
    EXPECT_TRUE(start.at("steal").is_number()) << start;
}

TEST(RunContext, ARunThatTimesNothingTakesNoNoiseSample) {
    const RunContext ctx = run_context(options(), {}, /*timed=*/false);
    EXPECT_FALSE(ctx.noise_start.has_value());
    EXPECT_TRUE(context_record(ctx).at("context").at("noise").is_null());
}

}  // namespace
}  // namespace sdpa
