// sdpabench: parse the command line and the case language, run every case through its
// backend and the reference, report each result as it finishes, exit with the code of
// reports/case_result.hpp ExitCode.
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>

#include <omp.h>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "driver/case_parser.hpp"
#include "driver/cli.hpp"
#include "git_commit.hpp"
#include "driver/expect.hpp"
#include "driver/isolation.hpp"
#include "driver/minimize.hpp"
#include "driver/emit_json.hpp"
#include "graph/json_export.hpp"
#include "driver/run_case.hpp"
#include "reports/console_reporter.hpp"
#include "reports/perf_reporter.hpp"
#include "reports/progress_reporter.hpp"

namespace {

/// The context of this run for the reports' first record (reports/case_result.hpp RunContext).
sdpa::RunContext run_context(int argc, char** argv, const sdpa::GlobalOptions& opts) {
    sdpa::RunContext ctx;
    ctx.sdpabench = SDPABENCH_VERSION;
    ctx.git_commit = SDPABENCH_GIT_COMMIT;
    ctx.tags = opts.tags;
    for (int i = 0; i < argc; ++i) {
        if (i > 0) ctx.command += ' ';
        ctx.command += argv[i];
    }
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) ctx.host = host;
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) ctx.cpu = line.substr(line.find_first_not_of(' ', colon + 1));
            break;
        }
    ctx.threads = omp_get_max_threads();
    for (const auto& name : sdpa::backend_names()) {
        const auto be = sdpa::make_backend(name);
        if (!be) continue;
        if (const std::string v = be->library_version(); !v.empty()) ctx.libraries.emplace_back(name, v);
        if (const std::string d = be->device_name(); !d.empty() && ctx.gpu.find(d) == std::string::npos)
            ctx.gpu += (ctx.gpu.empty() ? "" : "; ") + d;
    }
    const auto now = std::chrono::system_clock::now();
    const auto tm = fmt::gmtime(std::chrono::system_clock::to_time_t(now));
    ctx.start = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", tm);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    ctx.run_id = fmt::format("{}-{:%Y%m%dT%H%M%S}.{:03}Z-{}", ctx.host, tm, ms, ::getpid());
    return ctx;
}

/// Canonical case ids (CaseResult::id): the repro, or for an entry that did not parse its
/// would-be repro or "FILE:LINE"; a repeat gets " #2", " #3", ... so that ids are unique.
class CaseIds {
public:
    std::string next(const sdpa::CaseEntry& e) {
        std::string base = e.c ? sdpa::repro(*e.c) : (!e.repro.empty() ? e.repro : e.where);
        const std::size_t n = ++seen_[base];
        return n == 1 ? base : fmt::format("{} #{}", base, n);
    }

private:
    std::map<std::string, std::size_t> seen_;
};

int run(int argc, char** argv) {
    using namespace sdpa;
    const CliOutcome cli = parse_command_line(argc, argv);
    if (cli.exit_code >= 0) return cli.exit_code;
    const GlobalOptions& opts = cli.opts;

    if (opts.version) {
        fmt::print("sdpabench {}\n", SDPABENCH_VERSION);
        for (const auto& name : backend_names()) fmt::print("{}\n", make_backend(name)->version());
        for (const auto& missing : missing_backend_names()) fmt::print("{}: not in this build\n", missing);
        return 0;
    }

    const std::vector<CaseEntry> entries = parse_cases(opts.case_tokens);
    bool usage_error = false;
    for (const auto& e : entries)
        if (e.usage) {
            fmt::print(stderr, "{}\n", e.error);
            usage_error = true;
        }
    if (usage_error) return kExitUsage;
    if (entries.empty()) {
        fmt::print(stderr, "command line: error: no problem given (e.g. 'sdpabench b1hq2sq64d64' or "
                           "'sdpabench --batch=cases/ci/smoke.cases'); see --help\n");
        return kExitUsage;
    }

    std::vector<Expectation> expectations;
    if (!opts.expect_file.empty()) {
        try {
            expectations = load_expectations(opts.expect_file);
        } catch (const std::exception& ex) {
            fmt::print(stderr, "{}\n", ex.what());
            return kExitUsage;
        }
    }
    Platform platform;
    std::vector<bool> expectation_used(expectations.size(), false);

    // Ids come from the whole list, so that a case has the same id in every shard.
    CaseIds ids;
    std::vector<std::string> case_ids;
    for (const auto& e : entries) case_ids.push_back(ids.next(e));
    const std::vector<std::size_t> selected = shard_cases(entries, opts.shard);
    if (opts.result_fd >= 0) {
        const int fl = ::fcntl(opts.result_fd, F_GETFL);
        if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
            fmt::print(stderr, "command line: error: --result-fd={}: not a file descriptor open for writing\n",
                    opts.result_fd);
            return kExitUsage;
        }
    }
    if (opts.result_fd >= 0 && selected.size() != 1) {
        fmt::print(stderr, "command line: error: --result-fd needs a run of exactly one case (got {})\n",
                selected.size());
        return kExitUsage;
    }

    ConsoleReporter console(stdout, opts.verbose);
    std::vector<Reporter*> reporters{&console};
    // Progress first (it erases its line before the others print), files after the console.
    std::unique_ptr<ProgressReporter> progress;
    if (!opts.no_progress && isatty(fileno(stderr))) {
        progress = std::make_unique<ProgressReporter>(stderr, selected.size());
        reporters.insert(reporters.begin(), progress.get());
    }
    PerfLineReporter perf_lines(stdout, opts.perf_template);
    reporters.push_back(&perf_lines);
    std::vector<std::unique_ptr<Reporter>> files;
    for (const auto& spec : opts.reports) {
        try {
            files.push_back(make_file_reporter(spec));
        } catch (const std::exception& ex) {
            fmt::print(stderr, "command line: error: {}\n", ex.what());
            return kExitUsage;
        }
        reporters.push_back(files.back().get());
    }
    TimingOptions timing = opts.timing;
    std::unique_ptr<CacheFlusher> flusher;
    if (timing.cold_cache) {
        flusher = std::make_unique<CacheFlusher>(cold_cache_flush_bytes());
        timing.flusher = flusher.get();
    }
    std::map<std::string, std::unique_ptr<Backend>> backends;
    Summary summary;
    RunContext ctx = run_context(argc, argv, opts);
    if (opts.shard.count > 0) {
        ctx.shard_index = opts.shard.index;
        ctx.shard_count = opts.shard.count;
        ctx.cases_total = entries.size();
        ctx.cases_fingerprint = cases_fingerprint(case_ids);
    }
    // A report that cannot start (a results store that refuses this shard: another case list or
    // build under the same run key) is bad usage: nothing has run.
    for (Reporter* rep : reporters) {
        try {
            rep->begin(ctx);
        } catch (const std::exception& ex) {
            fmt::print(stderr, "command line: error: {}\n", ex.what());
            return kExitUsage;
        }
    }
    const RunLimits limits{opts.max_memory};
    for (const std::size_t i : selected) {
        const CaseEntry& e = entries[i];
        const std::string label = e.c ? repro(*e.c) : std::string();
        for (Reporter* rep : reporters) rep->on_start(i, label);
        CaseResult r;
        if (!e.c) {
            fmt::print(stderr, "{}\n", e.error);
            r.index = i;
            r.status = e.status;
            r.reason = e.error;
            r.repro = e.repro;
        } else {
            if (!opts.emit_onednn_json.empty()) {
                try {
                    write_onednn_json(*e.c, opts.emit_onednn_json);
                } catch (const std::exception& ex) {
                    fmt::print(stderr, "--emit-onednn-json: error: {}\n", ex.what());
                    ++summary.write_errors;
                }
            }
            if (opts.isolate || opts.timeout_per_case > 0) {
                // No vendor in this process: each child makes its own backend (driver/isolation.hpp).
                r = run_case_isolated(*e.c, i, timing, limits, opts.timeout_per_case);
            } else if (auto& be = backends[e.c->backend]; be || (be = make_backend(e.c->backend))) {
                r = run_case(*e.c, *be, i, timing, limits);
            } else {  // the parser accepts only registered names (a backend this build lacks is a
                      // registered one whose cases are SKIPPED: backends/registry.hpp)
                r.index = i;
                r.repro = repro(*e.c);
                r.status = Status::invalid_arguments;
                r.reason = fmt::format("unknown backend '{}'", e.c->backend);
            }
        }
        r.id = case_ids[i];
        // A FAILED case of a longer run is rerun alone in a fresh process: its repro must be known
        // to reproduce it, and a vendor's state left by earlier cases can make a case fail that
        // passes alone (--random found oneDNN S_q = 1 backward cases that do). --isolate and
        // --timeout-per-case already run each case in a fresh child.
        if (r.status == Status::failed && !r.timed_out && !r.crashed && e.c && selected.size() > 1 &&
                !opts.isolate && opts.timeout_per_case <= 0 && opts.result_fd < 0) {
            Case alone = *e.c;
            if (alone.mode == Mode::CP || alone.mode == Mode::P) alone.mode = Mode::C;
            r.alone_status = fmt::format("{}", run_case_fresh_process(alone, i, 0).status);
            if (r.alone_status != "FAILED")
                r.reason += fmt::format(" [run alone in a fresh process it is {}: this failure depends on the cases run "
                                        "before it in this process]", r.alone_status);
        }
        apply_expectations(expectations, platform, r, expectation_used);
        if (opts.minimize && e.c && r.expect.kind != Expected::xfail && failure_signature(r)) {
            // Each candidate in a fresh process: what earlier runs left in this one (a vendor's
            // caches) must not make a candidate fail, or the minimized repro would not reproduce.
            const CaseRunner runner = [&](const Case& c) { return run_case_fresh_process(c, i, opts.timeout_per_case); };
            const Minimized m = minimize(*e.c, r, runner, opts.minimize_max_runs);
            r.minimized = MinimizeReport{repro(m.smallest), m.signature, m.runs, m.steps, m.hit_limit};
        }
        summary.add(r);
        if (opts.result_fd >= 0 && !write_result(opts.result_fd, r)) ++summary.write_errors;
        for (Reporter* rep : reporters) rep->on_case(r);
    }
    for (Reporter* rep : reporters) rep->end(summary);
    if (opts.shard.count > 1)  // an entry for another shard's cases is not stale: judge it on the whole run
        for (std::size_t i = 0; i < expectations.size(); ++i)
            for (std::size_t k = 0; k < entries.size() && !expectation_used[i]; ++k)
                expectation_used[i] = entries[k].c && expectation_matches(expectations[i], case_ids[k], entries[k].c->backend);
    for (std::size_t i = 0; i < expectations.size(); ++i)  // a stale entry, or a glob with a typo
        if (!expectation_used[i])
            fmt::print(stderr, "{}: note: this --expect entry matched no case of the run\n", expectations[i].where);
    return exit_code(summary, opts.fail_on);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sdpabench: fatal: %s\n", e.what());
        return sdpa::kExitUntested;
    }
}
