// --report=FORMAT:PATH: which file reporters exist and how to make one.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "reports/reporter.hpp"

namespace sdpa {

/// One --report request: format ("csv", "jsonl" or "junit") and file path.
struct ReportSpec {
    std::string format;
    std::string path;
};

/// Parses "FORMAT:PATH" (PATH may contain ':'). Returns nullopt and sets `error` for a missing
/// ':', an unknown format (naming the accepted ones) or an empty path.
std::optional<ReportSpec> parse_report_spec(std::string_view text, std::string* error);

/// The reporter for `spec` (CsvReporter, JsonlReporter or JunitReporter); throws
/// std::runtime_error when its file cannot be opened.
std::unique_ptr<Reporter> make_file_reporter(const ReportSpec& spec);

/// Flushes `f` and throws std::runtime_error("cannot write report 'PATH': REASON") when the
/// stream has failed (a full disk, /dev/full): a report that silently loses records is worse
/// than a run that stops.
void flush_checked(std::FILE* f, const std::string& path);

}  // namespace sdpa
