#include "core/implementation.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

bool is_reference_impl(std::string_view impl) {
    const std::string_view word = impl.substr(0, impl.find(':'));
    return word == "ref" || word.starts_with("ref_");
}

bool is_flagged_kind(std::string_view kind) {
    // oneDNN's primitive kinds for the graph's products (matmul; convolution and inner_product
    // where a graph lowers a product to them) and its softmax.
    static constexpr std::array<std::string_view, 4> kinds{"matmul", "softmax", "inner_product", "convolution"};
    for (const auto k : kinds)
        if (k == kind) return true;
    return false;
}

std::string reference_fallback(const Implementation& impl) {
    std::string s;
    for (const ImplPart& p : impl.parts) {
        if (!is_flagged_kind(p.kind) || !is_reference_impl(p.impl)) continue;
        s += fmt::format("{}{} {}{}", s.empty() ? "" : "; ", p.kind, p.impl,
                p.shape.empty() ? std::string() : fmt::format(" ({})", p.shape));
    }
    return s;
}

std::string implementation_kinds(const Implementation& impl) {
    std::vector<std::string> seen;
    for (const ImplPart& p : impl.parts)
        if (std::string k = fmt::format("{}:{}", p.kind, p.impl); std::find(seen.begin(), seen.end(), k) == seen.end())
            seen.push_back(std::move(k));
    return fmt::format("{}", fmt::join(seen, " "));
}

std::int64_t reference_parts(const Implementation& impl) {
    std::int64_t n = 0;
    for (const ImplPart& p : impl.parts) n += is_reference_impl(p.impl) ? 1 : 0;
    return n;
}

bool impl_pattern_matches(std::string_view pattern, std::string_view name) {
    if (pattern.find_first_of("*?[") == std::string_view::npos) return name.find(pattern) != std::string_view::npos;
    return ::fnmatch(std::string(pattern).c_str(), std::string(name).c_str(), 0) == 0;
}

namespace {

/// What in `im` a pattern of `patterns` matches first (its name, then each part's implementation),
/// as "implementation 'NAME' matches --OPTION=PATTERN" or "implementation 'NAME': its KIND ran
/// 'IMPL' (WHERE), which matches --OPTION=PATTERN"; "" when nothing does.
std::string first_match(const Implementation& im, const std::vector<std::string>& patterns, std::string_view option) {
    const std::string shown = im.name.empty() ? std::string("(not named)") : fmt::format("'{}'", im.name);
    for (const std::string& pat : patterns) {
        if (!im.name.empty() && impl_pattern_matches(pat, im.name))
            return fmt::format("implementation {} matches --{}={}", shown, option, pat);
        for (const ImplPart& p : im.parts)
            if (impl_pattern_matches(pat, p.impl))
                return fmt::format("implementation {}: its {} ran '{}'{}, which matches --{}={}", shown, p.kind, p.impl,
                        p.where.empty() ? std::string() : " (" + p.where + ")", option, pat);
    }
    return {};
}

}  // namespace

std::string impl_excluded(const Implementation& im, const ImplSelection& sel, bool complete) {
    if (std::string hit = first_match(im, sel.skip, "skip-impl"); !hit.empty()) return hit;
    if (!complete || sel.impl.empty() || !first_match(im, sel.impl, "impl").empty()) return {};
    return fmt::format("implementation {} matches no --impl pattern ({})",
            im.name.empty() ? std::string("(not named)") : fmt::format("'{}'", im.name), fmt::join(sel.impl, ","));
}

std::string describe(const BoundTensor& t) {
    if (t.dims.empty()) return fmt::format("{} {} host scalar", t.name, t.dt);
    return fmt::format("{} {} [{}] strides [{}]", t.name, t.dt, fmt::join(t.dims, ","), fmt::join(t.strides, ","));
}

std::string describe(const ImplPart& p) {
    std::string s = fmt::format("{}{} {}", p.where.empty() ? "" : p.where + ": ", p.kind, p.impl);
    if (!p.shape.empty()) s += " " + p.shape;
    if (p.ms >= 0) s += fmt::format(" {:.4g} ms", p.ms);
    if (is_reference_impl(p.impl)) s += " (reference implementation)";
    return s;
}

}  // namespace sdpa
