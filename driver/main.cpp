// sdpabench: parse the command line and the case language, run every case through its
// backend and the reference, report each result as it finishes, exit 0/1/2.
#include <cstdio>
#include <exception>
#include <map>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/backend.hpp"
#include "driver/case_parser.hpp"
#include "driver/cli.hpp"
#include "driver/isolation.hpp"
#include "driver/emit_json.hpp"
#include "graph/json_export.hpp"
#include "driver/run_case.hpp"
#include "reports/console_reporter.hpp"
#include "reports/perf_reporter.hpp"
#include "reports/progress_reporter.hpp"

namespace {

int run(int argc, char** argv) {
    using namespace sdpa;
    const CliOutcome cli = parse_command_line(argc, argv);
    if (cli.exit_code >= 0) return cli.exit_code;
    const GlobalOptions& opts = cli.opts;

    if (opts.version) {
        fmt::print("sdpabench {}\n", SDPABENCH_VERSION);
        for (const auto& name : backend_names()) fmt::print("{}\n", make_backend(name)->version());
        return 0;
    }

    const std::vector<CaseEntry> entries = parse_cases(opts.case_tokens);
    bool usage_error = false;
    for (const auto& e : entries)
        if (e.usage) {
            fmt::print(stderr, "{}\n", e.error);
            usage_error = true;
        }
    if (usage_error) return 2;
    if (entries.empty()) {
        fmt::print(stderr, "command line: error: no problem given (e.g. 'sdpabench b1hq2sq64d64' or "
                           "'sdpabench --batch=cases/ci/smoke.cases'); see --help\n");
        return 2;
    }

    ConsoleReporter console(stdout, opts.verbose);
    std::vector<Reporter*> reporters{&console};
    // Progress first (it erases its line before the others print), files after the console.
    std::unique_ptr<ProgressReporter> progress;
    if (!opts.no_progress && isatty(fileno(stderr))) {
        progress = std::make_unique<ProgressReporter>(stderr, entries.size());
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
            return 2;
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
    const RunLimits limits{opts.max_memory};
    bool write_failed = false;  // an --emit-onednn-json file could not be written: exit 1
    for (std::size_t i = 0; i < entries.size(); ++i) {
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
                    write_failed = true;
                }
            }
            if (opts.isolate || opts.timeout_per_case > 0) {
                // No vendor in this process: each child makes its own backend (driver/isolation.hpp).
                r = run_case_isolated(*e.c, i, timing, limits, opts.timeout_per_case);
            } else if (auto& be = backends[e.c->backend]; be || (be = make_backend(e.c->backend))) {
                r = run_case(*e.c, *be, i, timing, limits);
            } else {  // the parser accepts only registered names, but the default (onednn) may be
                      // left out of a build (-DSDPABENCH_ONEDNN=OFF)
                r.index = i;
                r.repro = repro(*e.c);
                r.status = Status::invalid_arguments;
                r.reason = fmt::format("backend '{}' is not compiled into this build (available: {}); pass --backend=",
                        e.c->backend, fmt::join(backend_names(), "|"));
            }
        }
        summary.add(r.status);
        for (Reporter* rep : reporters) rep->on_case(r);
    }
    for (Reporter* rep : reporters) rep->end(summary);
    return write_failed ? 1 : summary.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sdpabench: fatal: %s\n", e.what());
        return 1;
    }
}
