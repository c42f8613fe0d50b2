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

/// One report format of the registry.
struct ReportFormat {
    std::string_view name;  ///< FORMAT of --report=FORMAT:PATH
    std::string_view what;  ///< what the file (or store) holds, for --help and docs/perf_and_reports.md
    /// Opens `path` (a file is truncated; a store is created when absent and appended to); throws
    /// std::runtime_error naming it when it cannot.
    std::unique_ptr<Reporter> (*make)(const std::string& path);
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
std::unique_ptr<Reporter> make_file_reporter(const ReportSpec& spec);

/// Flushes `f` and throws std::runtime_error("cannot write report 'PATH': REASON") when the
/// stream has failed (a full disk, /dev/full): a report that silently loses records is worse
/// than a run that stops.
void flush_checked(std::FILE* f, const std::string& path);

}  // namespace sdpa
