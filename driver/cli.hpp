// Global command-line options (CLI11). The order-sensitive case language is handed on, as
// tokens, to the case parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "driver/shard.hpp"
#include "core/implementation.hpp"
#include "driver/run_case.hpp"
#include "driver/timing.hpp"
#include "driver/exit_code.hpp"
#include "reports/perf_template.hpp"
#include "reports/report_files.hpp"

namespace sdpa {

/// Options that apply to the whole run.
struct GlobalOptions {
    int verbose = 0;               ///< -v: margins and backend notes per case
    bool version = false;          ///< --version: print versions and exit
    std::string emit_onednn_json;  ///< --emit-onednn-json=DIR: write each case's oneDNN graph as JSON there
    /// --max-memory (bytes; "8G", "512M" accepted): memory guard limit; 0 turns it off.
    /// Default: core/memory_estimate.hpp default_memory_limit() (80% of MemAvailable).
    std::uint64_t max_memory = 0;
    /// --max-device-memory (bytes, as --max-memory): the device-memory guard of GPU backends; 0:
    /// the default, kDeviceMemoryShare of the device's free memory when the case runs
    /// (core/memory_estimate.hpp).
    std::uint64_t max_device_memory = 0;
    double timeout_per_case = 0;   ///< --timeout-per-case (seconds; 0: none): runs each case in a child
    bool isolate = false;          ///< --isolate: run each case in a child process (driver/isolation.hpp)
    /// --no-rerun-failed: a FAILED case of a longer run is not run again alone in a fresh process
    /// (driver/main.cpp; each rerun restarts the vendor: seconds on a GPU).
    bool no_rerun_failed = false;
    int result_fd = -1;            ///< --result-fd: write the one case's result as CBOR there (driver/isolation.hpp)
    /// --serve-cases=FD (internal): this process is a case worker serving the socket FD (driver/worker.hpp).
    int serve_fd = -1;
    /// --threads=N: every threading runtime of the run uses N cores (core/host_cpu.hpp limit_threads); 0: as the
    /// process's affinity mask allows.
    int threads = 0;
    /// The command line as given (argv[0] first): what case workers are started with (driver/worker.hpp).
    std::vector<std::string> argv;
    bool minimize = false;         ///< --minimize: shrink each FAILED case (driver/minimize.hpp)
    std::size_t minimize_max_runs = 400;  ///< --minimize-max-runs: runs one minimization may spend
    std::vector<std::string> case_tokens;  ///< everything else, in order, for parse_cases()
    TimingOptions timing;          ///< --max-ms-per-case, --min-runs, --fix-times, --cold-cache (P, CP)
    PerfTemplate perf_template;    ///< --perf-template (default kDefaultPerfTemplate)
    std::vector<ReportSpec> reports;  ///< --report=FORMAT:PATH, repeatable
    ReportOptions report_options;     ///< --store-wait, --store-spool
    bool no_progress = false;      ///< --no-progress: no progress line even on a terminal
    std::string expect_file;       ///< --expect=FILE: expected results (driver/expect.hpp)
    FailOn fail_on;                ///< --fail-on=LIST: statuses that fail the run (driver/exit_code.hpp)
    /// --tags=KEY:VALUE (repeatable, or comma-separated): the user's labels in the run context.
    std::vector<std::pair<std::string, std::string>> tags;
    Shard shard;                   ///< --shard=I/N: run only shard I of N (driver/shard.hpp); 0/1 = all
    std::size_t start = 0;         ///< --start=N: run the cases of index >= N only (benchdnn's --start)
    std::string match;             ///< --match=REGEX: run the cases whose id it finds (benchdnn's --match)
    std::size_t repeats = 1;       ///< --repeats-per-prb=N: each case N times in a row (benchdnn's option)
    ImplSelection impls;           ///< --impl, --skip-impl (core/implementation.hpp)
    /// Every global option's long names ("--max-ms-per-case", "--max-ms-per-prb", ...): with the
    /// knobs, the names "did you mean" picks from for an unknown one (driver/case_parser.hpp).
    std::vector<std::string> option_names;
};

/// The per-case limits of the run's options: --max-memory, --impl, --skip-impl,
/// --max-device-memory (the one place that gathers them, for this process and its case workers).
RunLimits run_limits(const GlobalOptions& opts);

/// Parses argv. Returns the options, or an exit code when the run should stop now: kExitOk after
/// --help, kExitUsage for a usage error (message already printed on stderr).
struct CliOutcome {
    GlobalOptions opts;
    int exit_code = -1;  ///< -1: go on
};
CliOutcome parse_command_line(int argc, char** argv);

/// The status table (core/status.hpp kStatuses) for --list-statuses, in table order: "text" one
/// "NAME  what" line per status (names padded to one column), "json" an array of objects
/// {"name": "PASSED", "what": "...", "error": false} (error: is_error(), a status that fails the
/// run by default; scripts read these three keys). nullopt for another format.
std::optional<std::string> status_table_text(std::string_view format);

}  // namespace sdpa
