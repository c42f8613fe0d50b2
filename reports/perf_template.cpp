#include "reports/perf_template.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace sdpa {

namespace {

/// A template field: its name, whether it takes a - 0 + modifier, and its header spelling (with
/// its unit) without a modifier or with '-', '+' ("" = the name itself).
struct FieldSpec {
    std::string_view name;
    bool takes_modifier;
    std::string_view header = {}, header_min = {}, header_max = {};
};
constexpr std::array<FieldSpec, 22> kFields{{{"backend", false}, {"engine", false}, {"mode", false},
    {"dir", false}, {"dt", false}, {"mask", false}, {"dropout", false}, {"prb", false}, {"name", false}, {"idx", false},
    {"id", false}, {"status", false}, {"repro", false}, {"flops", false}, {"bytes", false}, {"runs", false},
    {"time", true, "median_ms", "min_ms", "max_ms"},
    {"Gflops", true, "GFLOP/s", "GFLOP/s@min_ms", "GFLOP/s@max_ms"},
    {"Tflops", true, "TFLOP/s", "TFLOP/s@min_ms", "TFLOP/s@max_ms"}, {"GBps", false, "GB/s"},
    {"mtime", false, "mean_ms"}, {"ctime", false, "compile_ms"}}};

std::string known_fields() {
    std::string s;
    for (const auto& f : kFields) s += fmt::format("{}%{}%", s.empty() ? "" : " ", f.name);
    return s;
}

std::string num(double v) { return fmt::format("{:.6g}", v); }

std::string field_value(const PerfField& f, const CaseResult& r) {
    const CaseInfo& i = r.info;
    if (f.name == "backend") return i.backend;
    if (f.name == "engine") return i.engine;
    if (f.name == "mode") return i.mode;
    if (f.name == "dir") return i.dir;
    if (f.name == "dt") return i.dt;
    if (f.name == "mask") return i.mask;
    if (f.name == "dropout") return i.dropout;
    if (f.name == "prb") return i.prb;
    if (f.name == "name") return i.name;
    if (f.name == "idx") return fmt::format("{}", r.index);
    if (f.name == "id") return r.id;
    if (f.name == "status") return std::string(shown_status(r));
    if (f.name == "repro") return r.repro;
    if (f.name == "flops") return fmt::format("{}", r.flops);
    if (f.name == "bytes") return fmt::format("{}", r.bytes);
    if (!r.perf) return "";
    const PerfResult& p = *r.perf;
    if (f.name == "runs") return fmt::format("{}", p.time.runs);
    if (f.name == "mtime") return num(p.time.mean_ms);
    if (f.name == "ctime") return num(p.compile_ms);
    if (f.name == "GBps") return num(p.gbytes_per_s_at_median);
    if (f.name == "time") {
        switch (f.stat) {
            case PerfStat::min: return num(p.time.min_ms);
            case PerfStat::max: return num(p.time.max_ms);
            default: return num(p.time.median_ms);
        }
    }
    if (f.name == "Gflops" || f.name == "Tflops") {
        const double scale = f.name == "Tflops" ? 1e-3 : 1.0;
        switch (f.stat) {
            case PerfStat::min: return num(scale * p.gflops_at_min);
            case PerfStat::max: return num(scale * p.gflops_at_max);
            default: return num(scale * p.gflops_at_median);
        }
    }
    return "";
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
        const auto spec = std::find_if(kFields.begin(), kFields.end(), [&](const FieldSpec& s) { return s.name == inner; });
        if (spec == kFields.end()) {
            if (error)
                *error = fmt::format("perf template: unknown field '%{}%' (known: {}; modifiers - 0 + on %time%, %Gflops% and %Tflops%)",
                        text.substr(open + 1, close - open - 1), known_fields());
            return std::nullopt;
        }
        if (f.stat != PerfStat::none && !spec->takes_modifier) {
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
            const auto spec = std::find_if(kFields.begin(), kFields.end(), [&](const FieldSpec& k) { return k.name == f.name; });
            const std::string_view h = f.stat == PerfStat::min ? spec->header_min
                                     : f.stat == PerfStat::max ? spec->header_max
                                                               : spec->header;
            s += h.empty() ? std::string_view(f.name) : h;
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
