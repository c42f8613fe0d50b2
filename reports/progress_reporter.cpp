#include "reports/progress_reporter.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

namespace sdpa {

std::string format_eta(double seconds) {
    if (seconds < 0) return "-:--";
    const auto s = static_cast<long long>(seconds);
    if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string progress_text(std::size_t done, std::size_t total, std::size_t passed, std::size_t failed,
        double elapsed_s, const std::string& label, std::size_t width) {
    const double eta = done == 0 ? -1.0 : elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
    std::string s = fmt::format("[{}/{}] passed {} failed {}  eta {}  {}", done, total, passed, failed, format_eta(eta), label);
    if (width > 0 && s.size() > width) s.resize(width);
    return s;
}

ProgressReporter::ProgressReporter(std::FILE* out, std::size_t total)
    : out_(out), total_(total), t0_(std::chrono::steady_clock::now()) {}

void ProgressReporter::erase() {
    if (!drawn_) return;
    fmt::print(out_, "\r\033[K");
    std::fflush(out_);
    drawn_ = false;
}

void ProgressReporter::on_start(std::size_t, std::string_view label) {
    winsize ws{};
    const std::size_t width = ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 0;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    fmt::print(out_, "\r\033[K{}", progress_text(done_, total_, passed_, failed_, elapsed, std::string(label), width));
    std::fflush(out_);
    drawn_ = true;
}

void ProgressReporter::on_case(const CaseResult& r) {
    erase();
    ++done_;
    // As the summary counts: an XFAIL or NOT_APPLICABLE is neither, an XPASS a failure.
    if (r.expect.kind == Expected::xpass && !r.expect.allow_xpass) ++failed_;
    if (r.expect.kind != Expected::none) return;
    if (r.status == Status::passed || r.status == Status::mistrusted) ++passed_;
    if (is_error(r.status)) ++failed_;
}

void ProgressReporter::end(const Summary&) { erase(); }

}  // namespace sdpa
