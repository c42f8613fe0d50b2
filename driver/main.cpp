// sdpabench: parse the command line and the case language, run every case through its
// backend and the reference, report each result as it finishes, exit with the code of
// driver/exit_code.hpp ExitCode.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <variant>

#include <omp.h>
#include <malloc.h>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "driver/case_parser.hpp"
#include "driver/cli.hpp"
#include "driver/emit_json.hpp"
#include "driver/exit_code.hpp"
#include "driver/expect.hpp"
#include "driver/isolation.hpp"
#include "driver/worker.hpp"
#include "core/host_cpu.hpp"
#include "core/noise_probe.hpp"
#include "driver/minimize.hpp"
#include "driver/selection.hpp"
#include "driver/run_case.hpp"
#include "driver/run_context.hpp"
#include "git_commit.hpp"
#include "core/redact.hpp"
#include "reports/console_reporter.hpp"
#include "reports/results_store.hpp"
#include "reports/perf_reporter.hpp"
#include "reports/progress_reporter.hpp"

namespace {

using namespace sdpa;

/// Canonical case ids (CaseResult::id): the repro, or for an entry that did not parse its
/// would-be repro or "FILE:LINE"; a repeat gets " #2", " #3", ... so that ids are unique.
class CaseIds {
public:
    std::string next(const CaseEntry& e) {
        std::string base = e.c ? repro(*e.c) : (!e.repro.empty() ? e.repro : e.where);
        const std::size_t n = ++seen_[base];
        return n == 1 ? base : fmt::format("{} #{}", base, n);
    }

private:
    std::map<std::string, std::size_t> seen_;
};

/// --version: sdpabench's and every backend's version.
int print_versions() {
    fmt::print("sdpabench {}\n", SDPABENCH_VERSION);
    for (const auto& name : backend_names()) fmt::print("{}\n", make_backend(name)->version());
    for (const auto& missing : missing_backend_names()) fmt::print("{}: not in this build\n", missing);
    return kExitOk;
}

/// Prints "command line: error: MESSAGE" and gives the usage exit code.
int usage_error(std::string_view message) {
    fmt::print(stderr, "command line: error: {}\n", message);
    return kExitUsage;
}

/// The reporters of a run, in the order they get each call: the progress line (first: it erases
/// its line before the others print), the console, the perf lines, then every --report file. Each
/// fails alone: a reporter that throws is named once on stderr with the case it failed on and set
/// aside, and the run and every other reporter go on (a results store's own waiting and spool are
/// reports/store_reporter.hpp's); incomplete() then names it.
class Reporters {
public:
    /// Throws std::runtime_error when a --report file cannot be opened or a store refuses the run.
    Reporters(const GlobalOptions& opts, std::size_t cases)
        : console_(stdout, opts.verbose), perf_lines_(stdout, opts.perf_template) {
        if (!opts.no_progress && isatty(fileno(stderr))) {
            progress_ = std::make_unique<ProgressReporter>(stderr, cases);
            all_.push_back(Entry{progress_.get(), "the progress line (stderr)", "", 0, false});
        }
        all_.push_back(Entry{&console_, "the console (stdout)", "", 0, false});
        all_.push_back(Entry{&perf_lines_, "the perf lines (stdout)", "", 0, false});
        ReportOptions ro = opts.report_options;
        ro.spool_dir = spool_folder(ro, opts.reports);
        for (const auto& spec : opts.reports) {
            files_.push_back(make_file_reporter(spec, ro));
            all_.push_back(Entry{files_.back().get(), fmt::format("report {}", report_name(spec)), "", 0, is_file_format(spec.format)});
        }
    }

    /// Reporter::begin of each; throws the first StoreError (a store that refuses this part of the
    /// run: bad usage, nothing has run). Any other failure sets its reporter aside.
    void begin(const RunContext& ctx) {
        // The stores first: one that refuses the run ends it before a report file is emptied.
        for (const bool files : {false, true})
            for (Entry& e : all_)
                if (e.file == files) guarded(e, "cannot start", nullptr, [&] { e.rep->begin(ctx); }, true);
    }
    void on_start(std::size_t index, std::string_view label) {
        for (Entry& e : all_) guarded(e, "cannot note the start of", nullptr, [&] { e.rep->on_start(index, label); });
    }
    void on_case(const CaseResult& r) {
        for (Entry& e : all_)
            if (guarded(e, "cannot write", &r, [&] { e.rep->on_case(r); })) ++e.cases;
        ++cases_;
    }
    void end(const Summary& s) {
        for (Entry& e : all_) guarded(e, "cannot finish", nullptr, [&] { e.rep->end(s); });
    }

    /// After end(): one line per report that does not hold the whole run ("NAME: incomplete:
    /// WHAT"): one set aside after a failure, or one whose own incomplete() says what it lacks.
    std::vector<std::string> incomplete() const {
        std::vector<std::string> out;
        for (const Entry& e : all_) {
            if (!e.failed.empty())
                out.push_back(fmt::format("{}: incomplete: {} of {} case(s) written, then {}", e.name, e.cases, cases_, e.failed));
            else if (const std::string why = e.rep->incomplete(); !why.empty())
                out.push_back(fmt::format("{}: incomplete: {}", e.name, why));
        }
        return out;
    }

private:
    struct Entry {
        Reporter* rep;
        std::string name;    ///< for messages (a store's password redacted)
        std::string failed;  ///< what failed, once it did: the reporter is set aside
        std::size_t cases = 0;  ///< cases it wrote
        bool file = false;      ///< a csv, jsonl or junit file (begun after the others)
    };

    /// Runs f() for e unless e is set aside; a failure sets it aside with one line on stderr.
    /// `refusals_throw`: a StoreError (a refusal) is thrown on instead. True when f() returned.
    template <class F>
    bool guarded(Entry& e, const char* doing, const CaseResult* r, F f, bool refusals_throw = false) {
        if (!e.failed.empty()) return false;
        try {
            f();
            return true;
        } catch (const StoreError& ex) {
            if (refusals_throw) throw;
            e.failed = fmt::format("{}{}: {}", doing, r ? fmt::format(" case '{}'", r->id) : std::string(" the report"),
                    redact_secrets(ex.what()));
        } catch (const std::exception& ex) {
            e.failed = fmt::format("{}{}: {}", doing, r ? fmt::format(" case '{}'", r->id) : std::string(" the report"),
                    redact_secrets(ex.what()));
        }
        fmt::print(stderr, "{}: error: {}; it is set aside, the run and the other reports go on\n", e.name, e.failed);
        return false;
    }

    ConsoleReporter console_;
    PerfLineReporter perf_lines_;
    std::unique_ptr<ProgressReporter> progress_;
    std::vector<std::unique_ptr<Reporter>> files_;
    std::vector<Entry> all_;
    std::size_t cases_ = 0;
};

/// One run of a batch: the parsed cases with their ids, the expectations, the backends made so
/// far, the summary. run() is the whole run after the command line; each member one stage.
class Run {
public:
    Run(const GlobalOptions& opts, std::vector<CaseEntry> entries, std::vector<Expectation> expectations)
        : opts_(opts), entries_(std::move(entries)), expectations_(std::move(expectations)),
          used_(expectations_.size(), false), timing_(opts.timing), limits_(run_limits(opts)) {
        CaseIds ids;  // from the whole list, so that a case has the same id in every shard
        for (const auto& e : entries_) ids_.push_back(ids.next(e));
        selected_ = shard_cases(entries_, opts.shard);
        if (opts.start > 0 || !opts.match.empty()) {  // benchdnn's --start and --match (driver/selection.hpp)
            const std::size_t before = selected_.size();
            std::vector<std::string> canon(entries_.size());
            if (!opts.match.empty())
                for (std::size_t i = 0; i < entries_.size(); ++i)
                    if (entries_[i].c) canon[i] = canonical(*entries_[i].c);
            selected_ = select_cases(selected_, ids_, canon, opts.start, opts.match);
            // Judged on the whole run, as --expect's unused entries are: a shard whose own cases
            // the filter misses is not an empty selection when another shard's are selected.
            std::vector<std::size_t> all(entries_.size());
            for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
            selected_nothing_ = selected_.empty() && !entries_.empty() &&
                                (opts.shard.count <= 1 || select_cases(all, ids_, canon, opts.start, opts.match).empty());
            const bool both = opts.start > 0 && !opts.match.empty();
            fmt::print(stderr, "note: {}{}{} select{} {} of {} case(s)\n", opts.start > 0 ? fmt::format("--start={}", opts.start) : "",
                    both ? " and " : "", opts.match.empty() ? "" : fmt::format("--match={}", opts.match), both ? "" : "s",
                    selected_.size(), before);
        }
        if (timing_.cold_cache) {
            flusher_ = std::make_unique<CacheFlusher>(cold_cache_flush_bytes());
            timing_.flusher = flusher_.get();
        }
        cap_this_process();
    }

    /// The cases this process runs (its shard).
    const std::vector<std::size_t>& selected() const { return selected_; }

    /// True when a selected case is timed (timed() in driver/case.hpp).
    bool times_a_case() const {
        return std::any_of(selected_.begin(), selected_.end(),
                           [&](std::size_t i) { return entries_[i].c && timed(*entries_[i].c); });
    }

    /// Runs every selected case and reports it; returns the exit code.
    int run(Reporters& reporters, RunContext ctx) {
        if (opts_.shard.count > 0) {
            ctx.shard_index = opts_.shard.index;
            ctx.shard_count = opts_.shard.count;
            ctx.cases_total = entries_.size();
            ctx.cases_fingerprint = cases_fingerprint(ids_);
        }
        // A report that cannot start (a results store that refuses this shard: another case list
        // or build under the same run key) is bad usage: nothing has run.
        try {
            reporters.begin(ctx);
        } catch (const StoreError& ex) {
            return usage_error(ex.what());
        }
        for (const std::size_t i : selected_) {
            const CaseEntry& e = entries_[i];
            reporters.on_start(i, e.c ? repro(*e.c) : std::string());
            CaseResult r = result_of(e, i);
            r.id = ids_[i];
            after_pipeline(e, i, r);
            summary_.add(r);
            if (opts_.result_fd >= 0 && !write_result(opts_.result_fd, r)) ++summary_.write_errors;
            reporters.on_case(r);
        }
        // The machine's noise after the last case, as before the first (RunContext::noise_start).
        if (ctx.noise_start) summary_.noise_end = noise_sample(ctx.threads);
        reporters.end(summary_);
        // Every report that does not hold the whole run, under the summary; the run's exit code
        // says so when nothing else does (kExitReportIncomplete).
        const std::vector<std::string> incomplete = reporters.incomplete();
        for (const std::string& line : incomplete) fmt::print("{}\n", line);
        std::fflush(stdout);
        const auto with_reports = [&](int code) {
            return code == kExitOk && !incomplete.empty() ? static_cast<int>(kExitReportIncomplete) : code;
        };
        note_unused_expectations();
        if (selected_nothing_ && opts_.fail_on.empty) {  // a filter that selects nothing is not a green run
            fmt::print(stderr, "error: {}{}{} selected none of the run's cases: nothing was tested (exit {}; "
                               "--fail-on without 'empty' allows it)\n",
                    opts_.start > 0 ? fmt::format("--start={}", opts_.start) : "",
                    opts_.start > 0 && !opts_.match.empty() ? " and " : "",
                    opts_.match.empty() ? "" : fmt::format("--match={}", opts_.match), static_cast<int>(kExitUntested));
            return std::max(exit_code(summary_, opts_.fail_on), static_cast<int>(kExitUntested));
        }
        return with_reports(exit_code(summary_, opts_.fail_on));
    }

private:
    /// The result of entry e (index i): its error, or its case run in this process or in a child.
    CaseResult result_of(const CaseEntry& e, std::size_t i) {
        CaseResult r;
        if (!e.c) {
            fmt::print(stderr, "{}\n", e.error);
            r.index = i;
            r.status = e.status;
            r.reason = e.error;
            r.repro = e.repro;
            return r;
        }
        if (!opts_.emit_onednn_json.empty()) {
            try {
                write_onednn_json(*e.c, opts_.emit_onednn_json);
            } catch (const std::exception& ex) {
                fmt::print(stderr, "--emit-onednn-json: error: {}\n", ex.what());
                ++summary_.write_errors;
            }
        }
        // A --cpu-isa level this process is not capped at: a worker of that level (driver/worker.hpp),
        // one per case with --isolate.
        if (!listing(*e.c) && e.c->cpu_isa != process_isa_ && caps_cpu_isa(e.c->backend)) {
            if (opts_.isolate) return CaseWorker(opts_.argv).run(*e.c, i, opts_.timeout_per_case);
            auto& w = workers_[e.c->cpu_isa];
            if (!w) w = std::make_unique<CaseWorker>(opts_.argv);
            return w->run(*e.c, i, opts_.timeout_per_case);
        }
        // No vendor in this process: each child makes its own backend (driver/isolation.hpp).
        if (opts_.isolate || opts_.timeout_per_case > 0)
            return run_case_isolated(*e.c, i, timing_, limits_, opts_.timeout_per_case);
        if (auto& be = backends_[e.c->backend]; be || (be = make_backend(e.c->backend))) return run_case(*e.c, *be, i, timing_, limits_);
        // The parser accepts only registered names (a backend this build lacks is a registered one
        // whose cases are SKIPPED: backends/registry.hpp).
        r.index = i;
        r.repro = repro(*e.c);
        r.status = Status::invalid_arguments;
        r.reason = fmt::format("unknown backend '{}'", e.c->backend);
        return r;
    }

    /// After the pipeline: a FAILED case rerun alone, --expect, --minimize.
    void after_pipeline(const CaseEntry& e, std::size_t i, CaseResult& r) {
        rerun_alone(e, i, r);
        apply_expectations(expectations_, platform_, r, used_);
        if (opts_.minimize && e.c && r.expect.kind != Expected::xfail && failure_signature(r)) {
            // Each candidate in a fresh process: what earlier runs left in this one (a vendor's
            // caches) must not make a candidate fail, or the minimized repro would not reproduce.
            const CaseRunner runner = [&](const Case& c) {
                return run_case_fresh_process(c, i, opts_.timeout_per_case, opts_.argv);
            };
            const Minimized m = minimize(*e.c, r, runner, opts_.minimize_max_runs);
            r.minimized = MinimizeReport{repro(m.smallest), m.signature, m.runs, m.steps, m.hit_limit};
        }
    }

    /// A FAILED case of a longer run is rerun alone in a fresh process: its repro must be known to
    /// reproduce it, and a vendor's state left by earlier cases can make a case fail that passes
    /// alone (--random found oneDNN S_q = 1 backward cases that do). --isolate and
    /// --timeout-per-case already run each case in a fresh child; --no-rerun-failed turns it off.
    void rerun_alone(const CaseEntry& e, std::size_t i, CaseResult& r) const {
        if (r.status != Status::failed || r.timed_out || r.crashed || !e.c || selected_.size() <= 1 || opts_.isolate ||
                opts_.timeout_per_case > 0 || opts_.result_fd >= 0 || opts_.no_rerun_failed)
            return;
        Case alone = *e.c;
        if (alone.mode == Mode::CP || alone.mode == Mode::P) alone.mode = Mode::C;
        const CaseResult a = run_case_fresh_process(alone, i, 0, opts_.argv);
        r.alone_status = fmt::format("{}", a.status);
        // Only a check that passes alone shows that the failure depends on the cases before it;
        // a case that alone is SKIPPED, UNIMPLEMENTED, crashes or cannot start tells nothing.
        if (a.status == Status::passed || a.status == Status::mistrusted)
            r.reason += fmt::format(" [run alone in a fresh process it is {}: this failure depends on the cases run "
                                    "before it in this process]", r.alone_status);
        else if (a.status != Status::failed)
            r.reason += fmt::format(" [run alone in a fresh process it is {} ({}): whether this failure depends on the "
                                    "cases run before it is not known]", r.alone_status, a.reason);
        else if (a.crashed || a.timed_out)
            r.reason += fmt::format(" [run alone in a fresh process it FAILED otherwise: {}]", a.reason);
    }

    /// True when backend `name` takes a --cpu-isa cap: only then does a case of another level need a
    /// process of that level (any other backend's case is SKIPPED by run_case, here).
    bool caps_cpu_isa(const std::string& name) {
        auto& be = backends_[name];
        if (!be) be = make_backend(name);
        return be && be->caps_cpu_isa();
    }

    /// When every selected case that runs has one --cpu-isa level other than the default, caps this
    /// process's vendor at it, so that no worker is needed (a repro line of one case, a rerun
    /// alone, a run of one level). Any other mix, or a cap the vendor no longer takes (--cpu-isa=all
    /// asked it for its levels), leaves the levels to workers.
    void cap_this_process() {
        std::optional<CpuIsa> only;
        for (const std::size_t i : selected_) {
            const auto& c = entries_[i].c;
            if (!c || listing(*c)) continue;
            if (only && *only != c->cpu_isa) return;
            only = c->cpu_isa;
        }
        if (only && *only != CpuIsa::none && cap_cpu_isa(*only).empty()) process_isa_ = *only;
    }

    /// A stale --expect entry, or a glob with a typo, is counted on stderr in one line (each shard
    /// of a sharded run would print the whole list), the entries named under -v. An entry for
    /// another shard's cases is not stale: with shards it is judged on the whole run.
    void note_unused_expectations() {
        if (opts_.shard.count > 1 && !std::all_of(used_.begin(), used_.end(), [](bool u) { return u; })) {
            std::vector<CaseResult> before;  // every case of the run as known before it runs
            for (std::size_t k = 0; k < entries_.size(); ++k)
                if (entries_[k].c) {
                    before.emplace_back();
                    before.back().id = ids_[k];
                    before.back().info = case_info(*entries_[k].c);
                }
            for (std::size_t x = 0; x < expectations_.size(); ++x)
                for (std::size_t k = 0; k < before.size() && !used_[x]; ++k)
                    used_[x] = expectation_may_match(expectations_[x], before[k]);
        }
        std::size_t unmatched = 0;
        for (std::size_t x = 0; x < expectations_.size(); ++x)
            if (!used_[x]) {
                ++unmatched;
                if (opts_.verbose >= 1)
                    fmt::print(stderr, "{}: note: this --expect entry matched no case of the run\n", expectations_[x].where);
            }
        if (unmatched > 0)
            fmt::print(stderr, "note: {} of the {} --expect entries of {} matched no case of the run{}\n", unmatched,
                    expectations_.size(), opts_.expect_file, opts_.verbose >= 1 ? " (listed above)" : " (-v lists them)");
    }

    const GlobalOptions& opts_;
    std::vector<CaseEntry> entries_;
    std::vector<std::string> ids_;
    std::vector<std::size_t> selected_;
    std::vector<Expectation> expectations_;
    std::vector<bool> used_;  ///< per expectation: it matched a case
    Platform platform_;
    TimingOptions timing_;
    std::unique_ptr<CacheFlusher> flusher_;
    RunLimits limits_;
    std::map<std::string, std::unique_ptr<Backend>> backends_;
    bool selected_nothing_ = false;  ///< --start / --match left none of the run's cases
    CpuIsa process_isa_ = CpuIsa::none;  ///< the --cpu-isa level this process's vendor is capped at
    std::map<CpuIsa, std::unique_ptr<CaseWorker>> workers_;  ///< one per other level, started on its first case
    Summary summary_;
};

/// The parsed cases, or the usage exit code (the errors printed) when the command line has a usage
/// error or no problem at all.
std::variant<std::vector<CaseEntry>, int> parse_run_cases(const GlobalOptions& opts) {
    std::vector<CaseEntry> entries = parse_cases(opts.case_tokens, opts.option_names);
    if (opts.repeats > 1) entries = repeat_entries(entries, opts.repeats);
    bool usage = false;
    for (const auto& e : entries)
        if (e.usage) {
            fmt::print(stderr, "{}\n", e.error);
            usage = true;
        }
    if (usage) return kExitUsage;
    if (entries.empty())
        return usage_error("no problem given (e.g. 'sdpabench b1hq2sq64d64' or 'sdpabench "
                           "--batch=cases/ci/smoke.cases'); see --help");
    return entries;
}

/// --result-fd's usage rules: a descriptor open for writing, a run of exactly one case.
std::optional<int> check_result_fd(const GlobalOptions& opts, std::size_t cases) {
    if (opts.result_fd < 0) return std::nullopt;
    const int fl = ::fcntl(opts.result_fd, F_GETFL);
    if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
        return usage_error(fmt::format("--result-fd={}: not a file descriptor open for writing", opts.result_fd));
    if (cases != 1) return usage_error(fmt::format("--result-fd needs a run of exactly one case (got {})", cases));
    return std::nullopt;
}

int run(int argc, char** argv) {
    const CliOutcome cli = parse_command_line(argc, argv);
    if (cli.exit_code >= 0) return cli.exit_code;
    const GlobalOptions& opts = cli.opts;
    // Before any vendor or OpenMP region runs: the pools they start take the narrowed mask.
    if (opts.threads > 0)
        if (const std::string why = limit_threads(opts.threads); !why.empty()) return usage_error(why);
    // -v4: the vendors' own logs too (unless the user set them): oneDNN's verbose lines, which the
    // oneDNN backend then passes through, and the cuDNN frontend's log (docs/output.md#verbosity).
    if (opts.verbose >= 4) {
        setenv("ONEDNN_VERBOSE", "1", 0);
        setenv("CUDNN_FRONTEND_LOG_INFO", "1", 0);
        setenv("CUDNN_FRONTEND_LOG_FILE", "stderr", 0);
    }
    if (opts.serve_fd >= 0) return serve_cases(opts);
    if (opts.version) return print_versions();
    auto entries = parse_run_cases(opts);
    if (const int* code = std::get_if<int>(&entries)) return *code;
    std::vector<Expectation> expectations;
    if (!opts.expect_file.empty()) {
        try {
            expectations = load_expectations(opts.expect_file);
        } catch (const std::exception& ex) {
            fmt::print(stderr, "{}\n", ex.what());
            return kExitUsage;
        }
    }
    Run batch(opts, std::move(std::get<std::vector<CaseEntry>>(entries)), std::move(expectations));
    if (const auto code = check_result_fd(opts, batch.selected().size())) return *code;
    std::optional<Reporters> reporters;
    try {
        reporters.emplace(opts, batch.selected().size());
    } catch (const std::exception& ex) {
        return usage_error(ex.what());
    }
    RunContext ctx = run_context(opts, backend_names(), batch.times_a_case());
    ctx.sdpabench = SDPABENCH_VERSION;
    ctx.git_commit = SDPABENCH_GIT_COMMIT;
    return batch.run(*reporters, std::move(ctx));
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
    // Host buffers reused across the cases of a batch (docs/perf_and_reports.md#what-a-check-costs):
    // glibc keeps freed memory in the process (no mmap per large buffer, no trimming), so each case
    // takes the pages the case before it freed instead of faulting in fresh zeroed ones.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
#endif
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sdpabench: fatal: %s\n", e.what());
        return sdpa::kExitUntested;
    }
}
