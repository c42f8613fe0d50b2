#include "reports/case_result.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace sdpa {

std::string_view shown_status(const CaseResult& r) {
    return r.expect.kind == Expected::none ? format_as(r.status) : format_as(r.expect.kind);
}

void Summary::add(const CaseResult& r) {
    if (!r.info.cpu_isa.empty()) {
        auto it = std::find_if(by_cpu_isa.begin(), by_cpu_isa.end(), [&](const auto& e) { return e.first == r.info.cpu_isa; });
        if (it == by_cpu_isa.end()) it = by_cpu_isa.insert(by_cpu_isa.end(), {r.info.cpu_isa, Summary{}});
        it->second.add_counts(r);
    }
    add_counts(r);
}

void Summary::add_counts(const CaseResult& r) {
    ++tests;
    ms += r.ms;
    for (std::size_t k = 0; k < phases_ms.size(); ++k) phases_ms[k] += r.phases_ms[k];
    if (!reference_fallback(r.impl).empty()) ++ref_fallbacks;
    if (r.expect.kind != Expected::none) {
        ++expected[static_cast<std::size_t>(r.expect.kind)];
        if (r.expect.kind == Expected::xpass && r.expect.allow_xpass) ++allowed_xpass;
        return;
    }
    ++counts[static_cast<std::size_t>(r.status)];
    if (r.status == Status::failed && r.timed_out) ++timeouts;
}

}  // namespace sdpa
