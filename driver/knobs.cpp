// The knob table (driver/knobs.hpp).
#include "driver/knobs.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "backends/registry.hpp"
#include "core/geometry.hpp"
#include "core/parse_number.hpp"
#include "driver/random_cases.hpp"
#include "graph/json_import.hpp"

namespace sdpa {

namespace {

using Setter = Knob::Setter;

/// Parser of an enum member `Field` of the problem spelled as in `Table`.
template <class E, std::size_t N, const std::array<EnumName<E>, N>& Table, E Problem::*Field>
Setter parse_enum(std::string_view v) {
    const auto e = enum_parse(Table, v);
    if (!e) return {};
    return [x = *e](Case& c) { c.prb.*Field = x; };
}

/// Parser of a two-valued knob: the value `On` sets the Problem flag `Field`, `Off` clears it.
template <bool Problem::*Field, const char* Off, const char* On>
Setter parse_flag(std::string_view v) {
    if (v != Off && v != On) return {};
    return [on = v == On](Case& c) { c.prb.*Field = on; };
}
inline constexpr char kFalse[] = "false", kTrue[] = "true", kTensor[] = "tensor", kHostScalar[] = "host_scalar",
                      kImplicit[] = "implicit";

/// Parser of a graph rewrite knob (--in-shapes, --op-kind, --op-attrs, --tensor-property): the
/// value, when `Check` finds nothing wrong with it, goes to the Case string `Field`.
template <std::string Case::*Field, std::optional<std::string> (*Check)(std::string_view)>
Setter parse_rewrite(std::string_view v) {
    if (Check(v)) return {};
    return [x = std::string(v)](Case& c) { c.*Field = x; };
}
/// Why `Check` refuses the value of knob `Id`.
template <std::optional<std::string> (*Check)(std::string_view), KnobId Id>
std::string explain_rewrite(std::string_view v) {
    const auto why = Check(v);
    return why ? fmt::format("--{}: {}", Id, *why) : std::string();
}

/// Parses the whole of `v` as a finite float ("default" clears the scale).
Setter parse_scale(std::string_view v) {
    std::optional<float> f;
    if (v != "default" && !(f = parse_number<float>(v))) return {};
    return [f](Case& c) { c.prb.scale = f; };
}

/// Why a --scale value was refused: out of the f32 range, or not finite.
std::string explain_scale(std::string_view v) {
    NumberError err{};
    const auto d = parse_number<double>(v, &err);
    if (err == NumberError::not_finite) return fmt::format("--scale={} must be a finite number", v);
    if (err == NumberError::out_of_range || (d && std::fabs(*d) > std::numeric_limits<float>::max()))
        return fmt::format("--scale={} is out of the f32 range (|scale| must be at most {} and must not underflow "
                           "to 0)", v, std::numeric_limits<float>::max());
    if (d && std::fabs(*d) > 0 && std::fabs(*d) < std::numeric_limits<float>::min())
        return fmt::format("--scale={} is out of the f32 range (|scale| must be at least {}: smaller values are "
                           "subnormal or underflow to 0)", v, std::numeric_limits<float>::min());
    return "";
}

/// Why a --seed value was refused: out of the unsigned 64-bit range.
std::string explain_seed(std::string_view v) {
    NumberError err{};
    parse_number<std::uint64_t>(v, &err);
    if (err == NumberError::out_of_range)
        return fmt::format("--seed={} does not fit an unsigned 64-bit integer (at most {})", v,
                std::numeric_limits<std::uint64_t>::max());
    return "";
}

/// Parses the whole of `v` as an unsigned 64-bit seed.
Setter parse_seed(std::string_view v) {
    const auto s = parse_number<std::uint64_t>(v);
    if (!s) return {};
    return [x = *s](Case& c) { c.prb.seed = x; };
}

/// Parses the whole of `v` as a non-negative count into the Case field `Field` (--mb: 0 keeps the
/// graph's batch; --expected-n-partitions: 0 checks nothing).
template <std::int64_t Case::*Field>
Setter parse_count(std::string_view v) {
    const auto n = parse_number<std::int64_t>(v);
    if (!n || *n < 0) return {};
    return [x = *n](Case& c) { c.*Field = x; };
}

/// Why a count (--mb, --expected-n-partitions) was refused: negative, or past the 64-bit range.
template <KnobId Id>
std::string explain_count(std::string_view v) {
    NumberError err{};
    const auto n = parse_number<std::int64_t>(v, &err);
    if (err == NumberError::out_of_range)
        return fmt::format("--{}={} does not fit a 64-bit integer (at most {})", Id, v,
                std::numeric_limits<std::int64_t>::max());
    if (n && *n < 0) return fmt::format("--{}={} must be 0 or more", Id, v);
    return "";
}

/// --check's spelling of a sample size (0: full).
std::string check_name(std::int64_t n) { return n == 0 ? "full" : fmt::format("sample:{}", n); }

/// --check: "full", or "sample:N" with N >= 1.
Setter parse_check(std::string_view v) {
    std::int64_t n = 0;
    if (v != "full") {
        constexpr std::string_view kSample = "sample:";
        if (!v.starts_with(kSample)) return {};
        const auto x = parse_number<std::int64_t>(v.substr(kSample.size()));
        if (!x || *x < 1) return {};
        n = *x;
    }
    return [n](Case& c) { c.sample_rows = n; };
}

/// Why a --check value was refused: N out of range or below 1, or a bare number (a list's later
/// elements: --check=sample:1,2 is read as sample:1 and 2).
std::string explain_check(std::string_view v) {
    if (parse_number<std::int64_t>(v))
        return fmt::format("--check={}: each value is full or sample:N (a list spells each: sample:1,sample:2)", v);
    if (!v.starts_with("sample:")) return "";
    NumberError err{};
    parse_number<std::int64_t>(v.substr(7), &err);
    if (err == NumberError::out_of_range)
        return fmt::format("--check={}: N does not fit a 64-bit integer (at most {})", v,
                std::numeric_limits<std::int64_t>::max());
    return fmt::format("--check={}: N must be a whole number of 1 or more (rows per head)", v);
}

/// --mask: a kMaskNames spelling, or "window:L,R" (sets the window bounds).
Setter parse_mask(std::string_view v) {
    Mask m = Mask::window;
    std::pair<std::int64_t, std::int64_t> lr{0, 0};
    if (const auto w = parse_window_mask(v)) lr = *w;
    else if (const auto e = enum_parse(kMaskNames, v); e && v != "window") m = *e;
    else return {};
    return [m, lr](Case& c) {
        c.prb.mask = m;
        std::tie(c.prb.window_left, c.prb.window_right) = lr;
    };
}

/// `text` kept for the life of the process: a row's `what` (a string_view) built from tables.
std::string_view kept(std::string text) {
    static std::deque<std::string> texts;  // grows by one per call of make_table's rows; never moves
    return texts.emplace_back(std::move(text));
}

/// The spellings of an enum table, in its order.
template <class E, std::size_t N>
std::vector<std::string_view> enum_names(const std::array<EnumName<E>, N>& table) {
    std::vector<std::string_view> out;
    for (const auto& row : table) out.push_back(row.name);
    return out;
}

/// "NAME: what; NAME: what": a described table (core/enum_table.hpp) for a row's `what`.
template <class E, std::size_t N>
std::string described(const std::array<DescribedName<E>, N>& rows) {
    std::vector<std::string> parts;
    for (const auto& r : rows) parts.push_back(fmt::format("{}: {}", r.name, r.what));
    return fmt::format("{}", fmt::join(parts, "; "));
}

/// --mask's accepted values: kMaskNames, the window as its form window:L,R.
std::string mask_choices() {
    std::vector<std::string> names;
    for (const auto& [m, name] : kMaskNames) names.push_back(m == Mask::window ? fmt::format("{}:L,R", name) : std::string(name));
    return fmt::format("{}", fmt::join(names, "|"));
}

/// Why a window form was refused: FlashAttention's -1 (no bound) and other negatives, or a form
/// that is not "window:L,R" with two integers.
std::string explain_mask(std::string_view v) {
    if (!v.starts_with("window")) return "";
    if (v.find('-') != v.npos)
        return fmt::format("--mask={}: window bounds are counts >= 0, or FlashAttention's -1 for no bound on that "
                "side (window:L,-1); no other negative", v);
    return fmt::format("--mask={}: a window is window:L,R with two integers >= 0, or -1 for no bound (keys "
            "i+S_kv-S_q-L to i+S_kv-S_q+R stay visible)", v);
}

/// --seq-len-q / --seq-len-kv into `Lens` and `Random`: "none" (no padding), "random" (drawn per
/// batch from the seed when the problem is expanded) or a ':'-separated list of non-negative
/// lengths, one per batch.
template <std::vector<std::int64_t> Problem::*Lens, bool Case::*Random>
Setter parse_seq_len(std::string_view v) {
    std::vector<std::int64_t> lens;
    const bool random = v == "random";
    if (v != "none" && !random)
        for (std::size_t pos = 0;;) {
            const std::size_t colon = v.find(':', pos);
            const auto n = parse_number<std::int64_t>(v.substr(pos, colon == v.npos ? v.npos : colon - pos));
            if (!n || *n < 0) return {};
            lens.push_back(*n);
            if (colon == v.npos) break;
            pos = colon + 1;
        }
    return [lens = std::move(lens), random](Case& c) {
        c.prb.*Lens = lens;
        c.*Random = random;
    };
}

/// Printer of a kNames-spelled enum member `Field` of the problem.
template <class E, std::size_t N, const std::array<EnumName<E>, N>& Table, E Problem::*Field>
std::string print_enum(const Case& c) {
    return std::string(enum_name(Table, c.prb.*Field));
}

/// Printer of a two-valued knob (set_flag's pair).
template <bool Problem::*Field, const char* Off, const char* On>
std::string print_flag(const Case& c) {
    return c.prb.*Field ? On : Off;
}

/// Printer of a graph rewrite knob's string.
template <std::string Case::*Field>
std::string print_rewrite(const Case& c) {
    return c.*Field;
}

/// Printer of an optional auxiliary type (--mask-dt, --scale-dt): "default" when unset.
template <std::optional<DType> Problem::*Field>
std::string print_aux_dt(const Case& c) {
    return c.prb.*Field ? fmt::format("{}", *(c.prb.*Field)) : "default";
}

/// Printer of the padding lengths: "none", "random" (before expansion) or N0:N1:...
std::string print_seq_len(const std::vector<std::int64_t>& lens, bool random) {
    if (random) return "random";
    return lens.empty() ? "none" : fmt::format("{}", fmt::join(lens, ":"));
}

/// Accepts the name of a backend of the registry (backends/registry.cpp).
Setter parse_backend(std::string_view v) {
    if (!make_backend(v)) return {};
    return [x = std::string(v)](Case& c) { c.backend = x; };
}

/// Parser of an optional auxiliary type (--mask-dt, --scale-dt): "default" unsets it.
template <std::optional<DType> Problem::*Field>
Setter parse_aux_dt(std::string_view v) {
    std::optional<DType> t;
    if (v != "default" && !(t = enum_parse(kAuxDTypeNames, v))) return {};
    return [t](Case& c) { c.prb.*Field = t; };
}

/// Every form --backend accepts (backends/registry.hpp): every vendor backend sdpabench has (one
/// this build lacks runs SKIPPED), ref, and the families as PREFIX + KIND.
std::string backend_choices() {
    std::vector<std::string> names;
    for (const BackendRow& r : backend_table())
        if (r.listed) names.push_back(r.name);
        else if (r.family) names.push_back(r.name + "KIND");
    return fmt::format("{}", fmt::join(names, "|"));
}

std::string explain_backend(std::string_view v) {
    const std::string faults = fmt::format("{}", fmt::join(family_names(kFaultyPrefix), ", "));
    if (const BackendRow* r = find_backend_row(v); r && r->family)
        return r->prefix == kFaultyPrefix
                ? fmt::format("unknown fault '{}' for --backend={}KIND (accepted: {})", v.substr(r->prefix.size()), r->prefix,
                          faults)
                : fmt::format("unknown test-only backend '{}' (accepted: {})", v, fmt::join(family_names(r->prefix), ", "));
    return fmt::format("unknown value '{}' for --backend (accepted: {}; faulty kinds: {})", v, backend_choices(), faults);
}

/// --cpu-isa=all: every level of kCpuIsaNames the CPU has (the best level the ISA-capped backend
/// dispatches to here includes it), lowest first; empty for any other value, or when this build
/// has no backend with ISA control (then "all" is refused, and explain_cpu_isa says why).
std::vector<std::string> expand_cpu_isa(std::string_view v) {
    std::vector<std::string> out;
    if (v != "all") return out;
    const std::optional<CpuIsa> best = best_cpu_isa();
    if (!best) return out;
    for (const auto& row : kCpuIsaNames)
        if (row.value != CpuIsa::none && isa_includes(*best, row.value)) out.emplace_back(row.name);
    return out;
}

std::string explain_cpu_isa(std::string_view v) {
    if (v == "all")
        return "--cpu-isa=all: this build has no backend whose CPU dispatch --cpu-isa caps (oneDNN), so it cannot "
               "tell which levels this CPU has";
    return "";
}

/// Hooks of the rows (KnobHooks): what each knob means to --random (draw: a value of case i;
/// needs: what a given value needs) and to the minimizer (simpler: the spellings it tries).
namespace hook {

namespace ds = draw_stream;

/// Every direction.
void draw_dir(Problem& p, const KnobDraw& d) { p.dir = kDirNames[d.pick(ds::dir, kDirNames.size())].value; }
/// fwd_bwd tries its halves, fwd_t inference; bwd stays (its forward is not the failing part).
std::vector<std::string> simpler_dir(const Case& c) {
    if (c.prb.dir == Dir::fwd_bwd) return {"fwd_t", "bwd"};
    if (c.prb.dir == Dir::fwd_t) return {"fwd_i"};
    return {};
}
/// f32, bf16 or f16 (never fp8: its vendors are GPUs).
void draw_dt(Problem& p, const KnobDraw& d) { p.dt = kDrawnDTypes[d.pick(ds::dt, kDrawnDTypes.size())]; }
/// Every mask kind with the knobs that belong to it (draw_mask_details); the cost capped for it.
void draw_mask(Problem& p, const KnobDraw& d) {
    p.mask = kMaskNames[d.pick(ds::mask, kMaskNames.size())].value;
    draw_mask_details(d.r, d.i, p);
    cap_cost(p);
}
/// A window tries no mask, then causal_br (the window of 0 keys ahead).
std::vector<std::string> simpler_mask(const Case& c) {
    if (c.prb.mask == Mask::window) return {"none", "causal_br"};
    return {knob(KnobId::mask).def()};
}
/// A bias knob given needs a bias.
void needs_bias(Problem& p, const KnobNeeds& n) {
    if (!n.has(KnobId::mask)) p.mask = Mask::bias;
}
/// The scale op, and half the time a scale value for it (else the default 1/sqrt(D_qk)).
void draw_scale(Problem& p, const KnobDraw& d) {
    p.scale_op = kScaleOpNames[d.pick(ds::scale_op, kScaleOpNames.size())].value;
    if (d.pick(ds::scale, 2) == 1) {
        const auto& values = p.scale_op == ScaleOp::mul ? kDrawnMulScales : kDrawnDivScales;
        p.scale = values[static_cast<std::size_t>(d.uniform(ds::scale_value, 0, values.size() - 1))];
    }
}
void draw_scale_dt(Problem& p, const KnobDraw& d) {
    if (d.pick(ds::scale_dt, 2) == 1) p.scale_dt = DType::f32;
}
void draw_scale_property(Problem& p, const KnobDraw& d) { p.scale_host_scalar = d.pick(ds::scale_property, 2) == 1; }
/// No padding unless the line gave it (dMask and the implicit causal mask do not model it).
void no_padding(Problem& p, const KnobNeeds& n) {
    if (!n.has(KnobId::seq_len_q)) p.seq_len_q.clear();
    if (!n.has(KnobId::seq_len_kv)) p.seq_len_kv.clear();
}
/// --mask-form=implicit needs a causal mask (causal_tl or causal_br, drawn) and no padding.
void needs_implicit(Problem& p, const KnobNeeds& n) {
    if (!p.implicit_mask) return;
    if (!n.has(KnobId::mask) && p.mask != Mask::causal_tl && p.mask != Mask::causal_br)
        p.mask = n.r.uniform(n.i, 0x2000, 0, 1) == 0 ? Mask::causal_tl : Mask::causal_br;
    no_padding(p, n);
}
void draw_dmask(Problem& p, const KnobDraw& d) { p.dmask = d.pick(ds::dmask, 2) == 1; }
/// --dmask=true needs a bias, a backward and no padding.
void needs_dmask(Problem& p, const KnobNeeds& n) {
    if (!p.dmask) return;
    needs_bias(p, n);
    if (!n.has(KnobId::dir) && !has_backward(p.dir)) p.dir = Dir::bwd;
    no_padding(p, n);
}
void draw_fill(Problem& p, const KnobDraw& d) { p.fill = kFillNames[d.pick(ds::fill, kFillNames.size())].value; }
void draw_seed(Problem& p, const KnobDraw& d) { p.seed = static_cast<std::uint64_t>(d.uniform(ds::fill_seed, 1, 0x7fffffff)); }
/// Padding in three of five draws: query lengths, key lengths, or both (one stream for both knobs).
void draw_seq_len_q(Problem& p, const KnobDraw& d) {
    if (const std::size_t k = d.pick(ds::padding, 5); k == 1 || k == 3) p.seq_len_q = draw_lengths(d.r, d.i, 0, p.dims.B, p.dims.S_q);
}
void draw_seq_len_kv(Problem& p, const KnobDraw& d) {
    if (const std::size_t k = d.pick(ds::padding, 5); k == 2 || k == 3)
        p.seq_len_kv = draw_lengths(d.r, d.i, 1, p.dims.B, p.dims.S_kv);
}
void draw_layout(Problem& p, const KnobDraw& d) { p.layout = kLayoutNames[d.pick(ds::layout, kLayoutNames.size())].value; }
void draw_strides(Problem& p, const KnobDraw& d) {
    p.strides = parse_role_layouts(sdpa::draw_strides(d.r, d.i, p)).value_or(RoleLayouts{});
}
/// No override, then each role's override left out.
std::vector<std::string> simpler_strides(const Case& c) {
    std::vector<std::string> out{knob(KnobId::strides).def()};
    if (c.prb.strides.size() > 1)
        for (const auto& kv : c.prb.strides) {
            RoleLayouts fewer = c.prb.strides;
            fewer.erase(kv.first);
            out.push_back(role_layouts_name(fewer));
        }
    return out;
}
void draw_deterministic(Problem& p, const KnobDraw& d) { p.deterministic = d.pick(ds::deterministic, 2) == 1; }
/// Ragged in a third of the draws that have padding and bshd (about a tenth of all: its vendors are
/// GPUs, and oneDNN and PyTorch are UNIMPLEMENTED for it), without io stride overrides.
void draw_ragged(Problem& p, const KnobDraw& d) {
    p.ragged = d.pick(ds::ragged, 3) == 1 && (!p.seq_len_q.empty() || !p.seq_len_kv.empty()) && p.layout == Layout::bshd;
    if (p.ragged)
        for (const Role r : kIoRoles) p.strides.erase(r);
}
/// --ragged=true needs bshd, no io stride override and padding lengths (drawn query lengths).
void needs_ragged(Problem& p, const KnobNeeds& n) {
    if (!p.ragged) return;
    if (!n.has(KnobId::layout)) p.layout = Layout::bshd;
    if (!n.has(KnobId::strides))
        for (const Role role : kIoRoles) p.strides.erase(role);
    if (p.seq_len_q.empty() && p.seq_len_kv.empty() && !n.has(KnobId::seq_len_q))
        p.seq_len_q = draw_lengths(n.r, n.i, 0, p.dims.B, p.dims.S_q);
}
/// Dropout in half the draws: p = 0 (the op kept) or a drawn p, a drawn seed, offset 0, 1 or drawn.
void draw_dropout(Problem& p, const KnobDraw& d) {
    const std::size_t dr = d.pick(ds::dropout, 4);
    if (dr < 2) return;
    Dropout dp;
    dp.p = dr == 2 ? 0.f : kDrawnDropoutPs[static_cast<std::size_t>(d.uniform(ds::dropout_p, 0, kDrawnDropoutPs.size() - 1))];
    dp.seed = static_cast<std::uint64_t>(d.uniform(ds::dropout_seed, 1, 0x7fffffff));
    const std::size_t off = d.pick(ds::dropout_offset, 3);
    dp.offset = off == 0 ? 0 : off == 1 ? 1 : static_cast<std::uint64_t>(d.uniform(ds::dropout_offset_value, 2, 1'000'000));
    p.dropout = dp;
}
void draw_dropout_property(Problem& p, const KnobDraw& d) {
    if (p.dropout) p.dropout_device_scalars = d.pick(ds::dropout_property, 2) == 1;
}
/// Device dropout scalars need a dropout (p 0.1, a drawn seed).
void needs_dropout(Problem& p, const KnobNeeds& n) {
    if (p.dropout_device_scalars && !p.dropout && !n.has(KnobId::dropout))
        p.dropout = Dropout{0.1f, static_cast<std::uint64_t>(n.r.uniform(n.i, 0x2001, 1, 0x7fffffff)), 1};
}

}  // namespace hook

/// The rows. Defaults are read from Case{} through each row's printer, so each is spelled once.
// #lizard forgives: the knob table, one row a knob (scripts/function_length.sh)
std::vector<Knob> make_table() {
    using S = Knob::Scope;
    std::vector<Knob> t{
        Knob{KnobId::dir, enum_choices(kDirNames),
            "fwd_i: O only; fwd_t: O and stats; bwd: dQ, dK, dV; fwd_bwd: fwd_t, then bwd fed its O and stats",
            parse_enum<Dir, kDirNames.size(), kDirNames, &Problem::dir>,
            print_enum<Dir, kDirNames.size(), kDirNames, &Problem::dir>}
                .with({.draw = hook::draw_dir, .simpler = hook::simpler_dir}),
        Knob{KnobId::dt, enum_choices(kDTypeNames) + "|default|ID:DT[+ID:DT...]",
            "io data type of Q, K, V, O, dO, dQ, dK, dV (stats are f32; 'default': f32, or the types of a --case "
            "graph; a type rewrites the graph's); ID:DT+...: benchdnn's per-tensor form, for --case graphs only",
            [](std::string_view v) -> Setter {
                std::optional<DType> t;  // a type (which also rewrites a graph's), or the default / ID:DT form
                std::string ids;
                if (v.find(':') != v.npos) {
                    if (check_id_rewrites(v)) return {};
                    ids = std::string(v);
                } else if (v != "default" && !(t = enum_parse(kDTypeNames, v))) {
                    return {};
                }
                return [t, ids](Case& c) {
                    c.prb.dt = t.value_or(Problem{}.dt);
                    c.graph_dt = t;
                    c.dt_ids = ids;
                };
            },
            [](const Case& c) -> std::string {
                if (!c.graph_file.empty()) {
                    if (c.graph_dt) return fmt::format("{}", *c.graph_dt);
                    return c.dt_ids.empty() ? "default" : c.dt_ids;
                }
                return c.prb.dt == Problem{}.dt ? "default" : fmt::format("{}", c.prb.dt);
            },
            S::both, false,
            [](std::string_view v) {
                if (v.find(':') == v.npos) return std::string();
                const auto why = check_id_rewrites(v);
                return why ? fmt::format("--dt: {}", *why) : std::string();
            }}.with({.draw = hook::draw_dt}),
        Knob{KnobId::mask, mask_choices(),
            "mask kind: causal_tl keeps key j for query i when j <= i, causal_br when j <= i + S_kv - S_q; bias adds "
            "a tensor; window:L,R keeps i+S_kv-S_q-L <= j <= i+S_kv-S_q+R (FlashAttention's window_size; -1: no "
            "bound on that side)",
            parse_mask,
            [](const Case& c) {
                return c.prb.mask == Mask::window ? fmt::format("window:{},{}", c.prb.window_left, c.prb.window_right)
                                                  : fmt::format("{}", c.prb.mask);
            },
            S::descriptor, false, explain_mask}.with({.draw = hook::draw_mask, .simpler = hook::simpler_mask}),
        Knob{KnobId::mask_shape, enum_choices(kBiasShapeNames), "broadcast shape of --mask=bias",
            parse_enum<BiasShape, kBiasShapeNames.size(), kBiasShapeNames, &Problem::bias_shape>,
            [](const Case& c) {  // means nothing without a bias: the default's spelling then
                return fmt::format("{}", c.prb.mask == Mask::bias ? c.prb.bias_shape : Problem{}.bias_shape);
            }}.with({.needs = hook::needs_bias, .drop = 8}),
        Knob{KnobId::mask_dt, enum_choices(kAuxDTypeNames) + "|default",
            "data type of the bias ('default': the --dt type; f32 for fp8 io)",
            parse_aux_dt<&Problem::mask_dt>,
            print_aux_dt<&Problem::mask_dt>}.with({.needs = hook::needs_bias, .drop = 7}),
        Knob{KnobId::mask_fill, enum_choices(kMaskFillNames),
            "values of --mask=bias (zero: benchdnn's padding mask; causal_last_row: benchdnn's causal mask with the "
            "last row fully masked)",
            parse_enum<MaskFill, kMaskFillNames.size(), kMaskFillNames, &Problem::mask_fill>,
            print_enum<MaskFill, kMaskFillNames.size(), kMaskFillNames, &Problem::mask_fill>}
                .with({.needs = hook::needs_bias, .drop = 6}),
        Knob{KnobId::scale, "default|<finite float>",
            "scale tensor value, rounded to its type ('default': 1/sqrt(D_qk) for mul, sqrt(D_qk) for div); a range "
            "START:END[:STEP] (STEP +N or xN) gives a list",
            parse_scale, [](const Case& c) { return c.prb.scale ? fmt::format("{}", *c.prb.scale) : "default"; },
            S::descriptor, false, explain_scale, Knob::Range::real}.with({.draw = hook::draw_scale, .drop = 9}),
        {KnobId::scale_op, enum_choices(kScaleOpNames), "apply the scale by multiplying or dividing QK^T",
            parse_enum<ScaleOp, kScaleOpNames.size(), kScaleOpNames, &Problem::scale_op>,
            print_enum<ScaleOp, kScaleOpNames.size(), kScaleOpNames, &Problem::scale_op>},
        Knob{KnobId::scale_dt, enum_choices(kAuxDTypeNames) + "|default",
            "data type of the scale tensor ('default': the --dt type; f32 for fp8 io)",
            parse_aux_dt<&Problem::scale_dt>,
            print_aux_dt<&Problem::scale_dt>}.with({.draw = hook::draw_scale_dt, .drop = 10}),
        Knob{KnobId::scale_property, "tensor|host_scalar",
            "how the vendor graph takes the scale: a [1] device tensor, or a host scalar (oneDNN's property_type "
            "host_scalar, as PyTorch's exported graphs have it)",
            parse_flag<&Problem::scale_host_scalar, kTensor, kHostScalar>,
            print_flag<&Problem::scale_host_scalar, kTensor, kHostScalar>}.with({.draw = hook::draw_scale_property}),
        Knob{KnobId::mask_form, "tensor|implicit",
            "how the vendor graph gets causal_tl/causal_br: a 0/-inf mask tensor, or built inside the graph "
            "(implicit: oneDNN's GenIndex, GreaterEqual and Select, the -inf a scalar with the scale's "
            "--scale-property)",
            parse_flag<&Problem::implicit_mask, kTensor, kImplicit>,
            print_flag<&Problem::implicit_mask, kTensor, kImplicit>}.with({.needs = hook::needs_implicit, .drop = 5}),
        Knob{KnobId::dmask, "false|true",
            "bwd and fwd_bwd with --mask=bias: also output dMask, the bias gradient (dS = P o (dP - D) summed over "
            "the bias's broadcast dims, f32 in the bias's shape; oneDNN's End on dS)",
            parse_flag<&Problem::dmask, kFalse, kTrue>, print_flag<&Problem::dmask, kFalse, kTrue>}
                .with({.draw = hook::draw_dmask, .needs = hook::needs_dmask, .drop = 3}),
        Knob{KnobId::fill, enum_choices(kFillNames), "input fill family: exact (integers in [-2, 2]: QK^T exact in f32), normal (N(0,1) rounded to the io type), "
            "and families that stress the softmax (docs/knobs_fill.md)",
            parse_enum<Fill, kFillNames.size(), kFillNames, &Problem::fill>,
            print_enum<Fill, kFillNames.size(), kFillNames, &Problem::fill>, S::both}.with({.draw = hook::draw_fill}),
        Knob{KnobId::seed, "<unsigned 64-bit integer>",
            "fill seed (a counter-based stream per tensor, the same for any thread count); a range "
            "START:END[:STEP] (e.g. 1:8) gives a list",
            parse_seed, [](const Case& c) { return fmt::format("{}", c.prb.seed); }, S::both, false, explain_seed,
            Knob::Range::integer}.with({.draw = hook::draw_seed}),
        {KnobId::mb, "<batch, 0 keeps the graph's>",
            "--case graphs: rewrite the batch B (benchdnn --mb; docs/onednn_json.md); a range START:END[:STEP] gives a "
            "list", parse_count<&Case::mb>,
            [](const Case& c) { return fmt::format("{}", c.mb); }, S::graph, false, explain_count<KnobId::mb>,
            Knob::Range::integer},
        {KnobId::in_shapes, "ID:SHAPE[*STRIDES|*TAG][+ID:...]",
            "--case graphs: rewrite boundary tensor shapes (benchdnn --in-shapes; empty keeps them)",
            parse_rewrite<&Case::in_shapes, check_in_shapes>, print_rewrite<&Case::in_shapes>, S::graph, false,
            explain_rewrite<check_in_shapes, KnobId::in_shapes>},
        {KnobId::op_kind, "ID:KIND[+ID:KIND...]",
            "--case graphs: rewrite op ID's kind (benchdnn --op-kind, e.g. 1:Divide for the scale; undef keeps it; "
            "empty: none)",
            parse_rewrite<&Case::op_kinds, check_id_rewrites>, print_rewrite<&Case::op_kinds>, S::graph, false,
            explain_rewrite<check_id_rewrites, KnobId::op_kind>},
        {KnobId::op_attrs, "ID:ATTR:VALUE[*ATTR:VALUE...][+ID:...]",
            "--case graphs: set attribute ATTR of op ID (benchdnn --op-attrs, e.g. 0:transpose_b:1; typed like the "
            "op's attribute, else by the value; empty: none)",
            parse_rewrite<&Case::op_attrs, check_op_attrs>, print_rewrite<&Case::op_attrs>, S::graph, false,
            explain_rewrite<check_op_attrs, KnobId::op_attrs>},
        {KnobId::tensor_property, "ID:PROP[+ID:PROP...]",
            "--case graphs: set tensor ID's property_type (benchdnn --tensor-property; undef, variable, constant, "
            "host_scalar; empty: none)",
            parse_rewrite<&Case::properties, check_id_rewrites>, print_rewrite<&Case::properties>, S::graph, false,
            explain_rewrite<check_id_rewrites, KnobId::tensor_property>},
        Knob{KnobId::seq_len_q, "none|random|N0:N1:...",
            "padding: valid query length per batch (B entries; random: drawn in [1, S_q] from the seed, the repro lists the "
            "drawn values; docs/knobs_masks.md)",
            parse_seq_len<&Problem::seq_len_q, &Case::random_seq_len_q>,
            [](const Case& c) { return print_seq_len(c.prb.seq_len_q, c.random_seq_len_q); }}
                .with({.draw = hook::draw_seq_len_q, .drop = 11}),
        Knob{KnobId::seq_len_kv, "none|random|N0:N1:...",
            "padding: valid key length per batch (B entries; random: drawn in [1, S_kv] from the seed, as for --seq-len-q)",
            parse_seq_len<&Problem::seq_len_kv, &Case::random_seq_len_kv>,
            [](const Case& c) { return print_seq_len(c.prb.seq_len_kv, c.random_seq_len_kv); }}
                .with({.draw = hook::draw_seq_len_kv, .drop = 12}),
        Knob{KnobId::layout, enum_choices(kLayoutNames),
            "vendor buffer layout of Q, K, V, O, dO and the gradients (strides of [B,S,H,D] for bshd; the "
            "reference is layout-free)",
            parse_enum<Layout, kLayoutNames.size(), kLayoutNames, &Problem::layout>,
            print_enum<Layout, kLayoutNames.size(), kLayoutNames, &Problem::layout>}
                .with({.draw = hook::draw_layout, .drop = 14}),
        Knob{KnobId::strides, "none|ROLE:LAYOUT[+ROLE:LAYOUT...]",
            kept(fmt::format("per-tensor vendor layout overriding --layout; ROLE {}, LAYOUT a dimension "
            "order (a permutation of bhsd, e.g. K:bhds, stats:bshd), qkv (the strides of a view into one packed "
            "[B,S,H_q*D_qk+H_kv*(D_qk+D_v)] QKV buffer) or strides AxBxCxD in elements in [B,H,S,D] order (0 = "
            "broadcast), e.g. --strides=dO:bshd+K:0x2048x64x1 (docs/knobs_layouts.md)", fmt::join(kStridedRoles, "|"))),
            [](std::string_view v) -> Setter {
                auto l = parse_role_layouts(v);
                if (!l) return {};
                return [x = std::move(*l)](Case& c) { c.prb.strides = x; };
            },
            [](const Case& c) { return role_layouts_name(c.prb.strides); }, S::descriptor, false,
            [](std::string_view v) {
                std::string why;
                parse_role_layouts(v, &why);
                return why.empty() ? std::string() : fmt::format("--strides: {}", why);
            }}.with({.draw = hook::draw_strides, .simpler = hook::simpler_strides, .drop = 1}),
        Knob{KnobId::deterministic, "false|true", "ask the vendor for a deterministic backward (cuDNN)",
            parse_flag<&Problem::deterministic, kFalse, kTrue>, print_flag<&Problem::deterministic, kFalse, kTrue>}
                .with({.draw = hook::draw_deterministic}),
        Knob{KnobId::ragged, "false|true",
            "pack Q, K, V, O, dO and the gradients per batch, valid rows only, token-major (THD; cuDNN's ragged "
            "offsets); needs padding lengths and --layout=bshd",
            parse_flag<&Problem::ragged, kFalse, kTrue>, print_flag<&Problem::ragged, kFalse, kTrue>}
                .with({.draw = hook::draw_ragged, .needs = hook::needs_ragged, .drop = 4}),
        Knob{KnobId::fp8_descale, "default|T:V[+T:V...]",
            kept(fmt::format("--dt=e4m3|e5m2: per-tensor descales (value = fp8 code x descale), T one of {} (S: the "
            "probabilities P; dP: the scaled dS); default: non-unit, non-reciprocal values (docs/knobs_types.md)",
            fmt::join(enum_names(kFp8TensorNames), ", "))),
            [](std::string_view v) -> Setter {
                auto f = parse_fp8_descales(v);
                if (!f) return {};
                return [x = *f](Case& c) { c.prb.fp8 = x; };
            },
            [](const Case& c) {
                const std::string f = fp8_descales_name(c.prb.fp8);
                return f.empty() ? std::string("default") : f;
            },
            S::both, false,
            [](std::string_view v) {
                std::string why;
                parse_fp8_descales(v, &why);
                return why.empty() ? std::string() : fmt::format("--fp8-descale={}: {}", v, why);
            }}.with({.drop = 15}),
        {KnobId::expected_n_partitions, "<partition count, 0: unchecked>",
            "the number of partitions the vendor must split its graph into (benchdnn --graph's knob, whose "
            "default is 1: sdpabench checks only when asked); another count is FAILED (a fusion regression); "
            "UNIMPLEMENTED on a backend that does not partition (only oneDNN does)",
            parse_count<&Case::expected_partitions>,
            [](const Case& c) { return fmt::format("{}", c.expected_partitions); }, S::both, false,
            explain_count<KnobId::expected_n_partitions>},
        Knob{KnobId::dropout, "none|P[:SEED[:OFFSET]]",
            "dropout on P: drop probability P in [0, 1) (0 keeps the dropout op in the graph), the generator's SEED "
            "(default 1) and OFFSET (default 1; 0 is oneDNN's legacy generator path); docs/knobs_dropout.md",
            [](std::string_view v) -> Setter {
                std::optional<Dropout> d;
                if (v != "none" && !(d = parse_dropout(v))) return {};
                return [d](Case& c) { c.prb.dropout = d; };
            },
            [](const Case& c) {
                // An imported graph's repro names the --dropout given for it, not the graph's own.
                const auto& d = c.graph_file.empty() ? c.prb.dropout : c.graph_dropout;
                return d ? dropout_name(*d) : std::string("none");
            },
            S::both, false,
            [](std::string_view v) {
                std::string why;
                if (v != "none") parse_dropout(v, &why);
                return why.empty() ? std::string() : fmt::format("--dropout={}: {}", v, why);
            }}.with({.draw = hook::draw_dropout, .drop = 13}),
        Knob{KnobId::dropout_property, "host_scalar|tensor",
            "how the vendor graph takes the Dropout seed, offset and probability: host scalars (oneDNN's "
            "property_type host_scalar) or [1] device tensors",
            parse_flag<&Problem::dropout_device_scalars, kHostScalar, kTensor>,
            print_flag<&Problem::dropout_device_scalars, kHostScalar, kTensor>}
                .with({.draw = hook::draw_dropout_property, .needs = hook::needs_dropout, .drop = 2}),
        {KnobId::backend, backend_choices(), backend_knob_help(),  // from the registry's rows
            parse_backend, [](const Case& c) { return c.backend; }, S::both, true, explain_backend},
        {KnobId::mode, enum_choices(kModeNames),
            kept(described(kModes)),
            [](std::string_view v) -> Setter {
                const auto m = enum_parse(kModeNames, v);
                if (!m) return {};
                return [x = *m](Case& c) { c.mode = x; };
            },
            // L only lists: its repro is the line that runs the case.
            [](const Case& c) { return fmt::format("{}", c.mode == Mode::L ? Mode::C : c.mode); }, S::both, true},
        {KnobId::check, "full|sample:N",
            "what the reference computes and compares: every row (full), or N >= 1 query rows and N key rows of "
            "every head (a forward: query rows only), rows that see a key and keys that are seen, chosen at the "
            "edges kernels break at (first and last rows, tile, mask and padding edges) and drawn from --seed, each "
            "checked under the full check's bound, with the rest of every output scanned for non-finite values and "
            "masked rows, and dK, dV held to their column sums; O((S_q + S_kv) N D) reference work per head "
            "instead of O(S_q S_kv D) (docs/trust.md#sampled-checks)",
            parse_check, [](const Case& c) { return check_name(c.sample_rows); }, S::both, true, explain_check},
        {KnobId::cpu_isa,
            "default|all|" + enum_choices(kCpuIsaNames).substr(std::string_view("default|").size()) + "|" +
                enum_choices(kCpuIsaAliases),
            "cap the vendor's CPU dispatch at this ISA level (oneDNN's names, as ONEDNN_MAX_CPU_ISA takes them, "
            "lower case; its avx10 aliases too): each level's cases run in a process of that level; all: every level "
            "this CPU has; a level the CPU lacks is SKIPPED; a backend without ISA control (all but onednn) is SKIPPED "
            "at any level but default (docs/knobs_run.md#cpu-isa-levels---cpu-isa)",
            [](std::string_view v) -> Setter {
                const auto l = parse_cpu_isa(v);
                if (!l) return {};
                return [x = *l](Case& c) { c.cpu_isa = x; };
            },
            [](const Case& c) { return fmt::format("{}", c.cpu_isa); }, S::both, true, explain_cpu_isa,
            Knob::Range::none, expand_cpu_isa},
    };
    return t;
}

/// `s` with '|' escaped for a markdown table cell.
std::string md_cell(std::string_view s) {
    std::string out;
    for (const char ch : s) {
        if (ch == '|') out += '\\';
        out += ch;
    }
    return out;
}

}  // namespace

bool Knob::apply(std::string_view v, Case& c) const {
    const Setter set = parse(v);
    if (set) set(c);
    return static_cast<bool>(set);
}

void Knob::reset(Problem& p) const {
    Case c;
    c.prb = std::move(p);
    apply(def(), c);
    p = std::move(c.prb);
}

bool Knob::applies_to(const Case& c) const {
    if (scope == Scope::both) return true;
    return (scope == Scope::graph) == !c.graph_file.empty();
}

const std::vector<Knob>& knob_table() {
    static const std::vector<Knob> table = [] {
        std::vector<Knob> t = make_table();
        const Case defaults;
        for (std::size_t k = 0; k < t.size(); ++k) {
            if (k >= kKnobNames.size() || t[k].id != kKnobNames[k].value)  // a programming error: fail at once
                throw std::logic_error(fmt::format("knob_table: row {} is not kKnobNames[{}]", k, k));
            t[k].name = kKnobNames[k].name;
            t[k].def_ = t[k].print(defaults);  // the repro compares every case against these
        }
        if (t.size() != kKnobNames.size()) throw std::logic_error("knob_table: a KnobId has no row");
        return t;
    }();
    return table;
}

const Knob& knob(KnobId id) { return knob_table()[static_cast<std::size_t>(id)]; }

std::string knobs(const Problem& p) {
    Case c;
    c.prb = p;
    std::string s;
    for (const Knob& k : knob_table()) {
        if (k.run_knob || !k.applies_to(c)) continue;
        if (std::string v = k.print(c); v != k.def()) s += fmt::format("{}--{}={}", s.empty() ? "" : " ", k.name, v);
    }
    return s;
}

std::string repro(const Case& c) {
    std::string s;
    for (const bool run : {true, false})  // the run knobs first, then the problem's
        for (const Knob& k : knob_table())
            if (k.run_knob == run && k.applies_to(c))
                if (std::string v = k.print(c); v != k.def()) s += fmt::format("--{}={} ", k.name, v);
    if (!c.graph_file.empty()) return s + fmt::format("--case={}", c.graph_file);
    return s + descriptor(c.prb.dims, c.prb.name);
}

std::string canonical(const Case& c) {
    std::string s;
    for (const bool run : {true, false})
        for (const Knob& k : knob_table())
            if (k.run_knob == run && k.applies_to(c)) {
                // --dt=default of a descriptor case is f32: spelled as the type, so that a filter on
                // the type finds it.
                const bool resolved = k.id == KnobId::dt && c.graph_file.empty();
                s += fmt::format("--{}={} ", k.name, resolved ? fmt::format("{}", c.prb.dt) : k.print(c));
            }
    if (!c.graph_file.empty()) return s + fmt::format("--case={}", c.graph_file);
    return s + descriptor(c.prb.dims, c.prb.name);
}

std::optional<std::string> knob_table_text(std::string_view format) {
    std::string s;
    if (format == "md") {
        s = "| knob | values | default | what |\n|---|---|---|---|\n";
        for (const Knob& k : knob_table())
            s += fmt::format("| `--{}` | `{}` | `{}` | {} |\n", k.name, md_cell(k.choices),
                    k.def().empty() ? "\"\"" : md_cell(k.def()), md_cell(k.what));
        return s;
    }
    if (format == "tsv") {
        for (const Knob& k : knob_table()) s += fmt::format("{}\t{}\t{}\n", k.name, k.choices, k.def());
        return s;
    }
    return std::nullopt;
}

std::string knob_table_json() {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const Knob& k : knob_table()) {
        const std::string_view scope = k.scope == Knob::Scope::descriptor ? "descriptor"
                                     : k.scope == Knob::Scope::graph      ? "graph"
                                                                          : "both";
        rows.push_back({{"name", k.name}, {"choices", k.choices}, {"default", k.def()}, {"what", k.what},
                {"run_knob", k.run_knob}, {"scope", scope}});
    }
    return rows.dump(2) + "\n";
}

}  // namespace sdpa
