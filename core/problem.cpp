#include "core/problem.hpp"
#include "core/geometry.hpp"
#include "core/validate.hpp"
#include "core/parse_number.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<Dims> parse_descriptor(std::string_view text, std::string* name, std::string* error) {
    auto fail = [&](std::string msg) -> std::optional<Dims> {
        if (error) *error = std::move(msg);
        return std::nullopt;
    };
    std::optional<std::int64_t> b, hq, hkv, sq, skv, dqk, dv;
    std::string found_name;
    std::string_view rest = text;
    if (rest.empty()) return fail("empty problem descriptor");
    while (!rest.empty()) {
        if (rest.starts_with("n=")) {
            found_name = std::string(rest.substr(2));
            if (found_name.empty()) return fail(fmt::format("'{}': empty name after 'n='", text));
            // Names appear in repro lines and file names: keep them shell- and path-safe.
            for (const char ch : found_name)
                if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.')
                    return fail(fmt::format("'{}': name '{}' may hold only letters, digits, '_', '-' and '.'",
                            text, found_name));
            break;
        }
        std::size_t k = 0;
        while (k < rest.size() && !is_digit(rest[k]) && rest[k] != '-') ++k;
        const std::string_view key = rest.substr(0, k);
        std::size_t e = k;
        while (e < rest.size() && (is_digit(rest[e]) || (e == k && rest[e] == '-'))) ++e;
        const std::string_view num = rest.substr(k, e - k);
        if (key.empty())
            return fail(fmt::format("'{}': expected a key (b, hq, hkv, sq, skv, dqk, dv, d) at '{}'", text, rest));
        constexpr std::string_view kKeys[] = {"b", "hq", "hkv", "sq", "skv", "dqk", "dv", "d"};
        if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
            return fail(fmt::format("'{}': unknown key '{}' (accepted: b, hq, hkv, sq, skv, dqk, dv, d, n=)", text, key));
        if (num.empty())
            return fail(fmt::format("'{}': key '{}' needs a number", text, key));
        const auto parsed = parse_number<std::int64_t>(num);
        if (!parsed) return fail(fmt::format("'{}': '{}' is not a 64-bit integer", text, num));
        const std::int64_t v = *parsed;
        if (v <= 0) return fail(fmt::format("'{}': {} = {} must be positive", text, key, v));
        std::optional<std::int64_t>* slot = nullptr;
        if (key == "b") slot = &b;
        else if (key == "hq") slot = &hq;
        else if (key == "hkv") slot = &hkv;
        else if (key == "sq") slot = &sq;
        else if (key == "skv") slot = &skv;
        else if (key == "dqk") slot = &dqk;
        else if (key == "dv") slot = &dv;
        else if (key == "d") {
            if (dqk || dv) return fail(fmt::format("'{}': 'd' given together with dqk/dv or twice", text));
            dqk = v;
            dv = v;
            rest.remove_prefix(e);
            continue;
        } else
            return fail(fmt::format("'{}': unknown key '{}' (accepted: b, hq, hkv, sq, skv, dqk, dv, d, n=)", text, key));
        if (*slot) return fail(fmt::format("'{}': key '{}' given twice", text, key));
        *slot = v;
        rest.remove_prefix(e);
    }
    if (!sq) return fail(fmt::format("'{}': missing sq (query sequence length)", text));
    if (!dqk) return fail(fmt::format("'{}': missing d or dqk (head size)", text));
    Dims d;
    d.B = b.value_or(1);
    d.H_q = hq.value_or(1);
    d.H_kv = hkv.value_or(d.H_q);
    d.S_q = *sq;
    d.S_kv = skv.value_or(d.S_q);
    d.D_qk = *dqk;
    d.D_v = dv.value_or(d.D_qk);
    if (name) *name = found_name;
    return d;
}

std::string_view attention_kind(const Dims& d) {
    if (d.H_kv == d.H_q) return "MHA";
    return d.H_kv == 1 ? "MQA" : "GQA";
}

std::string descriptor(const Dims& d, std::string_view name) {
    std::string s = fmt::format("b{}hq{}", d.B, d.H_q);
    if (d.H_kv != d.H_q) s += fmt::format("hkv{}", d.H_kv);
    s += fmt::format("sq{}", d.S_q);
    if (d.S_kv != d.S_q) s += fmt::format("skv{}", d.S_kv);
    if (d.D_qk == d.D_v)
        s += fmt::format("d{}", d.D_qk);
    else
        s += fmt::format("dqk{}dv{}", d.D_qk, d.D_v);
    if (!name.empty()) s += fmt::format("n={}", name);
    return s;
}

float scale_tensor_value(const Problem& p) {
    float v = 0.f;
    if (p.scale)
        v = *p.scale;
    else if (p.scale_op == ScaleOp::mul)
        v = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.dims.D_qk)));
    else
        v = static_cast<float>(std::sqrt(static_cast<double>(p.dims.D_qk)));
    return round_to(scale_dtype(p), v);
}

std::pair<std::int64_t, std::int64_t> visible_keys(const Problem& p, std::int64_t b, std::int64_t i) {
    const std::int64_t sq = valid_q(p, b), skv = valid_kv(p, b);
    if (i >= sq) return {0, 0};
    std::int64_t lo = 0, hi = skv;  // unclamped bounds of the mask's band, then clamped to [0, skv)
    switch (p.mask) {
        case Mask::causal_tl: hi = i + 1; break;
        case Mask::causal_br: hi = i + skv - sq + 1; break;
        case Mask::window:
            lo = i + skv - sq - window_extent(p, p.window_left);
            hi = i + skv - sq + window_extent(p, p.window_right) + 1;
            break;
        case Mask::bias:  // only the causal_last_row fill hides keys structurally
            if (p.mask_fill == MaskFill::causal_last_row) hi = i == p.dims.S_q - 1 ? 0 : i + 1;
            break;
        default: break;
    }
    lo = std::clamp<std::int64_t>(lo, 0, skv);
    hi = std::clamp<std::int64_t>(hi, 0, skv);
    return {lo, std::max(lo, hi)};
}

bool row_fully_masked(const Problem& p, std::int64_t b, std::int64_t i) {
    const auto [lo, hi] = visible_keys(p, b, i);
    return lo >= hi;
}

bool key_never_visible(const Problem& p, std::int64_t b, std::int64_t j) {
    return !first_query_seeing(p, b, j);
}

std::optional<std::int64_t> first_query_seeing(const Problem& p, std::int64_t b, std::int64_t j) {
    // Both ends of every mask's band grow with i, so the queries seeing key j form an interval:
    // the first query whose band reaches j is the only candidate to check before the last one.
    // (The causal_last_row bias hides row S_q - 1, the last valid row only without query padding;
    // the band grows over the rows before it.)
    const bool last_hidden = p.mask == Mask::bias && p.mask_fill == MaskFill::causal_last_row;
    std::int64_t last = valid_q(p, b) - 1;
    if (last_hidden && last == p.dims.S_q - 1) --last;
    if (last < 0 || j >= valid_kv(p, b)) return std::nullopt;
    std::int64_t lo = 0, hi = last;  // first i with visible_keys(i).second > j
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (visible_keys(p, b, mid).second > j) hi = mid;
        else lo = mid + 1;
    }
    if (!visible(p, b, lo, j)) return std::nullopt;
    return lo;
}

std::int64_t visible_scores(const Problem& p) {
    // Without padding every batch sees the same keys: count batch 0 and multiply (B can be huge).
    const bool padded = !p.seq_len_q.empty() || !p.seq_len_kv.empty();
    std::int64_t n = 0;
    for (std::int64_t b = 0; b < (padded ? p.dims.B : 1); ++b)
        for (std::int64_t i = 0; i < valid_q(p, b); ++i) {
            const auto [lo, hi] = visible_keys(p, b, i);
            n += hi - lo;
        }
    return padded ? n : n * p.dims.B;
}

std::optional<std::pair<std::int64_t, std::int64_t>> parse_window_mask(std::string_view text) {
    if (!text.starts_with("window:")) return std::nullopt;
    text.remove_prefix(7);
    const std::size_t comma = text.find(',');
    if (comma == text.npos) return std::nullopt;
    auto num = [](std::string_view t) -> std::optional<std::int64_t> {  // a count, or -1: no bound
        const auto v = parse_number<std::int64_t>(t);
        return v && (*v >= 0 || *v == kWindowUnbounded) ? v : std::nullopt;
    };
    const auto l = num(text.substr(0, comma)), r = num(text.substr(comma + 1));
    if (!l || !r) return std::nullopt;
    return std::pair{*l, *r};
}

std::optional<std::string> validate(const Problem& p) {
    const auto& d = p.dims;
    const std::pair<const char*, std::int64_t> dims[] = {{"B", d.B}, {"H_q", d.H_q}, {"H_kv", d.H_kv},
        {"S_q", d.S_q}, {"S_kv", d.S_kv}, {"D_qk", d.D_qk}, {"D_v", d.D_v}};
    for (const auto& [n, v] : dims)
        if (v <= 0) return fmt::format("dimension rule: {} = {} must be positive", n, v);
    if (d.H_kv > d.H_q || d.H_q % d.H_kv != 0)
        return fmt::format("GQA rule: H_q = {} must be a multiple of H_kv = {}", d.H_q, d.H_kv);
    // Strides non-negative, byte counts within 64 bits, outputs non-overlapping (core/geometry.cpp).
    if (auto err = validate_geometry(geometry(p))) return err;
    // The hipDNN-style structural rules on the shapes the problem implies (core/validate.hpp).
    if (auto err = validate_shapes(shapes_of(p))) return err;
    for (const auto* lens : {&p.seq_len_q, &p.seq_len_kv}) {
        const bool is_q = lens == &p.seq_len_q;
        const std::int64_t full = is_q ? d.S_q : d.S_kv;
        if (!lens->empty() && static_cast<std::int64_t>(lens->size()) != d.B)
            return fmt::format("padding rule: {} has {} entries but B = {}", is_q ? "seq_len_q" : "seq_len_kv",
                    lens->size(), d.B);
        for (std::size_t b = 0; b < lens->size(); ++b)
            if ((*lens)[b] < 0 || (*lens)[b] > full)
                return fmt::format("padding rule: {}[{}] = {} must be in [0, {}]", is_q ? "seq_len_q" : "seq_len_kv",
                        b, (*lens)[b], full);
    }
    if (p.mask != Mask::window && (p.window_left != 0 || p.window_right != 0))
        return fmt::format("mask rule: window bounds {},{} need --mask=window:L,R (got --mask={})", p.window_left,
                p.window_right, p.mask);
    const auto bad_bound = [](std::int64_t v) { return v < 0 && v != kWindowUnbounded; };
    if (bad_bound(p.window_left) || bad_bound(p.window_right))
        return fmt::format("window rule: bounds {},{} must be counts >= 0, or -1 for no bound on that side",
                p.window_left, p.window_right);
    if (p.mask_dt && p.mask != Mask::bias)
        return fmt::format("mask rule: --mask-dt={} needs --mask=bias (got --mask={})", *p.mask_dt, p.mask);
    if (p.mask_fill != MaskFill::random && p.mask != Mask::bias)
        return fmt::format("mask rule: --mask-fill={} needs --mask=bias (got --mask={})", p.mask_fill, p.mask);
    if (p.mask_fill == MaskFill::causal_last_row && bias_dims(p)[2] != d.S_q)
        return fmt::format("mask rule: --mask-fill=causal_last_row needs one mask row per query (got --mask-shape={})",
                p.bias_shape);
    if (p.implicit_mask && p.mask != Mask::causal_tl && p.mask != Mask::causal_br)
        return fmt::format("mask rule: --mask-form=implicit needs --mask=causal_tl or causal_br (got --mask={})", p.mask);
    if (p.implicit_mask && (!p.seq_len_q.empty() || !p.seq_len_kv.empty()))
        return "mask rule: --mask-form=implicit builds only the causal mask in the graph; padding (--seq-len-q/kv) "
               "needs the mask tensor (--mask-form=tensor)";
    if (p.dmask && p.mask != Mask::bias)
        return fmt::format("dmask rule: --dmask=true needs --mask=bias (got --mask={})", p.mask);
    if (p.dmask && !has_backward(p.dir))
        return fmt::format("dmask rule: --dmask=true needs --dir=bwd or fwd_bwd (got --dir={})", p.dir);
    if (p.dmask && (!p.seq_len_q.empty() || !p.seq_len_kv.empty()))
        return "dmask rule: --dmask=true with padding (--seq-len-q/kv) is not modelled (the vendor graph merges padding "
               "into the mask tensor)";
    if (p.dropout_device_scalars && !p.dropout)
        return "dropout rule: --dropout-property=tensor needs --dropout";
    if (p.dropout && !(p.dropout->p >= 0.f && p.dropout->p < 1.f))
        return fmt::format("dropout rule: the probability {} must be in [0, 1)", p.dropout->p);
    if (p.fp8 != Fp8Descales{} && !is_fp8(p.dt))
        return fmt::format("fp8 rule: --fp8-descale={} needs --dt=e4m3 or e5m2 (got --dt={})", fp8_descales_name(p.fp8),
                p.dt);
    if (p.ragged) {
        if (p.seq_len_q.empty() && p.seq_len_kv.empty())
            return "ragged rule: --ragged=true packs the valid rows of each batch: it needs padding lengths "
                   "(--seq-len-q and/or --seq-len-kv)";
        if (p.layout != Layout::bshd)
            return fmt::format("ragged rule: --ragged=true packs Q, K, V, O, dO and the gradients token-major "
                               "([T,H,D] per batch, THD): it needs --layout=bshd (got --layout={})", p.layout);
        for (const Role r : kIoRoles)
            if (p.strides.count(r))
                return fmt::format("ragged rule: --ragged=true lays out {} itself (packed THD); drop --strides={}:{}", r,
                        r, layout_name(p.strides.at(r)));
    }
    if (p.scale) {
        if (!std::isfinite(*p.scale) || *p.scale == 0.f)
            return fmt::format("scale rule: --scale={} must be finite and non-zero", *p.scale);
        if (round_to(scale_dtype(p), *p.scale) == 0.f || !std::isfinite(round_to(scale_dtype(p), *p.scale)))
            return fmt::format("scale rule: --scale={} is not representable in {}", *p.scale, scale_dtype(p));
    }
    return std::nullopt;
}

}  // namespace sdpa
