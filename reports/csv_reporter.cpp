#include "reports/csv_reporter.hpp"
#include "reports/report_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "reports/escape.hpp"
#include "reports/jsonl_reporter.hpp"
#include "reports/result_fields.hpp"

namespace sdpa {

std::string csv_header() {
    std::string s;
    for (const auto& f : result_fields())
        if (f.column_field) s += (s.empty() ? "" : ",") + f.column;
    return s;
}

std::string csv_row(const CaseResult& r) {
    std::string line;
    bool first = true;
    for (const auto& f : result_fields()) {
        if (!f.column_field) continue;
        if (!first) line += ',';
        first = false;
        line += csv_field(csv_text(f.get(r)));
    }
    return line;
}

CsvReporter::CsvReporter(const std::string& path) : f_(open_report(path)), path_(path) {}

void CsvReporter::header() {
    if (header_done_) return;
    fmt::print(f_, "{}\n", csv_header());
    header_done_ = true;
}

void CsvReporter::begin(const RunContext& ctx) {
    start_report(f_, path_);
    for (const auto& [key, value] : context_fields(ctx))  // one printable line each (\n, \r, \xNN escaped)
        fmt::print(f_, "# {}: {}\n", escape_for_message(key), escape_for_message(value));
    header();
    flush_checked(f_, path_);
}

CsvReporter::~CsvReporter() {
    if (f_) std::fclose(f_);
}

void CsvReporter::on_case(const CaseResult& r) {
    header();
    fmt::print(f_, "{}\n", csv_row(r));
    flush_checked(f_, path_);
}

void CsvReporter::end(const Summary&) {
    header();
    flush_checked(f_, path_);
}

}  // namespace sdpa
