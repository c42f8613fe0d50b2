// The memory guard's estimate (core/memory_estimate.hpp) by hand for small shapes, the
// default limit, byte formatting, and the guard in run_case (SKIPPED with estimate and limit).
#include "core/memory_estimate.hpp"

#include <thread>

#include <gtest/gtest.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "driver/cli.hpp"
#include "driver/run_case.hpp"

namespace sdpa {
namespace {

double part(const MemoryEstimate& e, std::string_view prefix) {
    for (const auto& it : e.items)
        if (it.what.starts_with(prefix)) return it.bytes;
    return -1;
}

TEST(MemoryEstimate, ByHandFwdOnednnCausal) {
    Problem p;
    p.dims = Dims{2, 4, 2, 8, 16, 8, 4};  // B H_q H_kv S_q S_kv D_qk D_v
    p.dt = DType::bf16;
    p.mask = Mask::causal_tl;
    p.dir = Dir::fwd_t;
    const auto be = make_backend("onednn");
    const MemoryEstimate e = estimate_host_memory(p, 2, be->host_memory(p, 2));
    const double nQ = 2 * 4 * 8 * 8, nK = 2 * 2 * 16 * 8, nV = 2 * 2 * 16 * 4, nO = 2 * 4 * 8 * 4, nS = 2 * 4 * 8;
    const double k_panels = 2 * 2 * 64 * 8;  // S_kv = 16 padded to one 64-key panel
    const double scratch = 2 * (64.0 * 64 * 48 + 64.0 * (8 + 4) * 48);
    EXPECT_EQ(part(e, "inputs"), 4 * (nQ + nK + nV));
    EXPECT_EQ(part(e, "reference forward"), 4 * (2 * nO + 2 * nS) + 8 * k_panels + scratch);  // K and |K| panels
    EXPECT_EQ(part(e, "reference backward"), -1);  // fwd only
    EXPECT_EQ(part(e, "decoded"), 4 * (nO + nS));
    EXPECT_EQ(part(e, "oneDNN strided input"), 2 * (nQ + nK + nV) + 2 * nO + 4 * nS);
    EXPECT_EQ(part(e, "oneDNN explicit mask"), 8 * 16 * (4 + 2));
    EXPECT_EQ(part(e, "oneDNN intermediates"), 2 * 4 * (2 * 4 * 8 * 16));
    double sum = 0;
    for (const auto& it : e.items) sum += it.bytes;
    EXPECT_EQ(e.total, sum);
}

TEST(MemoryEstimate, TheTiledReferenceDoesNotGrowWithScores) {
    Problem p;
    p.dims = Dims{1, 1, 1, 32768, 32768, 128, 128};
    p.dir = Dir::bwd;
    p.mask = Mask::causal_tl;
    const MemoryEstimate ref_only = estimate_host_memory(p, 2, make_backend("ref")->host_memory(p, 2));
    // Measured peak RSS of this reference backward: 333 MB (docs/reference.md: about 330 MB); the estimate stays linear in S.
    EXPECT_LT(ref_only.total, 1.0 * (1ull << 30));
    EXPECT_GT(part(ref_only, "reference backward"), 8.0 * 3 * 32768 * 128);
    EXPECT_GT(part(ref_only, "reference backend: its strided input"), 0);
    EXPECT_EQ(part(ref_only, "oneDNN"), -1);  // not the oneDNN backend
    // oneDNN's non-fused intermediates do grow with S_q x S_kv (the tester's b1hq1sq30000d8 case).
    Problem big = p;
    big.dims = Dims{1, 1, 1, 30000, 30000, 8, 8};
    big.dir = Dir::fwd_t;
    EXPECT_GT(estimate_host_memory(big, 16, make_backend("onednn")->host_memory(big, 16)).total, 6.0 * (1ull << 30));
    // A test-only backend adds nothing of its own.
    EXPECT_TRUE(make_backend("test:segv")->host_memory(p, 1).empty());
}

TEST(MemoryEstimate, LimitsAndFormat) {
    const std::uint64_t avail = available_memory_bytes();
    EXPECT_GT(avail, 0u);  // Linux: /proc/meminfo has MemAvailable
    EXPECT_GT(default_memory_limit(), 0u);
    // The rule itself, on fixed figures (MemAvailable moves while other tests run).
    EXPECT_EQ(memory_limit_from(10000, 0, 0), 8000u);
    EXPECT_EQ(memory_limit_from(10000, 5000, 0), 4000u);
    EXPECT_EQ(memory_limit_from(10000, 0, 2500), 2000u);
    EXPECT_EQ(memory_limit_from(0, 5000, 7000), 4000u);
    EXPECT_EQ(memory_limit_from(0, 0, 0), 0u);
    EXPECT_EQ(format_bytes(100), "100 B");
    EXPECT_EQ(format_bytes(1536), "1.5 KiB");
    EXPECT_EQ(format_bytes(8.0 * (1ull << 30)), "8 GiB");
}

TEST(MemoryGuard, SkipsWithEstimateAndLimit) {
    Case c;
    c.backend = "ref";
    c.prb.dims = Dims{1, 1, 1, 64, 64, 16, 16};
    const auto be = make_backend("ref");
    const CaseResult ok = run_case(c, *be, 0, TimingOptions{}, RunLimits{1ull << 30, {}});
    EXPECT_EQ(ok.status, Status::passed) << ok.reason;
    const CaseResult skip = run_case(c, *be, 3, TimingOptions{}, RunLimits{1000, {}});
    EXPECT_EQ(skip.status, Status::skipped);
    EXPECT_EQ(skip.index, 3u);
    const std::string est = format_bytes(estimate_host_memory(c.prb, std::thread::hardware_concurrency(), be->host_memory(c.prb, std::thread::hardware_concurrency())).total);
    EXPECT_NE(skip.reason.find("needs about " + est), std::string::npos) << skip.reason;
    EXPECT_NE(skip.reason.find("more than --max-memory=1000 B"), std::string::npos) << skip.reason;
}

}  // namespace
}  // namespace sdpa

namespace sdpa {
namespace {

/// parse_command_line on a fixed argv.
CliOutcome parse_args(std::vector<std::string> args) {
    args.insert(args.begin(), "sdpabench");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST(MaxMemoryOption, UnitsDefaultAndErrors) {
    EXPECT_EQ(parse_args({"--max-memory=8G", "b1sq4d4"}).opts.max_memory, 8ull << 30);
    EXPECT_EQ(parse_args({"--max-memory", "512M", "b1sq4d4"}).opts.max_memory, 512ull << 20);
    EXPECT_EQ(parse_args({"--max-memory=0", "b1sq4d4"}).opts.max_memory, 0u);
    const CliOutcome def = parse_args({"b1sq4d4"});
    EXPECT_EQ(def.exit_code, -1);
    // The default is default_memory_limit() at parse time; MemAvailable moves between the two
    // reads while other tests run, so compare within a quarter.
    const double now = static_cast<double>(default_memory_limit());
    EXPECT_GT(def.opts.max_memory, 0u);
    EXPECT_NEAR(static_cast<double>(def.opts.max_memory), now, 0.25 * now);
    EXPECT_EQ(def.opts.case_tokens, std::vector<std::string>{"b1sq4d4"});
    EXPECT_EQ(parse_args({"--max-memory=lots", "b1sq4d4"}).exit_code, 2);
    EXPECT_EQ(parse_args({"--timeout-per-case=-1", "b1sq4d4"}).exit_code, 2);
    const CliOutcome t = parse_args({"--timeout-per-case=2.5", "--isolate", "b1sq4d4"});
    EXPECT_EQ(t.opts.timeout_per_case, 2.5);
    EXPECT_TRUE(t.opts.isolate);
}

}  // namespace
}  // namespace sdpa
