#include "backends/cudnn/cudnn_mapping.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

// Dropout, in cuDNN's caller-supplied-mask mode. The facts used here, all from the cuDNN frontend
// 1.19.1 headers unless a sample is named:
// - graph_properties.h: SDPA_attributes::set_dropout(mask, scale) fills the inputs Dropout_mask and
//   Dropout_scale; SDPA_backward_attributes::set_dropout(mask, scale, scale_inv) fills
//   Dropout_mask, Dropout_scale and Dropout_scale_inv. Both are user tensors (graph->tensor(...)).
// - node/scaled_dot_product_flash_attention.h, forward (CompositeSDPANode): after the softmax,
//   whose Stats output is therefore the log-sum-exp of the undropped scores, P is multiplied by
//   Dropout_scale ("dropout_scale_mul") and then by Dropout_mask ("dropout_mask_mul"), both
//   pointwise MUL: P_d = Z o P * scale, so scale = 1/(1-p) gives sdpabench's P_d.
// - the same file, backward (CompositeSDPABackwardNode): P * Dropout_mask * Dropout_scale before
//   the dV matmul ("mul_p_dropout_mask", "mul_p_dropout_scale"); dP * Dropout_mask
//   ("dP_dropout_mask"); softmax_sum = rowsum(dO o O) * Dropout_scale_inv ("scale_dropout_inv");
//   dS = (Z o dP - softmax_sum) o P * Dropout_scale ("mul_dS_dropout_scale"). With scale = 1/(1-p)
//   and scale_inv = 1-p that is dS = P o (Z o dP/(1-p) - D), sdpabench's semantics. The
//   probability mode of the same node sets exactly these two values (1.0f / (1.0f - p) and
//   1.0f - p, FLOAT by-value scalars), which is where scale_inv = 1-p comes from.
// - The frontend's sample fp16_fwd_with_custom_dropout.cpp (the only caller-supplied-mask example
//   NVIDIA ships): mask dims {b, h_q, s_q, s_kv}, dense strides {h_q*s_q*s_kv, s_q*s_kv, s_kv, 1},
//   data type BFLOAT16 = the graph's io type; scale dims and strides {1,1,1,1}, FLOAT,
//   set_is_pass_by_value(true), the variant pack holding a host float pointer. No NVIDIA sample or
//   test uses a UINT8 or BOOLEAN mask, so the mask here is the io dtype (2 bytes per score, not
//   the 1 byte of core/geometry.hpp's u8 dropout_mask slot). The sample skips Blackwell
//   ("Providing a custom dropout is not supported on blackwell").
// - node/sdpa_support_surface.h: with any dropout the forward rejects the bottom-right alignment
//   ("Bottom right causal mask is only supported with ... is_dropout=False") and a left bound
//   ("Left and right bounds are only supported with is_dropout=False ..."); the backward checks
//   the same in scaled_dot_product_flash_attention.h. So causal_br and window cases with dropout
//   come back from cuDNN's validate() as UNIMPLEMENTED with that message. The UNIFIED
//   implementation takes only Q, K, V, Attn_scale (and seq lens, page tables, block mask) as
//   inputs, so a dropout forward is always the COMPOSITE node.
// - p = 0: the frontend's checks on p (p == 1 rejected in sdpa_support_surface.h and
//   scaled_dot_product_flash_attention.h; p == 0 dropping the forward's dropout nodes in the
//   latter) test dropout_probability, i.e. the Philox mode only; the mask mode takes any mask and
//   scale. So p = 0 keeps the mask
//   and scale 1 in the graph. A risk the GPU run has to settle: the harness reruns a p = 0 case
//   without dropout and wants bitwise equal outputs, and an unmasked forward without dropout
//   may auto-select the UNIFIED node while the dropout graph is COMPOSITE.
//
// Long term, cuDNN's Philox mode (set_dropout(probability, seed, offset)) is the better path for
// performance: no [B, H_q, S_q, S_kv] mask in device memory and no mask reads in either kernel
// (the mask mode's timings include them). It needs the reference to know cuDNN's generator bit
// for bit, which cuDNN does not document; its RNG_DUMP output (set_rng_dump, "for debugging
// purposes only", rejected on SM 10.x by sdpa_support_surface.h) could read the mask back instead.

namespace sdpa::cudnn {

const TensorDesc* GraphDesc::find(Uid uid) const {
    for (const auto* list : {&inputs, &outputs})
        for (const auto& t : *list)
            if (t.uid == uid) return &t;
    return nullptr;
}

const ScalarDesc* GraphDesc::find_scalar(Uid uid) const {
    for (const auto& s : scalars)
        if (s.uid == uid) return &s;
    return nullptr;
}

std::vector<BoundTensor> bound_tensors(const GraphDesc& g) {
    std::vector<BoundTensor> out;
    for (const auto* list : {&g.inputs, &g.outputs})
        for (const TensorDesc& t : *list)
            out.push_back({t.name, fmt::format("{}", t.geom.type), {t.geom.dims.begin(), t.geom.dims.end()},
                {t.geom.strides.begin(), t.geom.strides.end()}});
    for (const ScalarDesc& s : g.scalars)
        out.push_back({s.name, fmt::format("{}", s.type), {s.dims.begin(), s.dims.end()}, {s.strides.begin(), s.strides.end()}});
    for (const RaggedDesc& r : g.ragged) {
        const auto n = static_cast<std::int64_t>(r.offsets.size());
        out.push_back({r.name, fmt::format("{}", r.type), {n, 1, 1, 1}, {1, 1, 1, 1}});
    }
    return out;
}

std::optional<TensorGeom> dropout_mask_geom(const Problem& p) {
    if (!p.dropout) return std::nullopt;
    const Geometry geo = geometry(p);
    // The geometry's dropout_mask slot when it has one, else the scores role (the same
    // [B, H_q, S_q, S_kv], dense bhsd: --strides cannot touch either).
    TensorGeom t = geo.has(Role::dropout_mask) ? geo.at(Role::dropout_mask) : geo.at(Role::scores);
    t.role = Role::dropout_mask;
    t.type = elem_type(p.dt);  // the io dtype, as in NVIDIA's sample (see above)
    t.input = true;
    t.output = false;
    return t;
}

std::vector<std::byte> dropout_mask_bytes(const TensorGeom& t, const DropoutMask& m) {
    const std::size_t es = size_of(t.type);
    std::vector<std::byte> bytes(static_cast<std::size_t>(t.span()) * es);  // zero bits: 0 in every type
    std::byte one[8] = {};
    if (const auto ft = float_type(t.type)) {
        const float v = 1.f;
        encode(*ft, &v, one, 1);
    } else {
        one[0] = std::byte{1};  // u8 / s32 / s64: little-endian 1
    }
    const std::int64_t rows = t.dims[0] * t.dims[1] * t.dims[2], n = t.dims[3];
#pragma omp parallel
    {
        std::vector<std::uint8_t> keep(static_cast<std::size_t>(n));
#pragma omp for schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t b = r / (t.dims[1] * t.dims[2]), h = r / t.dims[2] % t.dims[1], i = r % t.dims[2];
            m.keep_row(b, h, i, 0, n, keep.data());
            for (std::int64_t j = 0; j < n; ++j)
                if (keep[static_cast<std::size_t>(j)])
                    std::memcpy(bytes.data() + static_cast<std::size_t>(t.offset(b, h, i, j)) * es, one, es);
        }
    }
    return bytes;
}

namespace {

/// The uid of the ragged offsets of io role `r`.
Uid ragged_uid(Role r) {
    switch (r) {
        case Role::K: return Uid::ragged_K;
        case Role::V: return Uid::ragged_V;
        case Role::O: return Uid::ragged_O;
        case Role::dO: return Uid::ragged_dO;
        case Role::dQ: return Uid::ragged_dQ;
        case Role::dK: return Uid::ragged_dK;
        case Role::dV: return Uid::ragged_dV;
        default: return Uid::ragged_Q;
    }
}

/// The descriptor of io role `r` as tensor `uid`; its ragged offsets, when it has some, added to
/// g (an s32 tensor unless one passes 2^31 - 1).
TensorDesc io_tensor(GraphDesc& g, const Geometry& geo, Uid uid, Role r) {
    TensorDesc t{uid, fmt::format("{}", r), geo.at(r), std::nullopt};
    if (!t.geom.ragged_offsets.empty()) {
        RaggedDesc rd{ragged_uid(r), fmt::format("ragged_offset_{}", r), ElemType::s32, t.geom.ragged_offsets};
        if (rd.offsets.back() > std::numeric_limits<std::int32_t>::max()) rd.type = ElemType::s64;
        t.ragged = rd.uid;
        g.ragged.push_back(std::move(rd));
    }
    return t;
}

/// Padding: the problem's lengths; or full lengths for a bottom-right band with S_q > S_kv,
/// which cuDNN accepts only with a padding mask (see the header).
void add_padding(GraphDesc& g, const Problem& p, const Geometry& geo) {
    const Dims& d = p.dims;
    const bool bottom_right = p.mask == Mask::causal_br || p.mask == Mask::window;
    g.padding = geo.has(Role::seq_len_q) || (bottom_right && d.S_q > d.S_kv);
    if (!g.padding) return;
    for (std::int64_t b = 0; b < d.B; ++b) {
        g.seq_len_q.push_back(static_cast<std::int32_t>(valid_q(p, b)));
        g.seq_len_kv.push_back(static_cast<std::int32_t>(valid_kv(p, b)));
    }
    TensorGeom lens = geo.has(Role::seq_len_q) ? geo.at(Role::seq_len_q) : TensorGeom{};
    if (!geo.has(Role::seq_len_q)) {  // the geometry's padding-length role, as if padding were given
        lens.type = ElemType::s32;
        lens.dims = {d.B, 1, 1, 1};
        lens.input = true;
    }
    lens.role = Role::seq_len_q;
    g.inputs.push_back(TensorDesc{Uid::seq_len_q, "seq_len_q", lens, std::nullopt});
    lens.role = Role::seq_len_kv;
    g.inputs.push_back(TensorDesc{Uid::seq_len_kv, "seq_len_kv", lens, std::nullopt});
}

/// Dropout: the keep mask as an input, and the by-value scale (and the backward's scale_inv),
/// computed in float as the frontend's own probability mode does.
void add_dropout(GraphDesc& g, const Problem& p) {
    const auto mask = dropout_mask_geom(p);
    if (!mask) return;
    const float keep = 1.0f - p.dropout->p;
    g.dropout = true;
    g.inputs.push_back(TensorDesc{Uid::dropout_mask, "dropout_mask", *mask, std::nullopt});
    g.scalars.push_back(ScalarDesc{Uid::dropout_scale, "dropout_scale", ElemType::f32, {1, 1, 1, 1}, {1, 1, 1, 1},
            1.0f / keep});
    if (g.backward)
        g.scalars.push_back(ScalarDesc{Uid::dropout_scale_inv, "dropout_scale_inv", ElemType::f32, {1, 1, 1, 1},
                {1, 1, 1, 1}, keep});
}

/// fp8: the graphs' scalars as [1,1,1,1] f32 device tensors (each input's descale, and for each
/// quantised result the scale 1/descale: core/fp8.hpp), and the amax outputs in one buffer.
void add_fp8(GraphDesc& g, const Problem& p, const Geometry& geo) {
    g.fp8 = true;
    auto scalar = [&](Uid uid, std::string name, Fp8Tensor t, bool scale) {
        const float dv = p.fp8.of(t);
        ScalarDesc s{uid, std::move(name), ElemType::f32, {1, 1, 1, 1}, {1, 1, 1, 1}, scale ? 1.f / dv : dv, false};
        g.scalars.push_back(std::move(s));
    };
    scalar(Uid::descale_q, "descale_q", Fp8Tensor::Q, false);
    scalar(Uid::descale_k, "descale_k", Fp8Tensor::K, false);
    scalar(Uid::descale_v, "descale_v", Fp8Tensor::V, false);
    scalar(Uid::descale_s, "descale_s", Fp8Tensor::S, false);
    scalar(Uid::scale_s, "scale_s", Fp8Tensor::S, true);
    if (!g.backward) {
        scalar(Uid::scale_o, "scale_o", Fp8Tensor::O, true);
        g.amax = {{Uid::amax_s, "amax_s", 0}, {Uid::amax_o, "amax_o", 1}};  // kAmaxFwd
    } else {
        scalar(Uid::descale_o, "descale_o", Fp8Tensor::O, false);
        scalar(Uid::descale_dO, "descale_dO", Fp8Tensor::dO, false);
        scalar(Uid::descale_dP, "descale_dP", Fp8Tensor::dP, false);
        scalar(Uid::scale_dQ, "scale_dQ", Fp8Tensor::dQ, true);
        scalar(Uid::scale_dK, "scale_dK", Fp8Tensor::dK, true);
        scalar(Uid::scale_dV, "scale_dV", Fp8Tensor::dV, true);
        scalar(Uid::scale_dP, "scale_dP", Fp8Tensor::dP, true);
        g.amax = {{Uid::amax_dQ, "amax_dQ", 0}, {Uid::amax_dK, "amax_dK", 1}, {Uid::amax_dV, "amax_dV", 2},
            {Uid::amax_dP, "amax_dP", 3}};  // kAmaxBwd
    }
    // Each amax entry in its own 16-byte slot: cuDNN takes the frontend's declared alignment.
    TensorGeom buf = geo.at(Role::amax);
    const auto slot = static_cast<std::int64_t>(kTensorAlignment / size_of(buf.type));
    buf.strides = {slot * buf.dims[3], slot * buf.dims[3], slot * buf.dims[3], slot};
    for (AmaxDesc& a : g.amax)
        a.byte_offset = static_cast<std::size_t>(buf.offset(0, 0, 0, a.index)) * size_of(buf.type);
    g.amax_buffer = std::move(buf);
}

/// The causal masks and the window as cuDNN's diagonal alignment and band bounds.
void set_band(GraphDesc& g, const Problem& p) {
    switch (p.mask) {
        case Mask::causal_tl:
            g.alignment = Alignment::top_left;
            g.right_bound = 0;
            break;
        case Mask::causal_br:
            g.alignment = Alignment::bottom_right;
            g.right_bound = 0;
            break;
        case Mask::window:  // clamped: a bound past the sequence shows no more keys (see the header)
            g.alignment = Alignment::bottom_right;
            g.left_bound = std::min(window_extent(p, p.window_left), p.dims.S_kv) + 1;
            g.right_bound = std::min(window_extent(p, p.window_right), p.dims.S_q);
            break;
        default: break;
    }
}

}  // namespace

GraphDesc describe_graph(const Problem& p) {
    const Geometry geo = geometry(p);
    GraphDesc g;
    g.backward = p.dir == Dir::bwd;
    g.generate_stats = p.dir == Dir::fwd_t;
    const float v = scale_tensor_value(p);
    g.attn_scale = p.scale_op == ScaleOp::mul ? v : 1.f / v;
    g.inputs.push_back(io_tensor(g, geo, Uid::Q, Role::Q));
    g.inputs.push_back(io_tensor(g, geo, Uid::K, Role::K));
    g.inputs.push_back(io_tensor(g, geo, Uid::V, Role::V));
    if (geo.has(Role::bias)) g.inputs.push_back(io_tensor(g, geo, Uid::bias, Role::bias));
    add_padding(g, p, geo);
    add_dropout(g, p);
    if (g.backward) {
        g.inputs.push_back(io_tensor(g, geo, Uid::O, Role::O));
        g.inputs.push_back(io_tensor(g, geo, Uid::dO, Role::dO));
        g.inputs.push_back(io_tensor(g, geo, Uid::stats, Role::stats));
        g.outputs.push_back(io_tensor(g, geo, Uid::dQ, Role::dQ));
        g.outputs.push_back(io_tensor(g, geo, Uid::dK, Role::dK));
        g.outputs.push_back(io_tensor(g, geo, Uid::dV, Role::dV));
        g.deterministic = p.deterministic;
    } else {
        g.outputs.push_back(io_tensor(g, geo, Uid::O, Role::O));
        if (g.generate_stats) g.outputs.push_back(io_tensor(g, geo, Uid::stats, Role::stats));
    }
    if (is_fp8(p.dt)) add_fp8(g, p, geo);
    set_band(g, p);
    return g;
}

std::optional<std::string> cudnn_precheck(const Problem& p) {
    if (p.dt == DType::f32) return "cuDNN SDPA takes f16, bf16 or fp8 io only (got --dt=f32)";
    // cuDNN's dBias output (sdpa_backward's set_dbias) is not wired in this adapter yet.
    if (p.dmask) return "the cuDNN adapter does not output dMask (--dmask=true): cuDNN's dBias is not wired";
    return std::nullopt;
}

}  // namespace sdpa::cudnn
