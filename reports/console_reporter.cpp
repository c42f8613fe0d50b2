#include "reports/console_reporter.hpp"

#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

std::string status_line(const CaseResult& r) {
    std::string s = fmt::format("{}:{}", r.index, shown_status(r));
    if (!r.sample.empty()) s += fmt::format(" (sampled {})", r.sample);
    if (r.expect.kind != Expected::none)  // the status it was, and why that was expected
        s += fmt::format(" ({}{}; {})", r.status, r.reason.empty() ? std::string() : ": " + r.reason, r.expect.reason);
    else if (!r.reason.empty())
        s += fmt::format(" ({})", r.reason);
    s += fmt::format(" ({:.1f} ms)", r.ms);
    if (!r.repro.empty()) s += fmt::format(" __REPRO: {}", r.repro);
    return s;
}

namespace {

/// The summary line of `s`, or with null its pattern (every count "N"): tests, then every status of
/// kStatusNames and every --expect outcome of kExpectedNames in table order, then ref_fallback.
std::string summary_text(const Summary* s) {
    auto count = [&](std::size_t n) { return s ? std::to_string(n) : std::string("N"); };
    std::string line = "tests:" + count(s ? s->tests : 0);
    for (const auto& [status, name] : kStatusNames) line += fmt::format(" {}:{}", lower_name(name), count(s ? (*s)[status] : 0));
    for (const auto& [expected, name] : kExpectedNames)
        if (expected != Expected::none) line += fmt::format(" {}:{}", lower_name(name), count(s ? (*s)[expected] : 0));
    return line + " ref_fallback:" + count(s ? s->ref_fallbacks : 0);
}

}  // namespace

std::string summary_line(const Summary& s) { return summary_text(&s); }

std::string summary_pattern() { return summary_text(nullptr); }

std::string phase_totals_line(const Summary& s) {
    std::string line = fmt::format("total: {:.3g}s;", s.ms * 1e-3);
    for (const auto& ph : kPhaseNames)
        if (const double ms = s.phases_ms[static_cast<std::size_t>(ph.value)]; ms > 0)
            line += fmt::format(" {}: {:.3g}s ({:.0f}%);", ph.name, ms * 1e-3, 100.0 * ms / s.ms);
    return line;
}

std::string phases_line(const CaseResult& r) {
    std::string s = "    time:";
    for (const auto& ph : kPhaseNames)
        if (const double ms = r.phases_ms[static_cast<std::size_t>(ph.value)]; ms > 0) s += fmt::format(" {} {:.3g} ms,", ph.name, ms);
    return s + fmt::format(" case {:.3g} ms", r.ms);
}

std::string margin_line(const OutputCheck& c) {
    const auto& w = c.worst_index;
    return fmt::format("    {}: worst |err|/bound {:.3g} at ({},{},{},{}) got {} expected {} err {:.3g} bound {:.3g} "
                       "norm {:.3g} sum {:.3g}{}",
            c.output, c.worst_ratio, w[0], w[1], w[2], w[3], c.got, c.expected, c.err, c.bound, c.norm_worst,
            c.stats_sum_worst,
            c.pass ? "" : fmt::format(" FAILED: {}", c.reason));
}

void ConsoleReporter::on_case(const CaseResult& r) {
    fmt::print(out_, "{}\n", status_line(r));
    if (r.minimized)
        fmt::print(out_, "    minimized ({} runs, {} steps{}; fails as {}): {}\n", r.minimized->runs, r.minimized->steps,
                r.minimized->hit_limit ? ", run limit reached" : "", r.minimized->signature, r.minimized->repro);
    // Shown without -v: a slow path is what a sweep must see at a glance.
    if (const std::string fb = reference_fallback(r.impl); !fb.empty())
        fmt::print(out_, "    reference fallback: {} ran {}\n", r.impl.name.empty() ? "the vendor" : r.impl.name, fb);
    if (verbose_ >= 1) {
        if (!r.impl.name.empty() || !r.impl.parts.empty())
            fmt::print(out_, "    implementation: {}\n", r.impl.name.empty() ? "(not named)" : r.impl.name);
        for (const auto& p : r.impl.parts) fmt::print(out_, "      {}\n", describe(p));
        for (const auto& t : r.tensors) fmt::print(out_, "    tensor {}\n", describe(t));
        for (const auto& n : r.notes) fmt::print(out_, "    {}\n", n);
        if (r.ms > 0) fmt::print(out_, "{}\n", phases_line(r));
        for (const auto& c : r.checks) {
            fmt::print(out_, "{}\n", margin_line(c));
            if (verbose_ >= 2)  // the bound's terms at the worst element
                fmt::print(out_, "      bound there: {:.3g} = c {} x (u_eff {:.3g} x (M {:.3g} + max(M)/1024 {:.3g}) + tiny {:.3g})\n",
                        c.bound, c.bound_c, c.bound_u_eff, c.bound_mag, c.bound_floor, c.bound_tiny);
        }
        if (verbose_ >= 3 && r.perf && !r.perf->samples_ms.empty())  // every timed run
            fmt::print(out_, "    samples (ms): {}\n", fmt::join(r.perf->samples_ms, " "));
    }
    std::fflush(out_);
}

void ConsoleReporter::end(const Summary& s) {
    fmt::print(out_, "{}\n", summary_line(s));
    // A run over several --cpu-isa levels (or one that is not the default): each level's counts.
    if (s.by_cpu_isa.size() > 1 || (s.by_cpu_isa.size() == 1 && s.by_cpu_isa.front().first != "default"))
        for (const auto& [level, counts] : s.by_cpu_isa) fmt::print(out_, "cpu-isa={}: {}\n", level, summary_line(counts));
    if (s.ms > 0) fmt::print(out_, "{}\n", phase_totals_line(s));
    std::fflush(out_);
}

}  // namespace sdpa
