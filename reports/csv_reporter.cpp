#include "reports/csv_reporter.hpp"
#include "reports/report_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "reports/escape.hpp"
#include "driver/case_parser.hpp"
#include "reports/jsonl_reporter.hpp"

namespace sdpa {

std::string csv_header() {
    return "idx,id,status,expect,reason,repro,backend,engine,mode,dir,dt,mask,prb,name,case_ms,flops,bytes,runs,min_ms,"
           "median_ms,mean_ms,max_ms,compile_ms,gflops,gflops_best,gbytes_per_s,worst_output,worst_ratio,dropout,"
           "dropout_keep_p_value,dropout_pairs_p_value";
}

std::string csv_row(const CaseResult& r) {
    const CaseInfo& i = r.info;
    std::vector<std::string> f{fmt::format("{}", r.index), r.id, fmt::format("{}", r.status),
        r.expect.kind == Expected::none ? std::string() : fmt::format("{}", r.expect.kind), r.reason, r.repro, i.backend,
        i.engine, i.mode, i.dir, i.dt, i.mask, i.prb, i.name, fmt::format("{}", r.ms), fmt::format("{}", r.flops),
        fmt::format("{}", r.bytes)};
    if (r.perf) {
        const PerfResult& p = *r.perf;
        f.push_back(fmt::format("{}", p.time.runs));
        for (double v : {p.time.min_ms, p.time.median_ms, p.time.mean_ms, p.time.max_ms, p.compile_ms, p.gflops_at_median,
                     p.gflops_at_min, p.gbytes_per_s_at_median})
            f.push_back(fmt::format("{}", v));
    } else {
        f.insert(f.end(), 9, "");
    }
    const OutputCheck* worst = nullptr;
    for (const auto& c : r.checks)
        if (!worst || !(c.worst_ratio <= worst->worst_ratio)) worst = &c;  // NaN ratios win
    f.push_back(worst ? fmt::format("{}", worst->output) : "");
    f.push_back(worst ? fmt::format("{}", worst->worst_ratio) : "");
    f.push_back(i.dropout);
    const bool stats = r.dropout && r.dropout->stats.heads > 0;
    f.push_back(stats ? fmt::format("{}", r.dropout->stats.keep.p_value) : "");
    f.push_back(stats ? fmt::format("{}", r.dropout->stats.pairs.p_value) : "");
    std::string line;
    for (std::size_t k = 0; k < f.size(); ++k) {
        if (k) line += ',';
        line += csv_field(f[k]);
    }
    return line;
}

CsvReporter::CsvReporter(const std::string& path) : f_(std::fopen(path.c_str(), "w")), path_(path) {
    if (!f_) throw std::runtime_error(fmt::format("cannot write report '{}': {}", path, std::strerror(errno)));
}

void CsvReporter::header() {
    if (header_done_) return;
    fmt::print(f_, "{}\n", csv_header());
    header_done_ = true;
}

void CsvReporter::begin(const RunContext& ctx) {
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
