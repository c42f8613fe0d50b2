// Timing loop (driver/timing.hpp) with a fake plan, and the statistics (core/timing_stats.hpp).
#include "driver/timing.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/ref/ref_backend.hpp"
#include "driver/run_case.hpp"

namespace sdpa {
namespace {

/// A plan that only counts: execute() does nothing, execute_timed_ms() returns `ms`.
class CountingPlan final : public Plan {
public:
    explicit CountingPlan(double ms) : ms_(ms) {}
    void execute() override { ++untimed; }
    double execute_timed_ms() override {
        ++timed;
        return ms_;
    }
    void flush_caches() override { ++flushed; }
    void poison_outputs() override {}
    SdpaOutputs read_outputs() override { return {}; }
    int untimed = 0, timed = 0, flushed = 0;

private:
    double ms_;
};

TEST(TimingStats, MinMedianMeanMax) {
    const TimingStats t = summarize({3, 1, 2, 10});
    EXPECT_EQ(t.runs, 4);
    EXPECT_DOUBLE_EQ(t.min_ms, 1);
    EXPECT_DOUBLE_EQ(t.median_ms, 2.5);
    EXPECT_DOUBLE_EQ(t.mean_ms, 4);
    EXPECT_DOUBLE_EQ(t.max_ms, 10);
    EXPECT_DOUBLE_EQ(summarize({5, 1, 4}).median_ms, 4);
    EXPECT_EQ(summarize({}).runs, 0);
}

TEST(TimingStats, CoefficientOfVariationIsSampleStddevOverMean) {
    // {1, 2, 3}: mean 2, sample variance ((1 + 0 + 1) / 2) = 1, so cv = 1 / 2.
    EXPECT_DOUBLE_EQ(summarize({3, 1, 2}).cv, 0.5);
    // {3, 1, 2, 10}: mean 4, sample variance (1 + 9 + 4 + 36) / 3 = 50 / 3.
    EXPECT_NEAR(summarize({3, 1, 2, 10}).cv, std::sqrt(50.0 / 3.0) / 4.0, 1e-15);
    EXPECT_EQ(summarize({2, 2, 2}).cv, 0.0);
    EXPECT_TRUE(std::isnan(summarize({5}).cv));  // no spread from one run
}

/// The reference backend whose timed runs alternate between 1 ms and `high` ms.
class AlternatingBackend final : public Backend {
public:
    explicit AlternatingBackend(double high) : high_(high) {}
    std::string_view name() const override { return "ref"; }
    std::string version() const override { return "alternating timings"; }
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        class P final : public Plan {
        public:
            P(std::unique_ptr<Plan> inner, double high) : inner_(std::move(inner)), high_(high) {}
            void execute() override { inner_->execute(); }
            double execute_timed_ms() override { return ++n_ % 2 ? 1.0 : high_; }
            void poison_outputs() override { inner_->poison_outputs(); }
            SdpaOutputs read_outputs() override { return inner_->read_outputs(); }

        private:
            std::unique_ptr<Plan> inner_;
            double high_;
            int n_ = 0;
        };
        return std::make_unique<P>(ref_.prepare(p, in), high_);
    }

private:
    RefBackend ref_;
    double high_;
};

TEST(TimingStats, RunCaseMarksACaseNoisyAboveNoisyCv) {
    Case c;
    c.backend = "ref";
    c.mode = Mode::P;
    c.prb.dims = Dims{1, 1, 1, 8, 8, 8, 8};
    TimingOptions t;
    t.fix_times = 4;  // 1, 1.5, 1, 1.5 ms: mean 1.25, sample stddev sqrt(1/12), cv 0.2309
    AlternatingBackend be(1.5);
    t.noisy_cv = 0.2;
    CaseResult r = run_case(c, be, 0, t);
    ASSERT_TRUE(r.perf) << r.reason;
    EXPECT_NEAR(r.perf->time.cv, std::sqrt(1.0 / 12.0) / 1.25, 1e-12);
    EXPECT_TRUE(r.perf->noisy);
    t.noisy_cv = 0.25;
    r = run_case(c, be, 0, t);
    ASSERT_TRUE(r.perf) << r.reason;
    EXPECT_FALSE(r.perf->noisy);
}

TEST(TimingStats, RatesFromFlopsAndTimes) {
    // 2e9 FLOPs in 1 ms = 2000 GFLOP/s; 4 ms -> 500; 1e6 bytes in 2 ms -> 0.5 GB/s.
    const PerfResult r = make_perf_result(summarize({1, 2, 4}), 7.5, false, 2'000'000'000, 1'000'000);
    EXPECT_DOUBLE_EQ(r.gflops_at_min, 2000);
    EXPECT_DOUBLE_EQ(r.gflops_at_median, 1000);
    EXPECT_DOUBLE_EQ(r.gflops_at_max, 500);
    EXPECT_DOUBLE_EQ(r.gbytes_per_s_at_median, 0.5);
    EXPECT_DOUBLE_EQ(r.compile_ms, 7.5);
    EXPECT_DOUBLE_EQ(giga_per_second(1, 0), 0);
}

TEST(TimePlan, FixTimesRunsExactlyN) {
    CountingPlan plan(1.0);
    TimingOptions o;
    o.fix_times = 7;
    o.max_ms_per_case = 0;
    EXPECT_EQ(time_plan(plan, o).size(), 7u);
    EXPECT_EQ(plan.timed, 7);
    EXPECT_EQ(plan.untimed, 1);  // one warm-up
}

TEST(TimePlan, MinRunsWhenTheBudgetIsSpent) {
    CountingPlan plan(1.0);
    TimingOptions o;
    o.max_ms_per_case = 0;
    o.min_runs = 5;
    EXPECT_EQ(time_plan(plan, o).size(), 5u);
}

TEST(TimePlan, BudgetBoundsTheLoop) {
    CountingPlan plan(1.0);
    TimingOptions o;
    o.max_ms_per_case = 30;  // wall clock: the fake runs are instant, so many runs fit
    o.min_runs = 2;
    const auto ms = time_plan(plan, o);
    EXPECT_GT(ms.size(), 2u);
    EXPECT_DOUBLE_EQ(ms.front(), 1.0);
}

TEST(TimePlan, ColdCacheFlushesBetweenRuns) {
    CountingPlan plan(1.0);
    CacheFlusher flusher(1 << 20);
    EXPECT_EQ(flusher.bytes(), 1u << 20);
    TimingOptions o;
    o.fix_times = 3;
    o.cold_cache = true;
    o.flusher = &flusher;
    EXPECT_EQ(time_plan(plan, o).size(), 3u);
    // Before every timed run: the host buffer and the plan's own (device) caches.
    EXPECT_EQ(flusher.flushes(), 3u);
    EXPECT_EQ(plan.flushed, 3);
    o.cold_cache = false;  // warm: neither
    EXPECT_EQ(time_plan(plan, o).size(), 3u);
    EXPECT_EQ(flusher.flushes(), 3u);
    EXPECT_EQ(plan.flushed, 3);
}

/// A device plan that logs every call in order ("run", "flush", "timed"), and a host flusher that
/// logs into the same list, so the order of --cold-cache's steps is visible.
class LoggingDevicePlan final : public Plan {
public:
    explicit LoggingDevicePlan(std::vector<std::string>& log, bool device) : log_(log), device_(device) {}
    void execute() override { log_.push_back("run"); }
    double execute_timed_ms() override {
        log_.push_back("timed");
        return 1.0;
    }
    void flush_caches() override { log_.push_back("device flush"); }
    bool runs_on_device() const override { return device_; }
    void poison_outputs() override {}
    SdpaOutputs read_outputs() override { return {}; }

private:
    std::vector<std::string>& log_;
    bool device_;
};

TEST(TimePlan, ColdCacheFlushesTheDeviceBeforeEveryTimedRunAndNotTheHost) {
    std::vector<std::string> log;
    CacheFlusher host(1 << 16);
    TimingOptions o;
    o.fix_times = 3;
    o.cold_cache = true;
    o.flusher = &host;
    LoggingDevicePlan gpu(log, true);
    ASSERT_EQ(time_plan(gpu, o).size(), 3u);
    // The warm-up, then the device's flush before each timed run (outside it); the host buffer is
    // not touched for a plan that runs on a device.
    EXPECT_EQ(log, (std::vector<std::string>{"run", "device flush", "timed", "device flush", "timed", "device flush",
                       "timed"}));
    EXPECT_EQ(host.flushes(), 0u);
    log.clear();
    LoggingDevicePlan cpu(log, false);  // a host plan: the host's caches too, before its own flush
    ASSERT_EQ(time_plan(cpu, o).size(), 3u);
    EXPECT_EQ(host.flushes(), 3u);
    EXPECT_EQ(log, (std::vector<std::string>{"run", "device flush", "timed", "device flush", "timed", "device flush",
                       "timed"}));
    log.clear();
    o.cold_cache = false;  // warm: no flush at all
    ASSERT_EQ(time_plan(gpu, o).size(), 3u);
    EXPECT_EQ(log, (std::vector<std::string>{"run", "timed", "timed", "timed"}));
}

TEST(CacheSize, LastLevelCacheIsKnownHere) {
    // Linux reports it through sysconf or sysfs; the flush buffer is at least twice as big.
    const std::size_t llc = last_level_cache_bytes();
    EXPECT_GT(llc, 0u);
    EXPECT_GE(cold_cache_flush_bytes(), 2 * llc);
}

}  // namespace
}  // namespace sdpa
