// Timer overhead benchmark (not a test): sdpabench's timing loop (driver/timing.hpp) against a
// bare loop around the same compiled plan, on one case given in the case language.
//
// Usage: sdpabench_bench_overhead [ROUNDS] [RUNS] CASE_TOKENS...
//   e.g. sdpabench_bench_overhead 5 50 --dt=bf16 --mask=causal_tl b1hq16sq512d64
// Per round (rounds interleave the two loops, alternating which goes first, so drift hits both): time_plan() with
// --fix-times=RUNS (its median and mean per run), then RUNS back-to-back Plan::execute() calls
// under one steady_clock pair (mean per run). Prints the median over rounds of each and the ratios
// sdpabench/bare; the target is a ratio <= 1.02.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "core/timing_stats.hpp"
#include "driver/case_parser.hpp"
#include "driver/timing.hpp"
#include "fillers/fill.hpp"

namespace {

/// A plan with no work: timing it measures the loop's own cost per run (clock reads, bookkeeping).
class EmptyPlan final : public sdpa::Plan {
public:
    void execute() override {}
    void poison_outputs() override {}
    sdpa::SdpaOutputs read_outputs() override { return {}; }
};

double median_of(std::vector<double> v) { return sdpa::summarize(std::move(v)).median_ms; }

int run(int argc, char** argv) {
    using namespace sdpa;
    std::vector<std::string> tokens(argv + 1, argv + argc);
    int rounds = 5, runs = 50;
    if (tokens.size() >= 2 && std::isdigit(static_cast<unsigned char>(tokens[0][0])) &&
            std::isdigit(static_cast<unsigned char>(tokens[1][0]))) {
        rounds = std::stoi(tokens[0]);
        runs = std::stoi(tokens[1]);
        tokens.erase(tokens.begin(), tokens.begin() + 2);
    }
    const auto entries = parse_cases(tokens);
    if (entries.empty() || !entries.front().c) {
        fmt::print(stderr, "bench_overhead: give one case, e.g. 5 50 --dt=bf16 b1hq16sq512d64{}\n",
                entries.empty() ? "" : fmt::format(" ({})", entries.front().error));
        return 2;
    }
    const Case& c = *entries.front().c;
    auto backend = make_backend(c.backend);
    if (auto no = backend->support(c.prb)) {
        fmt::print(stderr, "bench_overhead: {} cannot run it: {}\n", c.backend, no->reason);
        return 1;
    }
    SdpaInputs in = fill_inputs(c.prb);
    displace(c.prb, in);
    auto plan = backend->prepare(c.prb, in);

    TimingOptions opt;
    opt.fix_times = runs;
    std::vector<double> tool_median, tool_mean, bare_mean;
    std::vector<double> tool_wall;  // wall time of time_plan() per timed run (warm-up included)
    const auto tool_round = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        const TimingStats t = summarize(time_plan(*plan, opt));  // includes its own warm-up run
        tool_wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / (runs + opt.warmup_runs));
        tool_median.push_back(t.median_ms);
        tool_mean.push_back(t.mean_ms);
    };
    const auto bare_round = [&] {
        plan->execute();  // same warm-up for the bare loop
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < runs; ++i) plan->execute();
        bare_mean.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / runs);
    };
    for (int r = 0; r < rounds; ++r) {  // alternate the order so neither loop always goes first
        if (r % 2 == 0) {
            tool_round();
            bare_round();
        } else {
            bare_round();
            tool_round();
        }
    }
    const double tm = median_of(tool_median), ta = median_of(tool_mean), bm = median_of(bare_mean);
    // The loop's own cost, load-independent: time_plan() around a plan that does nothing.
    EmptyPlan empty;
    TimingOptions eopt;
    eopt.fix_times = 1'000'000;
    const auto e0 = std::chrono::steady_clock::now();
    const TimingStats et = summarize(time_plan(empty, eopt));
    const double loop_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - e0).count() / eopt.fix_times;
    fmt::print("case: {} {}\n", c.backend, fmt::join(tokens, " "));
    fmt::print("rounds {} x runs {} (median over rounds)\n", rounds, runs);
    fmt::print("sdpabench median per run  {:10.4f} ms\n", tm);
    fmt::print("sdpabench mean per run    {:10.4f} ms\n", ta);
    fmt::print("sdpabench loop wall/run   {:10.4f} ms   (time_plan's wall time / (runs + warm-up))\n", median_of(tool_wall));
    fmt::print("bare loop mean per run    {:10.4f} ms\n", bm);
    fmt::print("ratio median/bare         {:10.4f}   (target <= 1.02)\n", tm / bm);
    fmt::print("ratio mean/bare           {:10.4f}\n", ta / bm);
    fmt::print("timing loop cost per run  {:10.4f} us (empty plan, 1e6 runs; median measured time {:.4f} us)\n",
            loop_us, et.median_ms * 1e3);
    fmt::print("loop cost / median        {:10.2e}   (the overhead the timer adds to this case)\n", loop_us * 1e-3 / tm);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_overhead: fatal: %s\n", e.what());
        return 1;
    }
}
