#include "reports/result_fields.hpp"

#include <fmt/format.h>

namespace sdpa {

namespace {

using V = FieldValue;

V text_or_none(const std::string& s) { return s.empty() ? V{} : V{s}; }

/// The output with the largest |err|/bound (a NaN ratio wins), or nullptr without checks.
const OutputCheck* worst_check(const CaseResult& r) {
    const OutputCheck* worst = nullptr;
    for (const auto& c : r.checks)
        if (!worst || !(c.worst_ratio <= worst->worst_ratio)) worst = &c;
    return worst;
}

bool has_mask_stats(const CaseResult& r) { return r.dropout && r.dropout->stats.heads > 0; }

/// A perf field: absent when the case was not timed.
template <typename F>
V perf(const CaseResult& r, F f) {
    return r.perf ? V{f(*r.perf)} : V{};
}

std::vector<ResultField> make_fields() {
    using G = FieldGroup;
    std::vector<ResultField> t{
        {"idx", G::top, "idx", "0-based position of the case in the whole run",
            [](const CaseResult& r) { return V{static_cast<std::int64_t>(r.index)}; }},
        {"id", G::top, "id", "the case id (its repro, FILE:LINE for a line that did not parse, ' #2' for a repeat)",
            [](const CaseResult& r) { return V{r.id}; }},
        {"status", G::top, "status", "the case's status (PASSED, FAILED, ...)",
            [](const CaseResult& r) { return V{fmt::format("{}", r.status)}; }},
        {"expect", G::top, "expect", "the --expect outcome (XFAIL, XPASS, NOT_APPLICABLE), absent without one",
            [](const CaseResult& r) {
                return r.expect.kind == Expected::none ? V{} : V{fmt::format("{}", r.expect.kind)};
            }},
        {"reason", G::top, "reason", "why it is not PASSED", [](const CaseResult& r) { return V{r.reason}; }},
        {"repro", G::top, "repro", "the complete repro line", [](const CaseResult& r) { return V{r.repro}; }},
        {"backend", G::top, "backend", "backend name", [](const CaseResult& r) { return V{r.info.backend}; }},
        {"engine", G::top, "engine", "engine kind (cpu, gpu)", [](const CaseResult& r) { return V{r.info.engine}; }},
        {"mode", G::top, "mode", "--mode", [](const CaseResult& r) { return V{r.info.mode}; }},
        {"dir", G::top, "dir", "--dir", [](const CaseResult& r) { return V{r.info.dir}; }},
        {"dt", G::top, "dt", "--dt", [](const CaseResult& r) { return V{r.info.dt}; }},
        {"mask", G::top, "mask", "--mask", [](const CaseResult& r) { return V{r.info.mask}; }},
        {"prb", G::top, "prb", "problem descriptor without the name", [](const CaseResult& r) { return V{r.info.prb}; }},
        {"name", G::top, "name", "n=NAME of the descriptor", [](const CaseResult& r) { return V{r.info.name}; }},
        {"case_ms", G::top, "case_ms", "wall time of the whole case, ms", [](const CaseResult& r) { return V{r.ms}; }},
        {"flops", G::top, "flops", "FLOPs of one run (docs/perf_and_reports.md#flop-and-byte-counts)",
            [](const CaseResult& r) { return V{r.flops}; }},
        {"bytes", G::top, "bytes", "bytes one run must move", [](const CaseResult& r) { return V{r.bytes}; }},
        {"runs", G::perf, "runs", "timed runs",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return static_cast<std::int64_t>(p.time.runs); }); }},
        {"min_ms", G::perf, "min_ms", "fastest timed run, ms",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.time.min_ms; }); }},
        {"median_ms", G::perf, "median_ms", "median timed run, ms",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.time.median_ms; }); }},
        {"mean_ms", G::perf, "mean_ms", "mean timed run, ms",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.time.mean_ms; }); }},
        {"max_ms", G::perf, "max_ms", "slowest timed run, ms",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.time.max_ms; }); }},
        {"compile_ms", G::perf, "compile_ms", "vendor plan build and compile time, ms",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.compile_ms; }); }},
        {"gflops", G::perf, "gflops", "GFLOP/s at the median time",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.gflops_at_median; }); }},
        {"gflops_best", G::perf, "gflops_best", "GFLOP/s at the min time",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.gflops_at_min; }); }},
        {"gbytes_per_s", G::perf, "gbytes_per_s", "GB/s at the median time",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.gbytes_per_s_at_median; }); }},
        {"worst_output", G::top, "worst_output", "the output with the largest |err|/bound (checked cases)",
            [](const CaseResult& r) {
                const OutputCheck* w = worst_check(r);
                return w ? V{fmt::format("{}", w->output)} : V{};
            }},
        {"worst_ratio", G::top, "worst_ratio", "its largest |err|/bound (< 1 passes)",
            [](const CaseResult& r) {
                const OutputCheck* w = worst_check(r);
                return w ? V{w->worst_ratio} : V{};
            }},
        {"dropout", G::top, "dropout", "--dropout as P:SEED:OFFSET, absent without dropout",
            [](const CaseResult& r) { return text_or_none(r.info.dropout); }},
        {"dropout_keep_p_value", G::top, "dropout_keep_p_value", "smallest per-head keep-rate p-value (p > 0)",
            [](const CaseResult& r) { return has_mask_stats(r) ? V{r.dropout->stats.keep.p_value} : V{}; }},
        {"dropout_pairs_p_value", G::top, "dropout_pairs_p_value", "smallest per-head neighbour-pair p-value (p > 0)",
            [](const CaseResult& r) { return has_mask_stats(r) ? V{r.dropout->stats.pairs.p_value} : V{}; }},
        {"expect_reason", G::top, "expect_reason", "the --expect entry's reason",
            [](const CaseResult& r) { return V{r.expect.reason}; }},
        {"shown_status", G::top, "shown_status", "the status reports show: the --expect outcome, else the status",
            [](const CaseResult& r) { return V{std::string(shown_status(r))}; }},
        {"timed_out", G::top, "timed_out", "killed by --timeout-per-case", [](const CaseResult& r) { return V{r.timed_out}; }},
        {"crashed", G::top, "crashed", "its child process died without a result", [](const CaseResult& r) { return V{r.crashed}; }},
        {"checked", G::top, "checked", "the outputs were compared (C, CP, B modes)", [](const CaseResult& r) { return V{r.checked}; }},
        {"gflops_worst", G::perf, "gflops_worst", "GFLOP/s at the max time",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.gflops_at_max; }); }},
        {"tflops", G::perf, "tflops", "TFLOP/s at the median time",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return 1e-3 * p.gflops_at_median; }); }},
        {"tflops_best", G::perf, "tflops_best", "TFLOP/s at the min time",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return 1e-3 * p.gflops_at_min; }); }},
        {"tflops_worst", G::perf, "tflops_worst", "TFLOP/s at the max time",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return 1e-3 * p.gflops_at_max; }); }},
        {"cold_cache", G::perf, "cold_cache", "--cold-cache was on",
            [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.cold_cache; }); }},
        {"minimized_repro", G::top, "minimized_repro", "--minimize: the smallest repro that fails the same way",
            [](const CaseResult& r) { return r.minimized ? V{r.minimized->repro} : V{}; }},
        {"alone_status", G::top, "alone_status",
            "a FAILED case of a run of several, rerun alone in a fresh process: that status (PASSED: the failure "
            "depends on the cases before it)",
            [](const CaseResult& r) { return text_or_none(r.alone_status); }},
    };
    // One field per phase (reports/case_result.hpp Phase), in the "phases_ms" object.
    for (const auto& ph : kPhaseNames) {
        const auto k = static_cast<std::size_t>(ph.value);
        t.push_back({fmt::format("{}_ms", ph.name), G::phases, std::string(ph.name),
            fmt::format("wall time of the {} phase, ms (0: not run)", ph.name),
            [k](const CaseResult& r) { return V{r.phases_ms[k]}; }});
    }
    // Appended after the phases, so that every earlier column keeps its place.
    t.push_back({"peak_tflops", G::perf, "peak_tflops", "the device's peak dense TFLOP/s for the io type (absent when unknown)",
        [](const CaseResult& r) { return r.perf && r.perf->peak_tflops > 0 ? V{r.perf->peak_tflops} : V{}; }});
    t.push_back({"pct_peak", G::perf, "pct_peak", "TFLOP/s at the median time as a percentage of peak_tflops",
        [](const CaseResult& r) {
            return r.perf && r.perf->peak_tflops > 0 ? V{100.0 * 1e-3 * r.perf->gflops_at_median / r.perf->peak_tflops} : V{};
        }});
    t.push_back({"cv", G::perf, "cv", "coefficient of variation of the timed runs: standard deviation / mean (NaN: fewer than 2)",
        [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.time.cv; }); }});
    t.push_back({"noisy", G::perf, "noisy", "cv is above --noisy-cv: too noisy to tell a small change",
        [](const CaseResult& r) { return perf(r, [](const PerfResult& p) { return p.noisy; }); }});
    return t;
}

}  // namespace

const std::vector<ResultField>& result_fields() {
    static const std::vector<ResultField> t = make_fields();
    return t;
}

const ResultField* find_result_field(std::string_view column) {
    for (const auto& f : result_fields())
        if (f.column == column) return &f;
    return nullptr;
}

std::string csv_text(const FieldValue& v) {
    struct Visit {
        std::string operator()(std::monostate) const { return {}; }
        std::string operator()(const std::string& s) const { return s; }
        std::string operator()(std::int64_t x) const { return fmt::format("{}", x); }
        std::string operator()(double x) const { return fmt::format("{}", x); }
        std::string operator()(bool b) const { return b ? "true" : "false"; }
    };
    return std::visit(Visit{}, v);
}

}  // namespace sdpa
