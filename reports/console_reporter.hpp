// Console lines (docs/output.md): "<idx>:<STATUS>[ (reason)] (<ms> ms) __REPRO: <repro>" per case
// and the benchdnn-style summary line.
#pragma once

#include <cstdio>
#include <string>

#include "reports/reporter.hpp"

namespace sdpa {

/// The status line of one case (no newline).
std::string status_line(const CaseResult& r);
/// benchdnn's summary line: "tests:N", then "NAME:N" for every status of kStatusNames and every
/// --expect outcome of kExpectedNames (lower case, table order), then "ref_fallback:N"
/// (Summary::ref_fallbacks): "tests:3 passed:2 skipped:0 mistrusted:0 ... ref_fallback:0".
std::string summary_line(const Summary& s);
/// The summary line with every count "N" (for --help).
std::string summary_pattern();
/// After the summary line, when any case ran (benchdnn's last line): "total: 1.36s; fill: 0.044s
/// (3%); ...; other: 0.01s (1%)": the cases' time summed, and each phase's over the run with its share.
std::string phase_totals_line(const Summary& s);
/// -v: "    time: fill 1.2 ms, displace 0.1 ms, ..., case 9.8 ms": the wall time of each phase run.
std::string phases_line(const CaseResult& r);
/// One line per output: "  O: worst |err|/bound 0.031 at (0,1,5,3) got .. expected .. (bound ..)".
std::string margin_line(const OutputCheck& c);

/// Writes status lines to `out`, with a "reference fallback: ..." line under a case whose vendor
/// ran one (core/implementation.hpp reference_fallback); with verbose >= 1 also the implementation
/// and the ones inside it, the tensors as bound, backend notes, phase times and margins.
class ConsoleReporter final : public Reporter {
public:
    ConsoleReporter(std::FILE* out, int verbose) : out_(out), verbose_(verbose) {}
    void on_case(const CaseResult& r) override;
    void end(const Summary& s) override;

private:
    std::FILE* out_;
    int verbose_;
};

}  // namespace sdpa
