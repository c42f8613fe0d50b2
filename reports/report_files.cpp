#include "reports/report_files.hpp"

#include <stdexcept>

#include <cstring>

#include <cerrno>

#include <fmt/format.h>

#include "reports/csv_reporter.hpp"
#include "reports/jsonl_reporter.hpp"
#include "reports/junit_reporter.hpp"

namespace sdpa {

std::optional<ReportSpec> parse_report_spec(std::string_view text, std::string* error) {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) {
        if (error) *error = fmt::format("--report expects FORMAT:PATH (FORMAT csv|jsonl|junit), got '{}'", text);
        return std::nullopt;
    }
    ReportSpec s{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
    if (s.format != "csv" && s.format != "jsonl" && s.format != "junit") {
        if (error) *error = fmt::format("--report: unknown format '{}' (accepted: csv|jsonl|junit)", s.format);
        return std::nullopt;
    }
    if (s.path.empty()) {
        if (error) *error = fmt::format("--report: empty path in '{}'", text);
        return std::nullopt;
    }
    return s;
}

std::unique_ptr<Reporter> make_file_reporter(const ReportSpec& spec) {
    if (spec.format == "csv") return std::make_unique<CsvReporter>(spec.path);
    if (spec.format == "jsonl") return std::make_unique<JsonlReporter>(spec.path);
    return std::make_unique<JunitReporter>(spec.path);
}

void flush_checked(std::FILE* f, const std::string& path) {
    if (std::fflush(f) != 0 || std::ferror(f))
        throw std::runtime_error(fmt::format("cannot write report '{}': {}", path, std::strerror(errno)));
}

}  // namespace sdpa
