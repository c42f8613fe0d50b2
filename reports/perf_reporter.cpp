#include "reports/perf_reporter.hpp"

#include <fmt/format.h>

namespace sdpa {

void PerfLineReporter::on_case(const CaseResult& r) {
    if (!r.perf) return;
    if (!header_done_) {
        fmt::print(out_, "{}\n", perf_header(t_));
        header_done_ = true;
    }
    fmt::print(out_, "{}\n", render_perf_line(t_, r));
    std::fflush(out_);
}

}  // namespace sdpa
