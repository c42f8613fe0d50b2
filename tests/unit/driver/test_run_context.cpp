#include <gtest/gtest.h>

#include "backends/test/test_backends.hpp"
#include "driver/run_context.hpp"

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

}  // namespace
}  // namespace sdpa
