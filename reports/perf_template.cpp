#include "reports/perf_template.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace sdpa {

namespace {

struct FieldSpec {
    std::string_view name;
    bool takes_modifier;
};
constexpr std::array<FieldSpec, 20> kFields{{{"backend", false}, {"engine", false}, {"mode", false},
    {"dir", false}, {"dt", false}, {"mask", false}, {"dropout", false}, {"prb", false}, {"name", false}, {"idx", false},
    {"status", false}, {"repro", false}, {"flops", false}, {"bytes", false}, {"runs", false},
    {"time", true}, {"Gflops", true}, {"GBps", false}, {"mtime", false}, {"ctime", false}}};

std::string known_fields() {
    std::string s;
    for (const auto& f : kFields) s += fmt::format("{}%{}%", s.empty() ? "" : " ", f.name);
    return s;
}

char modifier_char(PerfStat s) {
    switch (s) {
        case PerfStat::min: return '-';
        case PerfStat::median: return '0';
        case PerfStat::max: return '+';
        default: return 0;
    }
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
    if (f.name == "status") return fmt::format("{}", r.status);
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
    if (f.name == "Gflops") {
        switch (f.stat) {
            case PerfStat::min: return num(p.gflops_at_min);
            case PerfStat::max: return num(p.gflops_at_max);
            default: return num(p.gflops_at_median);
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
                *error = fmt::format("perf template: unknown field '%{}%' (known: {}; modifiers - 0 + on %time% and %Gflops%)",
                        text.substr(open + 1, close - open - 1), known_fields());
            return std::nullopt;
        }
        if (f.stat != PerfStat::none && !spec->takes_modifier) {
            if (error) *error = fmt::format("perf template: field '%{}%' takes no modifier (only %time% and %Gflops% do)", inner);
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
            if (const char m = modifier_char(f.stat)) s += m;
            s += f.name;
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
