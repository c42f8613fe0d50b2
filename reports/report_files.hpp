// --report=FORMAT:PATH: the registry of report formats (the one place that knows which file
// reporters exist, as backends/registry.hpp is for backends) and how to make one.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/reporter.hpp"

namespace sdpa {

/// What the reporters of --report take besides their PATH: the results store's patience and spool
/// (reports/store_reporter.hpp).
struct ReportOptions {
    /// --store-wait: seconds a results store may stay unreachable (retried with backoff) before a
    /// case goes to its spool; also SQLite's busy timeout and libpq's connect timeout.
    double store_wait_s = 60;
    /// --store-spool: the folder of a store's spool file; "" = the folder of the first csv, jsonl
    /// or junit report of the run, else the working directory (spool_folder()).
    std::string spool_dir;
};

/// One report format of the registry.
struct ReportFormat {
    std::string_view name;  ///< FORMAT of --report=FORMAT:PATH
    std::string_view what;  ///< what the file (or store) holds, for --help and docs/perf_and_reports.md
    /// Opens `path` (a file is truncated; a store is created when absent and appended to); throws
    /// std::runtime_error naming it when it cannot (a store that cannot be reached is not that:
    /// its cases wait in its spool).
    std::unique_ptr<Reporter> (*make)(const std::string& path, const ReportOptions& opts);
};

/// Every report format, in --help order: csv, jsonl, junit (files), sqlite, postgresql (the results
/// store, reports/results_store.hpp).
const std::vector<ReportFormat>& report_formats();

/// "csv|jsonl|junit|sqlite|postgresql": the accepted FORMATs, for messages and --help.
std::string report_format_choices();

/// One --report request: a format of report_formats() and its PATH (a file, or a PostgreSQL URL).
struct ReportSpec {
    std::string format;
    std::string path;
};

/// Parses "FORMAT:PATH" (PATH may contain ':'). Returns nullopt and sets `error` for a missing
/// ':', an unknown format (naming the accepted ones) or an empty path.
std::optional<ReportSpec> parse_report_spec(std::string_view text, std::string* error);

/// The reporter of spec's format for its path; throws std::runtime_error when its file or database
/// cannot be opened (or, a programming error, the format is not in the registry).
std::unique_ptr<Reporter> make_file_reporter(const ReportSpec& spec, const ReportOptions& opts);

/// "FORMAT:PATH" of `spec` with its secrets redacted (core/redact.hpp): how messages name a report.
std::string report_name(const ReportSpec& spec);

/// True for the formats that write a file (csv, jsonl, junit), false for the results stores.
bool is_file_format(std::string_view format);

/// The folder a store's spool goes to: `opts.spool_dir` when given, else the folder of the first
/// file report of `specs` that is not a device (/dev/stdout, /dev/full: no folder of reports),
/// else ".".
std::string spool_folder(const ReportOptions& opts, const std::vector<ReportSpec>& specs);

/// Opens report file `path` for writing without emptying it yet (a run refused before its first
/// case leaves an earlier report of that name whole; start_report empties it); throws
/// std::runtime_error("cannot write report 'PATH': REASON") when it cannot be opened.
std::FILE* open_report(const std::string& path);

/// Empties the report file `f` (opened by open_report) before its first line: a regular file is
/// truncated; a device or pipe (/dev/stdout, /dev/full) is left as it is. Throws as flush_checked.
void start_report(std::FILE* f, const std::string& path);

/// Flushes `f` and throws std::runtime_error("cannot write report 'PATH': REASON") when the
/// stream has failed (a full disk, /dev/full): a report that silently loses records is worse
/// than a run that stops.
void flush_checked(std::FILE* f, const std::string& path);

}  // namespace sdpa
