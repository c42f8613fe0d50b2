#include "backends/faulty/faulty_backend.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>

#include <fmt/format.h>

#include "backends/ref/ref_backend.hpp"
#include "backends/registry.hpp"
#include "compare/compare.hpp"
#include "core/geometry.hpp"
#include "core/parse_number.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

namespace {

using i64 = std::int64_t;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// The problem and inputs with the mask replaced by a full [B,H_q,S_q,S_kv] f32 bias: the
/// original bias value where `vis(b,h,i,j)` holds, -inf elsewhere (padding folded in too).
std::pair<Problem, SdpaInputs> with_visibility(const Problem& p, SdpaInputs in,
        const std::function<bool(i64, i64, i64, i64)>& vis) {
    const Dims& d = p.dims;
    Problem q = p;
    q.mask = Mask::bias;
    q.bias_shape = BiasShape::bh;
    q.mask_dt = DType::f32;
    q.seq_len_q.clear();
    q.seq_len_kv.clear();
    q.strides.erase(Role::bias);
    Tensor bias(geometry(q).at(Role::bias).dims, DType::f32);
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i)
                for (i64 j = 0; j < d.S_kv; ++j) {
                    const float m = p.mask == Mask::bias ? in.bias.data[in.bias.broadcast_offset(b, h, i, j)] : 0.f;
                    bias.at(b, h, i, j) = vis(b, h, i, j) ? m : -std::numeric_limits<float>::infinity();
                }
    in.bias = std::move(bias);
    return {std::move(q), std::move(in)};
}

bool is_causal(const Problem& p) { return p.mask == Mask::causal_tl || p.mask == Mask::causal_br; }

/// faulty:bound_fraction: the reference's outputs with every compared element of O, dQ, dK, dV
/// set to the unrounded reference value moved by F x its bound, up at even and down at odd
/// positions, stored in the io type (one rounding, so the error is F x the bound up to it).
SdpaOutputs near_bound(const Problem& p, const SdpaInputs& in, double fraction) {
    SdpaOutputs out = reference_as_vendor(p, in);
    if (is_fp8(p.dt)) return out;
    // The unrounded values and the magnitudes of the same reference run (reference_as_vendor's
    // options and mask), which the checks compare against.
    RefOptions opt;
    const std::shared_ptr<const DropoutMask> mask = p.dropout ? ref_dropout_mask(p) : nullptr;
    opt.dropout = mask.get();
    const auto shift = [&](Output o, Tensor& x, const Tensor& ref, const Tensor& mag) {
        const ElementBound eb = element_bound(output_rule(p, o), mag, reduction_length(p, o));
        for (std::size_t i = 0; i < x.size(); ++i) {
            if (!std::isfinite(ref.data[i]) || structural(p, o, x.index(i))) continue;
            const double d = fraction * eb.at(mag.data[i]);
            x.data[i] = round_to(p.dt, static_cast<float>(ref.data[i] + (i % 2 == 0 ? d : -d)));
        }
    };
    if (p.dir == Dir::bwd) {
        const RefBackward b = ref_backward(p, in, opt);
        shift(Output::dQ, out.dQ, b.dQ, b.M_dQ);
        shift(Output::dK, out.dK, b.dK, b.M_dK);
        shift(Output::dV, out.dV, b.dV, b.M_dV);
    } else {
        const RefForward f = ref_forward(p, in, opt);
        shift(Output::O, out.O, f.O, f.M_O);
    }
    return out;
}

/// faulty:causal_off_by_one: each query of a causal mask also sees the key after its last one.
SdpaOutputs causal_off_by_one(const Problem& p, const SdpaInputs& in) {
    if (!is_causal(p)) return reference_as_vendor(p, in);
    auto [q, qin] = with_visibility(p, in, [&](i64 b, i64, i64 i, i64 j) {
        return visible(p, b, i, j) || (j > 0 && j < valid_kv(p, b) && visible(p, b, i, j - 1));
    });
    return reference_as_vendor(q, qin);
}

/// faulty:causal_tl_br_swapped: causal_tl run as causal_br and the other way round.
SdpaOutputs causal_tl_br_swapped(const Problem& p, const SdpaInputs& in) {
    Problem q = p;
    if (p.mask == Mask::causal_tl) q.mask = Mask::causal_br;
    else if (p.mask == Mask::causal_br) q.mask = Mask::causal_tl;
    return reference_as_vendor(q, in);
}

/// faulty:drop_last_key: the last valid key of every row hidden.
SdpaOutputs drop_last_key(const Problem& p, const SdpaInputs& in) {
    auto [q, qin] = with_visibility(
            p, in, [&](i64 b, i64, i64 i, i64 j) { return visible(p, b, i, j) && j != valid_kv(p, b) - 1; });
    return reference_as_vendor(q, qin);
}

/// faulty:tail_unmasked: the keys past the last multiple of 64 of S_kv visible to every valid
/// query, with score 0 (their K rows zeroed).
SdpaOutputs tail_unmasked(const Problem& p, const SdpaInputs& in) {
    const Dims& d = p.dims;
    const i64 tail = d.S_kv / 64 * 64;
    auto [q, qin] = with_visibility(p, in, [&](i64 b, i64, i64 i, i64 j) {
        return visible(p, b, i, j) || (j >= tail && i < valid_q(p, b));
    });
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_kv; ++h)
            for (i64 j = tail; j < d.S_kv; ++j)
                for (i64 k = 0; k < d.D_qk; ++k) qin.K.at(b, h, j, k) = 0.f;
    return reference_as_vendor(q, qin);
}

/// faulty:gqa_no_reduce: a backward's dK and dV from the first query head of each group only
/// (the other heads' dO zeroed).
SdpaOutputs gqa_no_reduce(const Problem& p, const SdpaInputs& in) {
    const Dims& d = p.dims;
    const i64 group = d.H_q / d.H_kv;
    SdpaOutputs out = reference_as_vendor(p, in);
    if (p.dir != Dir::bwd) return out;
    SdpaInputs first = in;
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            if (h % group != 0)
                for (i64 i = 0; i < d.S_q; ++i)
                    for (i64 k = 0; k < d.D_v; ++k) first.dO.at(b, h, i, k) = 0.f;
    SdpaOutputs part = reference_as_vendor(p, first);
    out.dK = std::move(part.dK);
    out.dV = std::move(part.dV);
    return out;
}

/// The dropout faults (dropout_one_mask, dropout_bwd_offset, dropout_ds_dropped_p,
/// dropout_no_rescale): the kernel's mask or formula is wrong; the mask it declares
/// (ref_dropout_mask) is not.
SdpaOutputs dropout_fault(FaultKind kind, const Problem& p, const SdpaInputs& in) {
    RefOptions opt;
    std::shared_ptr<const DropoutMask> mask = ref_dropout_mask(p);
    if (kind == FaultKind::dropout_one_mask)
        mask = remapped_dropout_mask(mask, [](i64, i64) { return std::pair<i64, i64>{0, 0}; },
                "the mask of (b,h) = (0,0) for every head");
    if (kind == FaultKind::dropout_bwd_offset && p.dir == Dir::bwd && p.dropout) {
        Problem q = p;
        ++q.dropout->offset;
        mask = ref_dropout_mask(q);
    }
    opt.dropout = mask.get();
    opt.dropout_ds_from_dropped_p = kind == FaultKind::dropout_ds_dropped_p;
    opt.dropout_no_rescale = kind == FaultKind::dropout_no_rescale;
    return reference_as_vendor(p, in, opt);
}

/// faulty:fp8_qk_descales_dropped: the kernel forms S = op(Q_code K_code^T, scale): on values, the
/// scale divided by descale_Q x descale_K (1 for a non-fp8 problem: then it is the reference).
SdpaOutputs fp8_qk_descales_dropped(const Problem& p, const SdpaInputs& in) {
    if (!is_fp8(p.dt)) return reference_as_vendor(p, in);
    Problem q = p;
    const double dqk = static_cast<double>(p.fp8.of(Fp8Tensor::Q)) * p.fp8.of(Fp8Tensor::K);
    const double v = scale_tensor_value(p);
    q.scale = static_cast<float>(p.scale_op == ScaleOp::mul ? v / dqk : v * dqk);
    q.scale_dt = DType::f32;
    return reference_as_vendor(q, in);
}

/// faulty:dmask_no_reduce: dMask of the first (b, h, row) of each broadcast group (the reference's
/// own switch).
SdpaOutputs dmask_no_reduce(const Problem& p, const SdpaInputs& in) {
    RefOptions opt;
    opt.dmask_no_reduce = true;
    return reference_as_vendor(p, in, opt);
}

/// faulty:stats_log2: the correct stats divided by ln 2 (log2 of the sum).
void stats_log2(SdpaOutputs& out) {
    for (float& x : out.stats.data) x = static_cast<float>(x / std::numbers::ln2);
}

/// faulty:stats_first_head_of_group: every query head's stats replaced by its group's first head's.
void stats_first_head_of_group(const Problem& p, SdpaOutputs& out) {
    const Dims& d = p.dims;
    const i64 group = d.H_q / d.H_kv;
    for (i64 b = 0; b < d.B && !out.stats.empty(); ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i) out.stats.at(b, h, i, 0) = out.stats.at(b, h / group * group, i, 0);
}

/// faulty:dq_no_scale: the correct dQ divided by the effective softmax scale, rounded to the io type.
void dq_no_scale(const Problem& p, SdpaOutputs& out) {
    const float v = scale_tensor_value(p);
    const double eff = p.scale_op == ScaleOp::mul ? v : 1.0 / v;
    for (float& x : out.dQ.data) x = round_to(p.dt, static_cast<float>(x / eff));
}

/// faulty:stale_head_pad: dQ columns past the last multiple of 16 of D_qk copied from 16 columns
/// before (0.5 where there is none).
void stale_head_pad(const Problem& p, SdpaOutputs& out) {
    const Dims& d = p.dims;
    const i64 pad = d.D_qk / 16 * 16;
    for (i64 b = 0; b < d.B && !out.dQ.empty(); ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i)
                for (i64 k = pad; k < d.D_qk; ++k) out.dQ.at(b, h, i, k) = k >= 16 ? out.dQ.at(b, h, i, k - 16) : 0.5f;
}

/// faulty:nan_masked_rows: the fully masked rows of O and dQ set to NaN.
void nan_masked_rows(const Problem& p, SdpaOutputs& out) {
    const Dims& d = p.dims;
    for (Tensor* t : {&out.O, &out.dQ})
        for (i64 b = 0; b < d.B && !t->empty(); ++b)
            for (i64 i = 0; i < d.S_q; ++i)
                if (row_fully_masked(p, b, i))
                    for (i64 h = 0; h < d.H_q; ++h)
                        for (i64 k = 0; k < t->dims[3]; ++k) t->at(b, h, i, k) = kNaN;
}

/// The outputs of fault `kind` on p: a fault of the computation runs the reference on a changed
/// problem or inputs; a fault of the results changes the reference's correct outputs (the kinds
/// faulty_kernel injects at another step never come here).
SdpaOutputs run_fault(FaultKind kind, const Problem& p, const SdpaInputs& in, double fraction) {
    switch (kind) {
        case FaultKind::bound_fraction: return near_bound(p, in, fraction);
        case FaultKind::causal_off_by_one: return causal_off_by_one(p, in);
        case FaultKind::causal_tl_br_swapped: return causal_tl_br_swapped(p, in);
        case FaultKind::drop_last_key: return drop_last_key(p, in);
        case FaultKind::tail_unmasked: return tail_unmasked(p, in);
        case FaultKind::gqa_no_reduce: return gqa_no_reduce(p, in);
        case FaultKind::dropout_one_mask:
        case FaultKind::dropout_bwd_offset:
        case FaultKind::dropout_ds_dropped_p:
        case FaultKind::dropout_no_rescale: return dropout_fault(kind, p, in);
        case FaultKind::fp8_qk_descales_dropped: return fp8_qk_descales_dropped(p, in);
        case FaultKind::dmask_no_reduce: return dmask_no_reduce(p, in);
        default: break;
    }
    // Faults applied to the correct outputs.
    SdpaOutputs out = reference_as_vendor(p, in);
    switch (kind) {
        case FaultKind::stats_log2: stats_log2(out); break;
        case FaultKind::stats_first_head_of_group: stats_first_head_of_group(p, out); break;
        case FaultKind::dq_no_scale: dq_no_scale(p, out); break;
        case FaultKind::stale_head_pad: stale_head_pad(p, out); break;
        case FaultKind::nan_masked_rows: nan_masked_rows(p, out); break;
        default: break;
    }
    return out;
}

/// `x` one step of dt's grid away from zero; x itself for 0, a non-finite value, the largest
/// finite value (the next step is infinite) and fp8.
float next_away_from_zero(DType dt, float x) {
    if (x == 0.f || !std::isfinite(x) || is_fp8(dt)) return x;
    float y = x;
    switch (dt) {
        case DType::bf16: y = bf16_bits_to_f32(static_cast<std::uint16_t>(f32_to_bf16_bits(x) + 1)); break;
        case DType::f16: y = f16_bits_to_f32(static_cast<std::uint16_t>(f32_to_f16_bits(x) + 1)); break;
        default: y = std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) + 1); break;
    }
    return std::isfinite(y) ? y : x;
}

/// The jitter of phase `phase` of `t` (elements of type dt): every nonzero element e with e + phase
/// odd one step away from zero, so that two phases in a row differ at every nonzero element.
void jitter(Tensor& t, DType dt, i64 phase) {
    for (std::size_t e = 0; e < t.size(); ++e)
        if ((static_cast<i64>(e) + phase) % 2 == 1) t.data[e] = next_away_from_zero(dt, t.data[e]);
}

/// Writes 0 one element past the last column of every row of `buf`'s output where that position
/// is in a stride gap (no logical element there).
void write_past_rows(GuardedBuffer& buf) {
    const TensorGeom& t = buf.geometry();
    const auto n = static_cast<i64>(buf.size() / size_of(t.type));
    const float zero = 0.f;
    for (i64 a = 0; a < t.dims[0]; ++a)
        for (i64 b = 0; b < t.dims[1]; ++b)
            for (i64 c = 0; c < t.dims[2]; ++c) {
                const i64 o = t.offset(a, b, c, t.dims[3] - 1) + t.strides[3];
                const auto x = t.coords_of(o);
                bool logical = true;
                for (std::size_t k = 0; k < 4; ++k) logical = logical && x[k] < t.dims[k];
                if ((logical && t.offset(x[0], x[1], x[2], x[3]) == o) || o >= n) continue;
                encode(*float_type(t.type), &zero, static_cast<std::byte*>(buf.data()) + o * static_cast<i64>(size_of(t.type)), 1);
            }
}

/// What the environment sets for a faulty backend (faulty_backend.hpp): bound_fraction's F and
/// every kind's repeat count, or why they are unusable.
struct FaultSettings {
    double fraction = 0.5;
    long repeat = 1;
    std::string error;  ///< "" when both are usable
};

FaultSettings fault_settings(std::string_view name) {
    FaultSettings s;
    if (const char* env = std::getenv(kBoundFractionVariable)) {
        const auto f = parse_number<double>(env);
        if (f && *f >= 0) s.fraction = *f;
        else s.error = fmt::format("{}: {}='{}' is not a number >= 0 (the fraction of each element's bound added to "
                                   "O, dQ, dK, dV)", name, kBoundFractionVariable, env);
    }
    if (const char* env = std::getenv(kRepeatVariable)) {
        const auto n = parse_number<long>(env);
        if (n && *n >= 1 && *n <= 1000) s.repeat = *n;
        else s.error = fmt::format("{}: {}='{}' is not a whole number in [1, 1000] (how many times each run computes "
                                   "its outputs)", name, kRepeatVariable, env);
    }
    return s;
}

/// writes_input: the first 16 bytes of Q's and dO's buffers overwritten with 0xff (a NaN in every
/// float type, which no fill makes), as a kernel that reuses its inputs as scratch after reading
/// them leaves them; the outputs, computed before, are right.
void scratch_inputs(Role r, std::vector<std::byte>& bytes) {
    if (r != Role::Q && r != Role::dO) return;
    std::fill_n(bytes.begin(), std::min<std::size_t>(bytes.size(), 16), std::byte{0xff});
}

/// The reference kernel with fault `kind` injected at the step where that bug lives, computing
/// its outputs s.repeat times per run. `plan` is the plan's number among the backend's plans (the
/// nondeterministic faults start each plan in the phase after the last one's).
RefKernel faulty_kernel(FaultKind kind, const FaultSettings& s, i64 plan) {
    const double fraction = s.fraction;
    RefKernel k;
    k.notes = {kind == FaultKind::bound_fraction
                    ? fmt::format("injected fault: {} ({}={})", kind, kBoundFractionVariable, fraction)
                    : fmt::format("injected fault: {}", kind)};
    if (s.repeat > 1) k.notes.push_back(fmt::format("every run computes its outputs {} times ({})", s.repeat, kRepeatVariable));
    k.impl = fmt::format("sdpabench reference with the fault {}", kind);
    switch (kind) {
        case FaultKind::dq_nondeterministic:
        case FaultKind::dmask_nondeterministic:
            k.compute = [kind, phase = std::make_shared<i64>(plan)](const Problem& p, const SdpaInputs& in) {
                SdpaOutputs out = reference_as_vendor(p, in);
                if (kind == FaultKind::dq_nondeterministic) jitter(out.dQ, p.dt, (*phase)++);
                else jitter(out.dMask, DType::f32, (*phase)++);
                return out;
            };
            break;
        case FaultKind::do_strides_as_o:
            k.read_as = [](const Geometry& g, Role r) {
                TensorGeom t = g.at(r);
                if (r == Role::dO) t.strides = g.at(Role::O).strides;
                return t;
            };
            break;
        case FaultKind::stats_strides_ignored:
            k.write_as = [](const Geometry& g, Role r) {
                TensorGeom t = g.at(r);
                if (r == Role::stats) {
                    const auto s = dense_strides({t.dims.begin(), t.dims.end()});
                    std::copy(s.begin(), s.end(), t.strides.begin());
                }
                return t;
            };
            break;
        case FaultKind::stride_gap_write:
            k.after_write = [](Role, GuardedBuffer& buf) { write_past_rows(buf); };
            break;
        case FaultKind::writes_input:
            k.after_run = scratch_inputs;
            break;
        case FaultKind::fp8_scale_o_dropped:
            k.write_as = [](const Geometry& g, Role r) {
                TensorGeom t = g.at(r);
                if (r == Role::O) t.descale = 1.f;  // codes = O itself; read back as O x descale_O
                return t;
            };
            break;
        default:
            k.compute = [kind, fraction](const Problem& p, const SdpaInputs& in) {
                return run_fault(kind, p, in, fraction);
            };
    }
    if (s.repeat > 1) {
        std::function<SdpaOutputs(const Problem&, const SdpaInputs&)> once = k.compute;
        if (!once) once = [](const Problem& p, const SdpaInputs& in) { return reference_as_vendor(p, in); };
        // The extra computations are work only: a nondeterministic kind's plan steps its phase once
        // per run whatever N (an even N must not make two runs in a row bitwise equal).
        const bool stateful = kind == FaultKind::dq_nondeterministic || kind == FaultKind::dmask_nondeterministic;
        std::function<SdpaOutputs(const Problem&, const SdpaInputs&)> work = once;
        if (stateful) work = [](const Problem& p, const SdpaInputs& in) { return reference_as_vendor(p, in); };
        k.compute = [once, work, n = s.repeat](const Problem& p, const SdpaInputs& in) {
            for (long i = 1; i < n; ++i) (void)work(p, in);
            return once(p, in);
        };
    }
    return k;
}

class FaultyBackend final : public Backend {
public:
    explicit FaultyBackend(FaultKind k)
        : kind_(k), name_(fmt::format("{}{}", kFaultyPrefix, k)), settings_(fault_settings(name_)) {}
    std::string_view name() const override { return name_; }
    std::string version() const override {
        return kind_ == FaultKind::bound_fraction
                ? fmt::format("{}: the reference off by {} of each element's bound ({})", name_, settings_.fraction,
                          kBoundFractionVariable)
                : fmt::format("{}: the reference with an injected fault", name_);
    }
    std::optional<Unsupported> support(const Problem&) const override {
        if (!settings_.error.empty()) return Unsupported{Status::invalid_arguments, settings_.error};
        return std::nullopt;
    }
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const override {
        return reference_backend_host_items(p, threads);
    }
    /// The reference's own generator: the mask the faulty kernel claims to apply.
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        return make_reference_plan(p, in, faulty_kernel(kind_, settings_, plans_++));
    }

private:
    FaultKind kind_;
    std::string name_;
    FaultSettings settings_;
    i64 plans_ = 0;  ///< plans made so far
};

}  // namespace

std::unique_ptr<Backend> make_faulty_backend(std::string_view kind) {
    const auto k = enum_parse(kFaultNames, kind);
    if (!k) return nullptr;
    return std::make_unique<FaultyBackend>(*k);
}

std::vector<std::string> fault_kind_names() {
    std::vector<std::string> names;
    for (const auto& row : kFaultNames) names.emplace_back(row.name);
    return names;
}

}  // namespace sdpa
