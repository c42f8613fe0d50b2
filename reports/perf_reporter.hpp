// Perf lines on the console (P and CP modes): the header once, then one --perf-template line
// per timed case, after its status line.
#pragma once

#include <cstdio>

#include "reports/perf_template.hpp"
#include "reports/reporter.hpp"

namespace sdpa {

/// Prints perf_header() before the first timed case and render_perf_line() for every case
/// with timings (r.perf); cases without timings print nothing.
class PerfLineReporter final : public Reporter {
public:
    PerfLineReporter(std::FILE* out, PerfTemplate t) : out_(out), t_(std::move(t)) {}
    void on_case(const CaseResult& r) override;
    void end(const Summary&) override {}

private:
    std::FILE* out_;
    PerfTemplate t_;
    bool header_done_ = false;
};

}  // namespace sdpa
