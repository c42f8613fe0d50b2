// sdpabench: parse the command line and the case language, run every case through its
// backend and the reference, report each result as it finishes, exit 0/1/2.
#include <cstdio>
#include <exception>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "driver/case_parser.hpp"
#include "driver/cli.hpp"
#include "driver/isolation.hpp"
#include "driver/run_case.hpp"
#include "reports/console_reporter.hpp"

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
    std::map<std::string, std::unique_ptr<Backend>> backends;
    Summary summary;
    const RunLimits limits{opts.max_memory};
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const CaseEntry& e = entries[i];
        CaseResult r;
        if (!e.c) {
            fmt::print(stderr, "{}\n", e.error);
            r.index = i;
            r.status = Status::invalid_arguments;
            r.reason = e.error;
        } else if (opts.isolate || opts.timeout_per_case > 0) {
            // No vendor in this process: each child makes its own backend (driver/isolation.hpp).
            r = run_case_isolated(*e.c, i, limits, opts.timeout_per_case);
        } else {
            auto& be = backends[e.c->backend];  // the parser accepted only registered names
            if (!be) be = make_backend(e.c->backend);
            r = run_case(*e.c, *be, i, limits);
        }
        summary.add(r.status);
        for (Reporter* rep : reporters) rep->on_case(r);
    }
    for (Reporter* rep : reporters) rep->end(summary);
    return summary.exit_code();
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
