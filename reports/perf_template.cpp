#include "reports/perf_template.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "reports/result_fields.hpp"

namespace sdpa {

namespace {

/// benchdnn's spellings of result fields (reports/result_fields.hpp): a - 0 + modifier picks the
/// field of the min, median or max time; each has its header spelling with the unit.
struct Alias {
    std::string_view name;
    std::string_view median, min, max;  ///< result-field columns ("" = no modifier)
    std::string_view header, header_min = {}, header_max = {};
};
constexpr std::array<Alias, 7> kAliases{{
    {"time", "median_ms", "min_ms", "max_ms", "median_ms", "min_ms", "max_ms"},
    {"Gflops", "gflops", "gflops_best", "gflops_worst", "GFLOP/s", "GFLOP/s@min_ms", "GFLOP/s@max_ms"},
    {"Tflops", "tflops", "tflops_best", "tflops_worst", "TFLOP/s", "TFLOP/s@min_ms", "TFLOP/s@max_ms"},
    {"GBps", "gbytes_per_s", "", "", "GB/s"},
    {"mtime", "mean_ms", "", "", "mean_ms"},
    {"ctime", "compile_ms", "", "", "compile_ms"},
    {"status", "shown_status", "", "", "status"},  // the status reports show (XFAIL under --expect)
}};

const Alias* find_alias(std::string_view name) {
    for (const auto& a : kAliases)
        if (a.name == name) return &a;
    return nullptr;
}

}  // namespace

std::string perf_template_fields() {
    std::string s;
    for (const auto& a : kAliases) s += fmt::format("{}%{}%", s.empty() ? "" : " ", a.name);
    for (const auto& f : result_fields())
        if (f.column_field && !find_alias(f.column)) s += fmt::format(" %{}%", f.column);
    return s;
}

namespace {

/// The result-field column a template field reads.
std::string_view column_of(const PerfField& f) {
    if (const Alias* a = find_alias(f.name))
        return f.stat == PerfStat::min ? a->min : f.stat == PerfStat::max ? a->max : a->median;
    return f.name;
}

std::string field_value(const PerfField& f, const CaseResult& r) {
    const FieldValue v = find_result_field(column_of(f))->get(r);
    if (const auto* d = std::get_if<double>(&v)) return fmt::format("{:.6g}", *d);
    return csv_text(v);
}

}  // namespace

std::optional<PerfTemplate> parse_perf_template(std::string_view text, std::string* error) {
    PerfTemplate t;
    std::string literal;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t open = text.find('%', pos);
        if (open == std::string_view::npos) {
            literal += text.substr(pos);
            break;
        }
        literal += text.substr(pos, open - pos);
        const std::size_t close = text.find('%', open + 1);
        if (close == std::string_view::npos) {
            if (error) *error = fmt::format("perf template: unterminated '%' at column {} in '{}'", open + 1, text);
            return std::nullopt;
        }
        std::string_view inner = text.substr(open + 1, close - open - 1);
        pos = close + 1;
        if (inner.empty()) {  // "%%"
            literal += '%';
            continue;
        }
        PerfField f;
        switch (inner.front()) {
            case '-': f.stat = PerfStat::min; break;
            case '0': f.stat = PerfStat::median; break;
            case '+': f.stat = PerfStat::max; break;
            default: break;
        }
        if (f.stat != PerfStat::none) inner.remove_prefix(1);
        const Alias* alias = find_alias(inner);
        if (!alias && !find_result_field(inner)) {
            if (error)
                *error = fmt::format("perf template: unknown field '%{}%' (known: {}; modifiers - 0 + on %time%, %Gflops% and %Tflops%)",
                        text.substr(open + 1, close - open - 1), perf_template_fields());
            return std::nullopt;
        }
        if (f.stat != PerfStat::none && (!alias || alias->min.empty())) {
            if (error) *error = fmt::format("perf template: field '%{}%' takes no modifier (only %time%, %Gflops% and %Tflops% do)", inner);
            return std::nullopt;
        }
        f.name = std::string(inner);
        if (!literal.empty()) t.parts.emplace_back(std::move(literal));
        literal.clear();
        t.parts.emplace_back(std::move(f));
    }
    if (!literal.empty()) t.parts.emplace_back(std::move(literal));
    return t;
}

std::string perf_header(const PerfTemplate& t) {
    std::string s;
    for (const auto& part : t.parts) {
        if (const auto* lit = std::get_if<std::string>(&part)) {
            s += *lit;
        } else {
            const auto& f = std::get<PerfField>(part);
            const Alias* a = find_alias(f.name);
            s += !a ? std::string_view(f.name) : f.stat == PerfStat::min ? a->header_min
                                             : f.stat == PerfStat::max ? a->header_max
                                                                       : a->header;
        }
    }
    return s;
}

std::string render_perf_line(const PerfTemplate& t, const CaseResult& r) {
    std::string s;
    for (const auto& part : t.parts) {
        if (const auto* lit = std::get_if<std::string>(&part)) s += *lit;
        else s += field_value(std::get<PerfField>(part), r);
    }
    return s;
}

}  // namespace sdpa
