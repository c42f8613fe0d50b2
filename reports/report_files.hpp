// --report=FORMAT:PATH: which file reporters exist and how to make one.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/reporter.hpp"

namespace sdpa {

/// One --report format: the one list of them, from which parsing, its error messages, --help and
/// make_file_reporter come.
struct ReportFormat {
    std::string_view name;  ///< FORMAT, e.g. "jsonl"
    std::string_view what;  ///< what PATH is and what is written there, for --help
    /// The reporter for PATH; throws std::runtime_error when it cannot be opened.
    std::unique_ptr<Reporter> (*make)(const std::string& path);
};

/// Every format: csv, jsonl, junit (files), sqlite, postgresql (the results store,
/// reports/results_store.hpp).
const std::vector<ReportFormat>& report_formats();

/// The format names joined by '|', for messages: "csv|jsonl|junit|sqlite|postgresql".
std::string report_format_names();

/// One --report request: a report_formats() name and its PATH (a file, or a PostgreSQL URL).
struct ReportSpec {
    std::string format;
    std::string path;
};

/// Parses "FORMAT:PATH" (PATH may contain ':'). Returns nullopt and sets `error` for a missing
/// ':', an unknown format (naming the accepted ones) or an empty path.
std::optional<ReportSpec> parse_report_spec(std::string_view text, std::string* error);

/// The reporter for `spec` (its format's ReportFormat::make); throws std::runtime_error when its
/// file or database cannot be opened.
std::unique_ptr<Reporter> make_file_reporter(const ReportSpec& spec);

/// Flushes `f` and throws std::runtime_error("cannot write report 'PATH': REASON") when the
/// stream has failed (a full disk, /dev/full): a report that silently loses records is worse
/// than a run that stops.
void flush_checked(std::FILE* f, const std::string& path);

}  // namespace sdpa
