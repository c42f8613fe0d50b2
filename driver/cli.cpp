#include "driver/cli.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "backends/torch/torch_backend.hpp"
#include "core/memory_estimate.hpp"
#include "core/parse_number.hpp"
#include "core/status.hpp"
#include "driver/case_parser.hpp"
#include "driver/knobs.hpp"
#include "reports/console_reporter.hpp"

namespace sdpa {

namespace {

/// The check of an option in seconds: a finite number from 0 to `max` (NaN and infinities
/// refused); the message reads "must be a number of seconds RANGEgot 'X')", `range` being e.g.
/// ">= 0 (" or "from 0 to 86400 (a day; ".
CLI::Validator seconds_check(double max, std::string_view range) {
    return CLI::Validator(
            [max, range = std::string(range)](std::string& s) -> std::string {
                double v = -1;
                return CLI::detail::lexical_cast(s, v) && v >= 0 && std::isfinite(v) && v <= max
                        ? std::string()
                        : fmt::format("must be a number of seconds {}got '{}')", range, s);
            },
            "SECONDS");
}


/// "0 nothing in --fail-on happened; 1 ...": the exit codes of kExitCodeMeanings.
std::string exit_codes_text() {
    std::string s;
    for (const auto& [code, what] : kExitCodeMeanings)
        s += fmt::format("{}{} {}", s.empty() ? "" : "; ", static_cast<int>(code),
                fmt::format(fmt::runtime(what), fmt::arg("untested", untested_statuses())));
    return s;
}

/// One "NAME  what" line per status of kStatuses, in table order, each starting with `indent`
/// and the names padded to one column: --list-statuses=text and --help's list.
std::string status_lines(std::string_view indent) {
    std::size_t width = 0;
    for (const StatusRow& s : kStatuses) width = std::max(width, s.name.size());
    std::string out;
    for (const StatusRow& s : kStatuses) out += fmt::format("{}{:<{}}  {}\n", indent, s.name, width, s.what);
    return out;
}

std::string footer() {
    return fmt::format(
            "\n{}\n"
            "BACKENDS: {}\n"
            "NOT IN THIS BUILD (their cases are SKIPPED with the reason): {}\n"
            "FAULT INJECTION (the reference with one bug, for self-tests): {}\n"
            "TEST-ONLY BACKENDS (for sdpabench's own tests; {} hang or crash without --isolate): {}\n\n"
            "OUTPUT: one line per case, '<idx>:<STATUS>[ (reason)] (<ms> ms) __REPRO: <repro>', then\n"
            "  '{}'\n"
            "  (ref_fallback: the cases whose vendor ran a matmul or softmax on a reference implementation, each\n"
            "  with a 'reference fallback:' line).\n"
            "  Every result names what ran: the vendor's implementation (-v lists the ones inside it and the\n"
            "  tensors as bound; the reports' impl, ref_fallback, ref_parts fields). benchdnn's option names\n"
            "  work where sdpabench has the option (--max-ms-per-prb, --fix-times-per-prb, --repeats-per-prb,\n"
            "  -vN, --start, --match, --impl, --skip-impl; docs/benchdnn.md).\n"
            "  Statuses (--list-statuses prints them; docs/output.md#statuses):\n"
            "{}"
            "  With --expect: XFAIL (the expected status came), XPASS (an expected failure PASSED), NOT_APPLICABLE\n"
            "  (PASSED where the entry's platform requirements do not hold).\n"
            "EXIT: {}. The lowest that applies wins.\n",
            case_language_help(), fmt::join(backend_names(), ", "),
            missing_backend_names().empty() ? std::string("none") : fmt::format("{}", fmt::join(missing_backend_names(), "; ")),
            fmt::join(family_names(kFaultyPrefix), ", "), backend_list(backends_needing_isolate()),
            fmt::join(family_names(kTestPrefix), ", "), summary_pattern(), status_lines("    "), exit_codes_text());
}

/// Performance and report options (issue 4): timing knobs, template, reports, progress.
void add_perf_options(CLI::App& app, GlobalOptions& o, std::string& perf_template, std::vector<std::string>& reports) {
    const char* g = "Performance and reports";
    app.add_option("--max-ms-per-case,--max-ms-per-prb", o.timing.max_ms_per_case,
               "P/CP: wall-clock budget of one case's timed loop in ms (flushes included, warm-up not): timed runs "
               "go on while it lasts; the loop stops at the first run past it once --min-runs runs are in, so "
               "--min-runs wins over the budget and a slow case can take min-runs x its time")
            ->check(CLI::Validator(
                    [](std::string& s) -> std::string {
                        const auto v = parse_number<double>(s);
                        if (!v || !(*v > 0) || !std::isfinite(*v)) return fmt::format("'{}' is not a number of ms > 0", s);
                        return {};
                    },
                    "MS"))
            ->capture_default_str()->group(g);
    app.add_option("--min-runs", o.timing.min_runs, "P/CP: at least this many timed runs, even past --max-ms-per-case")
            ->check(CLI::Range(1, std::numeric_limits<int>::max()))->capture_default_str()->group(g);
    app.add_option("--fix-times,--fix-times-per-prb", o.timing.fix_times,
               "P/CP: exactly N timed runs (overrides --max-ms-per-case and --min-runs)")
            ->check(CLI::Range(1, std::numeric_limits<int>::max()))->group(g);
    app.add_flag("--cold-cache", o.timing.cold_cache,
               "P/CP: write a buffer of 2x the last-level cache before every timed run (not timed)")->group(g);
    app.add_option("--perf-template", perf_template,
               fmt::format("P/CP: perf line per timed case; fields {}; modifiers on time/Gflops/Tflops: - min, 0 "
                           "median (also no modifier), + max (rates at that time); 'csv' = the default; the header "
                           "line names each column with its unit ('def', benchdnn's name of its default, is this default too)", perf_template_fields()))
            ->capture_default_str()->group(g);
    std::string formats;
    for (const ReportFormat& f : report_formats()) formats += fmt::format("; {}: {}", f.name, f.what);
    app.add_option("--report", reports,
               fmt::format("Also write FORMAT:PATH (repeatable), FORMAT {}{} (docs/perf_and_reports.md, "
                           "docs/tracking.md)", report_format_choices(), formats))
            ->allow_extra_args(false)->group(g);
    app.add_option("--noisy-cv", o.timing.noisy_cv,
               "P/CP: a timed case whose runs' coefficient of variation (standard deviation / mean, the "
               "report's cv) is above this is marked noisy (the report's noisy; scripts/history flags changes "
               "next to noisy runs)")
            ->check(CLI::NonNegativeNumber)->capture_default_str()->group(g);
    app.add_flag("--no-progress", o.no_progress, "No progress line on stderr (shown only when stderr is a terminal)")
            ->group(g);
}

/// Which cases run and on which implementations (issue 32): benchdnn's --start, --match,
/// --repeats-per-prb, --impl and --skip-impl.
void add_selection_options(CLI::App& app, GlobalOptions& o) {
    const char* g = "Selecting cases (benchdnn's options)";
    // One --impl / --skip-impl pattern: fnmatch would read an unclosed '[' as a literal, a pattern
    // that names nothing.
    const CLI::Validator impl_pattern(
            [](std::string& s) -> std::string {
                const auto open = s.find('[');
                if (open != std::string::npos && s.find(']', open + 2) == std::string::npos)
                    return fmt::format("'{}' is not a pattern: its '[' opens a bracket expression that no ']' closes", s);
                return {};
            },
            "PATTERN");
    app.add_option("--start", o.start,
               "Run only the cases of index N and after (the index of the whole run, as the status lines and "
               "reports number them; benchdnn's --start): resumes a run that stopped at case N")
            ->option_text("N")
            ->check(CLI::Validator(
                    [](std::string& s) -> std::string {
                        if (s.empty() || s.size() > 15 || s.find_first_not_of("0123456789") != std::string::npos)
                            return fmt::format("'{}' is not a case index (a whole number >= 0)", s);
                        return {};
                    },
                    "N"))
            ->group(g);
    app.add_option("--match", o.match,
               "Run only the cases whose id (their repro line; FILE:LINE for a line that did not parse) or canonical "
               "form (every knob spelled, defaults included: --match=f32 finds the cases of the default type) the "
               "regular expression REGEX finds (ECMAScript syntax, a search anywhere; benchdnn's --match). Selecting no "
               "case fails the run (exit 3) unless --fail-on leaves out 'empty'")
            ->option_text("REGEX")
            ->check(CLI::Validator(
                    [](std::string& s) -> std::string {
                        try {
                            std::regex re(s);
                        } catch (const std::regex_error& e) {
                            return fmt::format("'{}' is not a regular expression: {}", s, e.what());
                        }
                        return {};
                    },
                    "REGEX"))
            ->group(g);
    app.add_option("--repeats-per-prb", o.repeats,
               "Run every case N times in a row (benchdnn's --repeats-per-prb: to reproduce a sporadic failure); "
               "the repeats are cases of their own, with ids ' #2', ' #3', ...")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}))->option_text("N")->group(g);
    app.add_option("--impl", o.impls.impl,
               "Run a case only when its implementation (the vendor's name, shown by -v and in the reports' "
               "'impl' field) or one inside it matches a pattern of LIST (comma-separated; a glob with * ? [ ], "
               "else a substring, as benchdnn's --impl); the others are SKIPPED with the name they got")
            ->delimiter(',')->allow_extra_args(false)->option_text("LIST")
            ->check(impl_pattern)
            ->group(g);
    app.add_option("--skip-impl", o.impls.skip,
               "SKIP a case whose implementation or one inside it matches a pattern of LIST (as --impl; "
               "--skip-impl=ref skips the cases where oneDNN ran a reference kernel, as benchdnn's does)")
            ->delimiter(',')->allow_extra_args(false)->option_text("LIST")
            ->check(impl_pattern)
            ->group(g);
}

/// Parses the template and report specs into `o`; returns an error sentence or "".
std::string finish_perf_options(GlobalOptions& o, const std::string& perf_template,
        const std::vector<std::string>& reports) {
    std::string err;
    const bool named_default = perf_template == "csv" || perf_template == "def";  // benchdnn's names
    auto t = parse_perf_template(named_default ? kDefaultPerfTemplate : perf_template, &err);
    if (!t) return err;
    o.perf_template = std::move(*t);
    for (const auto& r : reports) {
        auto spec = parse_report_spec(r, &err);
        if (!spec) return err;
        // One spelling per file: absolute first (weakly_canonical leaves a relative path whose
        // first component does not exist relative), then symlinks and "." / ".." resolved.
        const auto canonical = [](const std::string& path) {
            std::error_code ec;
            auto c = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
            return ec ? std::filesystem::path(path).lexically_normal() : c;
        };
        const auto canon = canonical(spec->path);
        for (const auto& other : o.reports)
            if (other.path == spec->path || canonical(other.path) == canon)
                return fmt::format("--report: '{}' and '{}' write the same file", report_name(other), report_name(*spec));
        o.reports.push_back(std::move(*spec));
    }
    return "";
}

/// Parses --tags, --shard and --fail-on into `o`; returns an error sentence or "".
std::string finish_run_options(GlobalOptions& o, const std::vector<std::string>& tags, const std::string& shard,
        const std::string& fail_on) {
    for (const auto& t : tags) {
        const auto colon = t.find(':');
        if (colon == std::string::npos || colon == 0)
            return fmt::format("--tags: '{}' is not KEY:VALUE (e.g. --tags=machine:ci-3; a comma separates two tags)", t);
        std::string key = t.substr(0, colon);
        for (const auto& [k, v] : o.tags)
            if (k == key) return fmt::format("--tags: key '{}' is given twice ('{}:{}' and '{}')", key, k, v, t);
        o.tags.emplace_back(std::move(key), t.substr(colon + 1));
    }
    std::string err;
    if (!shard.empty()) {
        const auto sh = parse_shard(shard, &err);
        if (!sh) return err;
        o.shard = *sh;
    }
    const auto f = parse_fail_on(fail_on, &err);
    if (!f) return err;
    o.fail_on = *f;
    return "";
}

/// What some options hold as given, before finish_run_options and finish_perf_options check it
/// into GlobalOptions, and the --list-* options (each prints a table and exits).
struct OptionText {
    std::string list_knobs;     ///< --list-knobs=md|tsv|json
    std::string list_statuses;  ///< --list-statuses[=text|json]
    bool list_torch = false;    ///< --list-torch-variants
    std::string perf_template{kDefaultPerfTemplate};
    std::vector<std::string> reports;
    std::vector<std::string> tags;
    std::string shard;
    std::string fail_on = "default";
};

/// -v, --version and the --list-* options.
void add_general_options(CLI::App& app, GlobalOptions& o, OptionText& t) {
    app.add_flag("-v,--verbose", o.verbose, "Per case: the implementation the vendor ran (and the ones inside it, "
            "with their times), every tensor's dims and strides as bound, backend notes and the worst |err|/bound of every "
            "output, even when it passes. -vN or --verbose=N sets the level N (benchdnn's spelling); -v -v adds one. "
            "-v2 adds the bound's terms at each output's worst element, -v3 every timed run's time, -v4 the vendors' own "
            "logs (oneDNN's verbose lines, the cuDNN frontend's log); higher levels are -v4 (docs/output.md#verbosity)")
            ->check(CLI::Validator(
                    [](std::string& s) -> std::string {  // a plain -v gives "true"
                        if (s == "true" || (!s.empty() && s.size() <= 2 && s.find_first_not_of("0123456789") == std::string::npos))
                            return {};
                        return fmt::format("'{}' is not a verbosity level (0 to 99)", s);
                    },
                    "N"));
    app.add_flag("--version", o.version, "Print sdpabench's version, each backend's library version, runtime and CPU ISA, and exit");
    app.add_option("--list-knobs", t.list_knobs,
            "Print the case language's knob table and exit: md (a markdown table, README's), tsv "
            "(NAME<TAB>ACCEPTED<TAB>DEFAULT per knob), json (an array of {name, choices, default, what, run_knob, "
            "scope} per knob, in table order)")
        ->check(CLI::IsMember({"md", "tsv", "json"}));
    app.add_option("--list-statuses", t.list_statuses,
            "Print the per-case statuses and exit: text (NAME and what it means, one per line; the default), json "
            "(an array of {name, what, error} per status, in table order; error: a case wrong or not tested as asked, which fails the run by default)")
        ->expected(0, 1)->default_str("text")->check(CLI::IsMember({"text", "json"}));
    app.add_flag("--list-torch-variants", t.list_torch,
            "Print the PyTorch backend's variant table (each torch:VARIANT's operator and conventions, "
            "README's) as markdown and exit");
}

/// --emit-onednn-json, the memory guards, a results store's waiting and --timeout-per-case.
void add_resource_options(CLI::App& app, GlobalOptions& o) {
    app.add_option("--emit-onednn-json", o.emit_onednn_json,
            "For every case, write the graph sdpabench builds for oneDNN as a benchdnn --graph JSON file "
            "into DIR (named after the case; fwd_bwd: NAME_fwd.json and NAME_bwd.json; run it with 'benchdnn --graph "
            "--case=FILE' or '--case=FILE' here)")
        ->option_text("DIR");

    app.add_option("--max-memory", o.max_memory,
               "Memory guard: SKIP a case whose estimated host memory exceeds this many bytes (whole "
               "numbers with binary units: 8G, 512M, 1536M; 0: no limit). Default: 80% of MemAvailable (and of ulimit -v/-d)")
            ->transform(CLI::AsSizeValue(false));
    app.add_option("--max-device-memory", o.max_device_memory,
               "Device-memory guard of the GPU backends: SKIP a case whose estimated device memory exceeds this many "
               "bytes (as --max-memory). Default: 90% of the device's free memory when the case runs. A device out of "
               "memory during a case is SKIPPED too")
            ->transform(CLI::AsSizeValue(false));
    app.add_option("--store-wait", o.report_options.store_wait_s,
               "Seconds a results store (--report=sqlite|postgresql) may be away before a case goes to its spool file; "
               "it is retried with backoff meanwhile, then every SECONDS (also SQLite's busy timeout and the "
               "PostgreSQL connect, lock and statement timeouts; at most a day; docs/tracking.md)")
            ->check(seconds_check(86400, "from 0 to 86400 (a day; "))
            ->capture_default_str();
    app.add_option("--store-spool", o.report_options.spool_dir,
               "The folder of a results store's spool file (the cases it could not take; load with "
               "'sdpabench-store ingest'). Default: the folder of the first csv, jsonl or junit report, else the "
               "working directory")
            ->option_text("DIR");
    app.add_option("--timeout-per-case", o.timeout_per_case,
               "Seconds a case may take; a case past it is killed and FAILED (timeout). Runs each case in a "
               "child process, as --isolate does (0: no timeout)")
            ->check(seconds_check(INFINITY, ">= 0 ("));
}

/// --expect, --tags, --shard, --fail-on, --minimize and --minimize-max-runs: what CI runs set.
void add_ci_options(CLI::App& app, GlobalOptions& o, OptionText& t) {
    app.add_option("--expect", o.expect_file,
            "Expected results: a file of one JSON object per line, {\"match\": GLOB over case ids, \"backend\": GLOB "
            "(optional), \"status\": \"FAILED\", \"failure\": GLOB over its OUTPUT:CHECK failures (optional: XFAIL only "
            "when every failure matches), \"reason\": \"vendor bug ...\", \"requires\": {\"cpu_flags\": "
            "\"amx_bf16\", \"onednn\": \"3.13\"}, \"allow_xpass\": false}; the expected status is XFAIL (does not fail "
            "the run), a PASS (or MISTRUSTED where FAILED was expected) is XPASS (fails it unless allowed), a PASS "
            "where \"requires\" does not hold is NOT_APPLICABLE")
        ->option_text("FILE");
    app.add_option("--tags", t.tags,
            "Labels for the run context, KEY:VALUE (repeatable or comma-separated: --tags=machine:ci-3,build:nightly); "
            "written to the jsonl context record, the csv comment lines and the JUnit properties. For the results "
            "store and scripts/history (docs/tracking.md): rev:N orders runs, machine:NAME names the machine, run:ID "
            "names the run (the same in every shard of one run)")
        ->delimiter(',')->allow_extra_args(false)->option_text("KEY:VALUE");
    app.add_option("--shard", t.shard,
            "Run only shard I of N of the expanded cases (0 <= I < N), balanced by estimated cost and "
            "deterministic: N processes with --shard=0/N ... --shard=N-1/N run every case once; ids and "
            "indices stay those of the whole run; scripts/merge_reports.py joins their reports")
        ->option_text("I/N");
    app.add_option("--fail-on", t.fail_on,
            fmt::format("Statuses that fail the run, comma-separated, replacing the default (FAILED always fails): {}. "
                        "'default' = {}; e.g. --fail-on=default,skipped,mistrusted",
                    fail_on_names(), fail_on_spelling(FailOn{})))
        ->capture_default_str()->option_text("LIST");
    CLI::Option* minimize = app.add_flag("--minimize", o.minimize,
            "Shrink every FAILED case (not a timeout, a crash or an XFAIL) to the smallest case that still fails "
            "the same way (the same output and check): sizes first, then knobs toward the plainest case; prints "
            "'minimized (N runs ...): REPRO' under the case and reports it (jsonl 'minimized', JUnit __MINIMIZED)");
    app.add_option("--minimize-max-runs", o.minimize_max_runs,
            "Cases one minimization may run before it stops with what it has (default 400; needs --minimize)")
        ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}))->option_text("N")
        ->needs(minimize);
}

/// --result-fd, --threads, --serve-cases, --isolate and --no-rerun-failed: the processes cases run in.
void add_process_options(CLI::App& app, GlobalOptions& o) {
    app.add_option("--result-fd", o.result_fd,
            "Write the result of the run's one case to this open file descriptor as its JSONL record in CBOR (for a "
            "program that runs one case per process and reads its result; the run must have exactly one case)")
        ->check(CLI::Range(0, std::numeric_limits<int>::max()))->option_text("FD");
    app.add_option("--threads", o.threads,
            "Run on N cores: the vendor's threads (oneDNN's TBB, libtorch's OpenMP) and the reference's alike, by "
            "narrowing the process's CPU affinity to N of its CPUs (as taskset does) and setting OMP_NUM_THREADS; the "
            "run context records N and each vendor's runtime and the concurrency it reports, each result the cores "
            "its vendor kept busy (vendor_cpu_util). Default: every CPU of the process's affinity mask")
        ->check(CLI::Validator(
                [](std::string& s) -> std::string {
                    const auto n = parse_number<int>(s);
                    if (!n || *n < 1) return fmt::format("'{}' is not a number of threads (a whole number >= 1)", s);
                    return {};
                },
                "N"))
        ->option_text("N");
    app.add_option("--serve-cases", o.serve_fd, "Internal: run as a case worker on this socket (driver/worker.hpp)")
        ->check(CLI::Range(0, std::numeric_limits<int>::max()))->group("");
    app.add_flag("--isolate", o.isolate,
            "Run each case in its own child process: a crash (signal) is FAILED with the signal's name and "
            "the run goes on");
    app.add_flag("--no-rerun-failed", o.no_rerun_failed,
            "Do not rerun a FAILED case of a longer run alone in a fresh process (by default each one is, to tell a "
            "failure of its own from one that depends on the cases before it; each rerun starts the vendor "
            "library again, seconds on a GPU); alone_status stays empty");
}

/// Prints "command line: error: MSG" on stderr; returns kExitUsage.
int usage_error(std::string_view msg) {
    fmt::print(stderr, "command line: error: {}\n", msg);
    return kExitUsage;
}

/// `args` with benchdnn's -vN spelled --verbose=N (CLI11 would read -v2 as -v -2).
std::vector<std::string> with_verbose_levels(std::vector<std::string> args) {
    for (std::string& a : args)
        if (a.size() > 2 && a.starts_with("-v") && a.find_first_not_of("0123456789", 2) == std::string::npos)
            a = "--verbose=" + a.substr(2);
    return args;
}

/// The first argument after argv[0] that is "--OPTION=" with nothing after the '=', OPTION one of
/// `app`'s; "" when none is. CLI11 would take the next argument as its value (an unset shell
/// variable): "--perf-template= --backend=ref" must not run onednn with a template "--backend=ref".
std::string empty_value(CLI::App& app, const std::vector<std::string>& args) {
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a.starts_with("--") && a.ends_with("=") && app.get_option_no_throw(std::string(a.substr(0, a.size() - 1))))
            return args[i];
    }
    return "";
}

/// The --list-* option given: prints its table and returns kExitOk, or kExitUsage (with the
/// message) when anything else is on the command line; nullopt when none was given.
std::optional<int> print_listing(const CLI::App& app, const OptionText& t) {
    const std::vector<std::string> rest = app.remaining();
    if (t.list_torch) {
        if (!rest.empty() || !t.list_knobs.empty() || !t.list_statuses.empty())
            return usage_error(fmt::format("--list-torch-variants prints the variant table and runs nothing; got '{}' "
                    "too", !t.list_knobs.empty() ? "--list-knobs" : !t.list_statuses.empty() ? "--list-statuses" : rest.front()));
        fmt::print("{}", torch_variant_table_md());
        return kExitOk;
    }
    if (!t.list_knobs.empty()) {
        if (!rest.empty() || !t.list_statuses.empty())
            return usage_error(fmt::format("--list-knobs={} prints the knob table and runs nothing; got '{}' too",
                    t.list_knobs, !t.list_statuses.empty() ? "--list-statuses" : rest.front()));
        fmt::print("{}", t.list_knobs == "json" ? knob_table_json() : *knob_table_text(t.list_knobs));
        return kExitOk;
    }
    if (!t.list_statuses.empty()) {
        if (!rest.empty())
            return usage_error(fmt::format("--list-statuses={} prints the status table and runs nothing; got '{}' too",
                    t.list_statuses, rest.front()));
        fmt::print("{}", *status_table_text(t.list_statuses));
        return kExitOk;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> status_table_text(std::string_view format) {
    if (format == "text") return status_lines("");
    if (format != "json") return std::nullopt;
    nlohmann::ordered_json statuses = nlohmann::ordered_json::array();
    for (const StatusRow& s : kStatuses)
        statuses.push_back({{"name", s.name}, {"what", s.what}, {"error", is_error(s.value)}});
    return statuses.dump(2) + "\n";
}

RunLimits run_limits(const GlobalOptions& opts) { return RunLimits{opts.max_memory, opts.impls, opts.max_device_memory}; }

CliOutcome parse_command_line(int argc, char** argv) {
    CliOutcome out;
    CLI::App app{"sdpabench: correctness harness for scaled dot-product attention training kernels\n"
                 "(oneDNN Graph API on the CPU, cuDNN on NVIDIA GPUs, PyTorch's fused SDPA variants through libtorch)\n"
                 "against an independent f32 reference.\n"
                 "Examples:\n"
                 "  sdpabench --dir=bwd --dt=bf16 --mask=causal_br b2hq8hkv2sq128skv256d64\n"
                 "  sdpabench --backend=onednn --batch=cases/ci/smoke.cases\n"
                 "  sdpabench --backend=torch:flash --dir=fwd_t,bwd --mask=causal_tl b1hq8hkv2sq256d64",
            "sdpabench"};
    app.allow_extras();
    app.footer(footer());
    OptionText text;
    add_general_options(app, out.opts, text);
    add_perf_options(app, out.opts, text.perf_template, text.reports);
    add_selection_options(app, out.opts);
    add_resource_options(app, out.opts);
    add_ci_options(app, out.opts, text);
    add_process_options(app, out.opts);
    for (const CLI::Option* opt : app.get_options())
        for (const std::string& n : opt->get_lnames()) out.opts.option_names.push_back("--" + n);
    out.opts.argv.assign(argv, argv + argc);
    std::vector<std::string> args = with_verbose_levels(out.opts.argv);
    if (const std::string a = empty_value(app, args); !a.empty()) {
        out.exit_code = usage_error(fmt::format("{} has an empty value (write {}VALUE)", a, a));
        return out;
    }
    std::vector<char*> arg_ptrs;
    for (std::string& a : args) arg_ptrs.push_back(a.data());
    try {
        app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
    } catch (const CLI::CallForHelp& e) {
        out.exit_code = app.exit(e);
        return out;
    } catch (const CLI::ParseError& e) {
        out.exit_code = usage_error(e.what());
        return out;
    }
    if (const auto code = print_listing(app, text)) {
        out.exit_code = *code;
        return out;
    }
    if (app.count("--max-memory") == 0) out.opts.max_memory = default_memory_limit();
    out.opts.case_tokens = app.remaining();
    std::string err = finish_run_options(out.opts, text.tags, text.shard, text.fail_on);
    if (err.empty()) err = finish_perf_options(out.opts, text.perf_template, text.reports);
    if (!err.empty()) out.exit_code = usage_error(err);
    return out;
}

}  // namespace sdpa
