// The progress line on a terminal: "[k/N] passed p failed f  eta 0:42  <case>", redrawn in
// place on stderr while the cases run.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "reports/reporter.hpp"

namespace sdpa {

/// "m:ss" (or "h:mm:ss" from one hour) for a duration in seconds, rounded down; "-:--" when
/// unknown (negative).
std::string format_eta(double seconds);

/// The progress text (no control characters): "[k/N] passed p failed f  eta E  LABEL", where k
/// cases of N are done, p passed (PASSED or MISTRUSTED), f failed (FAILED, UNIMPLEMENTED,
/// INVALID_ARGUMENTS), E = elapsed / k * (N - k) ("-:--" before the first case ends), LABEL
/// the running case, cut to `width` columns overall (0: no limit).
std::string progress_text(std::size_t done, std::size_t total, std::size_t passed, std::size_t failed,
        double elapsed_s, const std::string& label, std::size_t width);

/// Draws the progress line on `out` (a terminal) before every case and erases it before the
/// other reporters print, so status lines on the same terminal stay intact. Must come first
/// in the fan-out.
class ProgressReporter final : public Reporter {
public:
    ProgressReporter(std::FILE* out, std::size_t total);
    void on_start(std::size_t index, std::string_view label) override;
    void on_case(const CaseResult& r) override;
    void end(const Summary& s) override;

private:
    void erase();
    std::FILE* out_;
    std::size_t total_, done_ = 0, passed_ = 0, failed_ = 0;
    std::chrono::steady_clock::time_point t0_;
    bool drawn_ = false;
};

}  // namespace sdpa
