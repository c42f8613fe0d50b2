// The --perf-template language: a line of literal text with %field% substitutions, one line per
// timed case (benchdnn's perf template, with its min/average/max modifiers).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "reports/case_result.hpp"

namespace sdpa {

/// Which statistic a modified field uses: %-time% min, %0time% median, %+time% max; no modifier
/// means the median (as 0). For %Gflops% the modifier names the time it is computed from, so
/// %-Gflops% (from the min time) is the best rate.
enum class PerfStat { none, min, median, max };

/// One %field% of a template: its name ("time", "Gflops", ...) and modifier.
struct PerfField {
    std::string name;
    PerfStat stat = PerfStat::none;
    friend bool operator==(const PerfField&, const PerfField&) = default;
};

/// A parsed template: literal text pieces and fields, in order.
struct PerfTemplate {
    std::vector<std::variant<std::string, PerfField>> parts;
};

/// The default, a CSV line:
/// "perf,%backend%,%engine%,%dir%,%dt%,%mask%,%name%,%prb%,%-time%,%0time%,%+time%,%Gflops%,%-Gflops%,%GBps%,%ctime%,
/// %Tflops%,%impl%,%ref_fallback%": what ran, and the reference fallback it hit, last.
inline constexpr std::string_view kDefaultPerfTemplate =
        "perf,%backend%,%engine%,%dir%,%dt%,%mask%,%name%,%prb%,%-time%,%0time%,%+time%,%Gflops%,%-Gflops%,%GBps%,%ctime%,"
        "%Tflops%,%impl%,%ref_fallback%";

/// Fields: every result field by its column (reports/result_fields.hpp: %median_ms%, %flops%,
/// %fill_ms%, ...), and benchdnn's spellings: time (ms; modifiers - 0 +: min, median, max), Gflops
/// (GFLOP/s; modifiers - 0 +: at the min, median, max time), Tflops (the same in TFLOP/s), GBps (GB/s
/// at the median time), mtime (mean time, ms), ctime (compile time, ms), status (the shown status,
/// XFAIL etc. under --expect). Numbers print with 6 significant digits. "%%" is a literal '%'.
/// Returns nullopt and sets `error` for an unknown field, a modifier on a field that takes none,
/// or an unterminated '%'.
std::optional<PerfTemplate> parse_perf_template(std::string_view text, std::string* error);

/// Every template field as "%time% %Gflops% ... %idx% %id% ...": benchdnn's spellings, then the
/// result fields (reports/result_fields.hpp), for --help and errors.
std::string perf_template_fields();

/// The header line: the template with each field replaced by its column name with its unit
/// (e.g. "perf,backend,...,min_ms,median_ms,max_ms,GFLOP/s,GFLOP/s@min_ms,GB/s,compile_ms,TFLOP/s").
std::string perf_header(const PerfTemplate& t);

/// The template filled with r's values. Time and rate fields are empty when r.perf is absent.
std::string render_perf_line(const PerfTemplate& t, const CaseResult& r);

}  // namespace sdpa
