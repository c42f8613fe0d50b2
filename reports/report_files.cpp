#include "reports/report_files.hpp"

#include <filesystem>
#include <stdexcept>

#include <cstring>

#include <cerrno>

#include <unistd.h>

#include <fmt/format.h>

#include "core/redact.hpp"
#include "reports/csv_reporter.hpp"
#include "reports/jsonl_reporter.hpp"
#include "reports/junit_reporter.hpp"
#include "reports/results_store.hpp"
#ifdef SDPABENCH_HAVE_STORE
#include "reports/store_reporter.hpp"
#endif

namespace sdpa {

namespace {

template <class R>
std::unique_ptr<Reporter> make(const std::string& path, const ReportOptions&) {
    return std::make_unique<R>(path);
}

template <StoreKind K>
std::unique_ptr<Reporter> make_store(const std::string& target, const ReportOptions& opts) {
#ifdef SDPABENCH_HAVE_STORE
    return std::make_unique<StoreReporter>(StoreUrl{K, target}, opts);
#else
    (void)target;
    (void)opts;
    throw std::runtime_error(fmt::format("--report={}: this build has no results store (configured with "
                                         "-DSDPABENCH_STORE=OFF: docs/tracking.md)", K));
#endif
}

const ReportFormat* find_format(std::string_view name) {
    for (const ReportFormat& f : report_formats())
        if (f.name == name) return &f;
    return nullptr;
}

}  // namespace

const std::vector<ReportFormat>& report_formats() {
    static const std::vector<ReportFormat> t{
        {"csv", "one row per case, a column per result field, after '# KEY: VALUE' context lines", make<CsvReporter>},
        {"jsonl", "a context record, then one JSON object per case (every result field, the per-output checks)",
            make<JsonlReporter>},
        {"junit", "JUnit XML, one testcase per case (CI dashboards), written at the end", make<JunitReporter>},
        {format_as(StoreKind::sqlite), "the results store in an SQLite file (created when absent, appended to)",
            make_store<StoreKind::sqlite>},
        {format_as(StoreKind::postgresql), "the results store in a PostgreSQL database (PATH: a libpq URL or connection "
            "string)", make_store<StoreKind::postgresql>},
    };
    return t;
}

std::string report_format_choices() {
    std::string s;
    for (const ReportFormat& f : report_formats()) s += fmt::format("{}{}", s.empty() ? "" : "|", f.name);
    return s;
}

std::optional<ReportSpec> parse_report_spec(std::string_view text, std::string* error) {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) {
        if (error)
            *error = fmt::format("--report expects FORMAT:PATH (FORMAT {}), got '{}'", report_format_choices(), text);
        return std::nullopt;
    }
    ReportSpec s{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
    if (!find_format(s.format)) {
        if (error) *error = fmt::format("--report: unknown format '{}' (accepted: {})", s.format, report_format_choices());
        return std::nullopt;
    }
    if (s.path.empty()) {
        if (error) *error = fmt::format("--report: empty path in '{}'", text);
        return std::nullopt;
    }
    return s;
}

std::unique_ptr<Reporter> make_file_reporter(const ReportSpec& spec, const ReportOptions& opts) {
    const ReportFormat* f = find_format(spec.format);
    if (!f) throw std::runtime_error(fmt::format("--report: unknown format '{}'", spec.format));
    return f->make(spec.path, opts);
}

std::string report_name(const ReportSpec& spec) { return redact_secrets(fmt::format("{}:{}", spec.format, spec.path)); }

bool is_file_format(std::string_view format) {
    return format != format_as(StoreKind::sqlite) && format != format_as(StoreKind::postgresql);
}

std::string spool_folder(const ReportOptions& opts, const std::vector<ReportSpec>& specs) {
    if (!opts.spool_dir.empty()) return opts.spool_dir;
    for (const ReportSpec& s : specs)
        if (is_file_format(s.format) && !s.path.starts_with("/dev/") && !s.path.starts_with("/proc/")) {
            const std::filesystem::path parent = std::filesystem::path(s.path).parent_path();
            return parent.empty() ? "." : parent.string();
        }
    return ".";
}

std::FILE* open_report(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "a");  // appends go to the end, wherever start_report left it
    if (!f) throw std::runtime_error(fmt::format("cannot write report '{}': {}", path, std::strerror(errno)));
    return f;
}

void start_report(std::FILE* f, const std::string& path) {
    if (::ftruncate(::fileno(f), 0) != 0 && errno != EINVAL)
        throw std::runtime_error(fmt::format("cannot write report '{}': {}", path, std::strerror(errno)));
}

void flush_checked(std::FILE* f, const std::string& path) {
    if (std::fflush(f) != 0 || std::ferror(f))
        throw std::runtime_error(fmt::format("cannot write report '{}': {}", path, std::strerror(errno)));
}

}  // namespace sdpa
