// CSV report: a header row, then one row per case, written and flushed as each case finishes.
#pragma once

#include <cstdio>
#include <string>

#include "reports/reporter.hpp"

namespace sdpa {

/// The header row: idx,status,reason,repro,backend,engine,mode,dir,dt,mask,prb,name,case_ms,
/// flops,bytes,runs,min_ms,median_ms,mean_ms,max_ms,compile_ms,gflops,gflops_best,gbytes_per_s,
/// worst_output,worst_ratio.
std::string csv_header();
/// The row of one case in csv_header() order, fields escaped (csv_field); timing columns empty
/// when the case was not timed; worst_output/worst_ratio: the output with the largest
/// |err|/bound (empty when nothing was checked). Numbers print round-trippably ("nan"/"inf" for
/// non-finite values).
std::string csv_row(const CaseResult& r);

/// Writes csv_header() then csv_row() of every case to a file.
class CsvReporter final : public Reporter {
public:
    /// Opens (truncates) `path`; throws std::runtime_error when it cannot. The header row follows
    /// the context's comment lines ("# KEY: VALUE", begin()) or, without them, comes first.
    explicit CsvReporter(const std::string& path);
    /// Writes the run context as '#' comment lines (context_fields), then the header row.
    void begin(const RunContext& ctx) override;
    ~CsvReporter() override;
    CsvReporter(const CsvReporter&) = delete;
    CsvReporter& operator=(const CsvReporter&) = delete;
    void on_case(const CaseResult& r) override;
    void end(const Summary& s) override;

private:
    void header();  ///< the header row, once
    std::FILE* f_ = nullptr;
    std::string path_;  ///< for error messages
    bool header_done_ = false;
};

}  // namespace sdpa
