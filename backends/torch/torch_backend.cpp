#include "backends/torch/torch_backend.hpp"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

#include <omp.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/guarded_buffer.hpp"
#include "backends/registry.hpp"
#include "backends/strided_buffer.hpp"
#include "backends/torch/torch_abi.hpp"
#include "core/geometry.hpp"
#include "core/memory_estimate.hpp"

namespace sdpa {

const std::array<TorchVariantInfo, 6> kTorchVariants{{
    {TorchVariant::math, TorchDevice::cpu, "math", "at::_scaled_dot_product_attention_math",
        "autograd through at::_scaled_dot_product_attention_math", "MATH",
        "top-left (is_causal=True keeps key j for query i when j <= i)", "enable_gqa=True (K, V heads repeated)",
        "none (its second output is the attention weights): fwd_t UNIMPLEMENTED",
        "autograd through the composite forward (O and stats inputs unused), with the attn_mask gradient",
        true, true, "", "causal_tl -> is_causal; causal_br with S_q != S_kv, window, padding -> a 0/-inf attn_mask "
        "(plus the bias); bias -> attn_mask; --dmask -> its gradient; --dropout -> dropout_p with dropout_mask",
        "conventions.cases", 0.0f, true},
    {TorchVariant::flash, TorchDevice::cpu, "flash", "at::_scaled_dot_product_flash_attention_for_cpu",
        "at::_scaled_dot_product_flash_attention_for_cpu_backward", "FLASH_ATTENTION",
        "top-left on the CPU", "native: query head h reads key head h / (H_q / H_kv)",
        "[B,H_q,S_q] f32 for every io type; 0 for a fully masked row",
        "the fused backward fed O and the log-sum-exp; Q, K, V, O, dO with last-dimension stride 1 (the dispatcher's rule)",
        true, false, "D_qk = D_v", "as math, without --dmask; --dropout only with p = 0", "conventions.cases", 0.0f,
        true},
    {TorchVariant::efficient, TorchDevice::cuda, "efficient",
        "at::_scaled_dot_product_efficient_attention", "at::_scaled_dot_product_efficient_attention_backward",
        "EFFICIENT_ATTENTION", "top-left",
        "K, V heads repeated by the plugin (repeat_interleave, as enable_gqa does), dK, dV summed per group",
        "[B,H_q,S_q rounded up to 32] f32; -inf for a fully masked row",
        "the fused backward fed O and the log-sum-exp, with the attn_mask gradient; the bias stored with rows "
        "padded to 16 elements (as scaled_dot_product_attention pads it)", true, true, "",
        "as math; --dropout only with p = 0", "conventions.cases, conventions_cuda.cases", -INFINITY, false},
    {TorchVariant::cudnn, TorchDevice::cuda, "cudnn", "at::_scaled_dot_product_cudnn_attention",
        "at::_scaled_dot_product_cudnn_attention_backward", "CUDNN_ATTENTION",
        "top-left", "K, V heads repeated by the plugin, dK, dV summed per group",
        "[B,H_q,S_q,1] f32; -inf for a fully masked row", "the fused backward fed O and the log-sum-exp; no mask gradient",
        false, false, "", "as math, without --dmask; --dropout only with p = 0", "conventions_cuda.cases", -INFINITY, false},
    {TorchVariant::math, TorchDevice::cuda, "math:cuda", "at::_scaled_dot_product_attention_math",
        "autograd through at::_scaled_dot_product_attention_math", "MATH",
        "top-left", "enable_gqa=True", "none: fwd_t UNIMPLEMENTED", "autograd through the composite forward",
        true, true, "", "as math on the CPU", "conventions.cases, conventions_cuda.cases", 0.0f, false},
    {TorchVariant::flash, TorchDevice::cuda, "flash:cuda", "at::_scaled_dot_product_flash_attention",
        "at::_scaled_dot_product_flash_attention_backward", "FLASH_ATTENTION",
        "bottom-right (FlashAttention-2: key j visible to query i when j <= i + S_kv - S_q)",
        "native: query head h reads key head h / (H_q / H_kv)", "[B,H_q,S_q] f32; +inf for a fully masked row",
        "the fused backward fed O and the log-sum-exp; no mask gradient", false, false, "",
        "causal_br, and causal_tl with S_q = S_kv -> is_causal; no attn_mask: bias, window, padding and causal_tl "
        "with S_q != S_kv UNIMPLEMENTED; --dropout only with p = 0", "conventions_cuda.cases", INFINITY, false},
}};

std::string torch_backend_name(const TorchVariantInfo& v) { return fmt::format("{}{}", kTorchPrefix, v.name); }

std::string torch_operators(const TorchVariantInfo& v) {
    if (v.backward_op == fmt::format("{}_backward", v.forward_op)) return fmt::format("{} (+ _backward)", v.forward_op);
    return std::string(v.forward_op);
}

std::string torch_variant_table_md() {
    std::string t = "| backend | device | operator | `is_causal` with S_q != S_kv | GQA | default scale (`scale=None`) | "
                    "log-sum-exp | backward | dtypes | knobs | held by (`cases/torch/`) | measured |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const TorchVariantInfo& v : kTorchVariants)
        t += fmt::format("| `{}` | {} | `{}` | {} | {} | 1/sqrt(D_qk) | {} | {} | {}{}{} | {} | {} | {} |\n",
                torch_backend_name(v), v.device == TorchDevice::cpu ? "CPU" : "CUDA", torch_operators(v), v.causal, v.gqa,
                v.lse, v.backward,
                v.takes_f32 ? "f32, bf16, f16" : "bf16, f16", v.dtype_note.empty() ? "" : "; ", v.dtype_note, v.knobs,
                v.cases, v.measured ? "yes (CPU, CTest e2e.torch.*)" : "not yet: no GPU run");
    return t;
}

const TorchVariantInfo* torch_variant(std::string_view name) {
    for (const TorchVariantInfo& v : kTorchVariants)
        if (v.name == name) return &v;
    return nullptr;
}

const TorchVariantInfo* torch_variant(TorchVariant variant, TorchDevice d) {
    for (const TorchVariantInfo& v : kTorchVariants)
        if (v.variant == variant && v.device == d) return &v;
    return nullptr;
}

namespace {

Unsupported unimplemented(std::string reason) { return Unsupported{Status::unimplemented, std::move(reason)}; }

/// The backend names of the rows that output dMask (takes_dmask), "A, B and C".
std::string dmask_backends() {
    std::vector<std::string> names;
    for (const TorchVariantInfo& v : kTorchVariants)
        if (v.takes_dmask) names.push_back(torch_backend_name(v));
    return backend_list(names);
}

}  // namespace

std::variant<TorchMapping, Unsupported> torch_mapping(const Problem& p, TorchVariant v, TorchDevice d) {
    const TorchVariantInfo* row = torch_variant(v, d);
    if (!row) throw std::invalid_argument("torch_mapping: this variant has no row for this device");
    const TorchVariantInfo& vi = *row;
    const bool cuda = d == TorchDevice::cuda;
    if (is_fp8(p.dt))
        return unimplemented(fmt::format("{}: PyTorch's SDPA operators take no fp8 tensors with per-tensor "
                "descales (--dt={})", torch_backend_name(vi), p.dt));
    if (!vi.takes_f32 && p.dt == DType::f32)
        return unimplemented(fmt::format("{}: {} takes bf16 and f16 inputs only (--dt=f32)", torch_backend_name(vi),
                torch_operators(vi)));
    if (p.ragged)
        return unimplemented(fmt::format("{}: the dense SDPA operators take no ragged (packed) tensors "
                "(--ragged=true; PyTorch's varlen path is its nested tensors)", torch_backend_name(vi)));
    if (p.dropout && p.dropout->p > 0.f && v != TorchVariant::math)
        return unimplemented(fmt::format("{}: dropout_p draws PyTorch's own generator, which sdpabench does "
                "not replicate, and the operator takes no mask (torch:math takes one: --dropout runs there)",
                torch_backend_name(vi)));
    if (p.implicit_mask)
        return unimplemented("--mask-form=implicit is the oneDNN graph's GenIndex/Select causal mask; PyTorch's "
                "own form is is_causal, which --mask=causal_tl (and causal_br with S_q = S_kv) maps to");
    if (p.dropout_device_scalars)
        return unimplemented("--dropout-property=tensor is the oneDNN graph's device seed/offset/probability; "
                "PyTorch's dropout_p is a host double");
    const Geometry g = geometry(p);
    if (v == TorchVariant::flash)  // PyTorch's dispatcher sends flash nothing else (see kTorchVariants)
        for (const Role r : {Role::Q, Role::K, Role::V, Role::O, Role::dO}) {
            const TensorGeom* t = g.find(r);
            if (t && t->input && t->dims[3] > 1 && t->strides[3] != 1)
                return unimplemented(fmt::format("{}: {} has stride {} in its last dimension; PyTorch's "
                        "dispatcher takes flash only for a last-dimension stride of 1 "
                        "(check_last_dim_stride_equals_1_dense), and the operator misreads others",
                        torch_backend_name(vi), r, t->strides[3]));
        }
    if (v == TorchVariant::math && p.dir == Dir::bwd)  // it recomputes O and stats, the reference reads them
        for (const Role r : {Role::O, Role::stats})
            if (!non_overlapping(g.at(r)))
                return unimplemented(fmt::format("{} recomputes O and stats from Q, K, V, so an aliased {} "
                        "input (a 0 stride or overlapping rows), which the reference backward reads as given, "
                        "has no counterpart there", torch_backend_name(vi), r));
    if (v == TorchVariant::math && p.dir == Dir::fwd_t)
        return unimplemented(fmt::format("{} returns no log-sum-exp (its second output is the attention "
                "weights): --dir=fwd_i and --dir=bwd run on it", torch_backend_name(vi)));
    if (p.dmask && !vi.takes_dmask)
        return unimplemented(fmt::format("{}'s backward returns no attn_mask gradient (--dmask runs on {})",
                torch_backend_name(vi), dmask_backends()));
    TorchMapping m;
    const bool padded = !p.seq_len_q.empty() || !p.seq_len_kv.empty();
    const bool square = p.dims.S_q == p.dims.S_kv;
    // is_causal's own alignment: top-left, except FlashAttention-2's bottom-right on CUDA.
    const Mask own_causal = v == TorchVariant::flash && cuda ? Mask::causal_br : Mask::causal_tl;
    const bool causal = p.mask == Mask::causal_tl || p.mask == Mask::causal_br;
    if (padded || p.mask == Mask::window || (causal && !square && p.mask != own_causal))
        m.mask = TorchMapping::MaskArg::merged;
    else if (p.mask == Mask::bias)
        m.mask = TorchMapping::MaskArg::bias;
    else if (causal)
        m.is_causal = true;
    if (v == TorchVariant::flash && cuda && m.mask != TorchMapping::MaskArg::none)
        return unimplemented(fmt::format("{}: its operators ({}) take no attn_mask, and this case needs "
                "one ({}{}; their is_causal is bottom-right)", torch_backend_name(vi), torch_operators(vi), p.mask == Mask::bias ? "a bias" : fmt::format("--mask={}",
                p.mask), padded ? " with padding" : ""));
    m.mask_grad = p.dmask;
    if (!p.scale && p.scale_op == ScaleOp::mul && scale_dtype(p) == DType::f32) {
        m.scale = std::nullopt;  // the operator's default, 1/sqrt(D_qk): what sdpabench's default is
    } else {
        const double s = scale_tensor_value(p);
        m.scale = p.scale_op == ScaleOp::mul ? s : 1.0 / s;
    }
    m.enable_gqa = v == TorchVariant::math && p.dims.H_kv != p.dims.H_q;
    m.expand_gqa = (v == TorchVariant::efficient || v == TorchVariant::cudnn) && p.dims.H_kv != p.dims.H_q;
    return m;
}

namespace {

/// The plugin's entry points, loaded once per process on first use.
struct TorchPlugin {
    SdpaTorchRunFn run = nullptr;
    SdpaTorchCudaFn cuda = nullptr;
    std::string version;  ///< libtorch's, as the plugin reports it
    std::string path;     ///< where it was loaded from
    std::string error;    ///< why it is not loaded (every place tried)
    /// The plugin was named by SDPABENCH_TORCH_PLUGIN: failing to load it is the user's error
    /// (INVALID_ARGUMENTS), not a platform that lacks libtorch (SKIPPED).
    bool explicit_path = false;
};

/// Looks for libsdpabench_torch.so in $SDPABENCH_TORCH_PLUGIN, else next to the executable, then
/// in the folder above it (the test programs in build/PRESET/tests); dlopen (an absolute path,
/// RTLD_LOCAL: libtorch's symbols stay out of the process's global namespace), then checks that
/// it speaks this build's kSdpaTorchAbi.
const TorchPlugin& torch_plugin() {
    static const TorchPlugin plugin = [] {
        TorchPlugin pl;
        std::vector<std::filesystem::path> tried;
        std::error_code ec;
        if (const char* env = std::getenv("SDPABENCH_TORCH_PLUGIN"); env && *env) {
            pl.explicit_path = true;
            tried.push_back(std::filesystem::absolute(env, ec));
        } else {
            const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
            if (!ec) {
                tried.push_back(exe.parent_path() / "libsdpabench_torch.so");
                tried.push_back(exe.parent_path().parent_path() / "libsdpabench_torch.so");
            }
        }
        std::vector<std::string> why;
        for (const auto& path : tried) {
            if (!std::filesystem::is_regular_file(path, ec)) {
                why.push_back(fmt::format("{}: not found", path.string()));
                continue;
            }
            void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                why.push_back(dlerror());
                continue;
            }
            const auto abi = reinterpret_cast<SdpaTorchAbiFn>(dlsym(h, "sdpabench_torch_abi"));
            const auto run = reinterpret_cast<SdpaTorchRunFn>(dlsym(h, "sdpabench_torch_run"));
            const auto version = reinterpret_cast<SdpaTorchVersionFn>(dlsym(h, "sdpabench_torch_version"));
            const auto cuda = reinterpret_cast<SdpaTorchCudaFn>(dlsym(h, "sdpabench_torch_cuda"));
            const char* v = version ? version() : nullptr;
            if (!abi || !run || !v) {
                why.push_back(fmt::format("{}: not an sdpabench PyTorch plugin (no sdpabench_torch_abi, _run or _version)",
                        path.string()));
            } else if (abi() != kSdpaTorchAbi) {
                why.push_back(fmt::format("{}: speaks plugin ABI {}, this sdpabench {} (rebuild them together)",
                        path.string(), abi(), kSdpaTorchAbi));
            } else if (!cuda) {
                why.push_back(fmt::format("{}: no sdpabench_torch_cuda (an older plugin: rebuild them together)",
                        path.string()));
            } else {
                pl.run = run;
                pl.cuda = cuda;
                pl.version = v;
                pl.path = path.string();
                return pl;
            }
            dlclose(h);
        }
        pl.error = pl.explicit_path
                ? fmt::format("SDPABENCH_TORCH_PLUGIN: the PyTorch plugin could not be loaded ({})", fmt::join(why, "; "))
                : fmt::format("the PyTorch plugin libsdpabench_torch.so could not be loaded ({}); it is built with "
                              "sdpabench when CMake finds libtorch (scripts/setup.sh installs it)", fmt::join(why, "; "));
        return pl;
    }();
    return plugin;
}

/// Whether the plugin runs CUDA (libtorch_cuda loaded, a device found), and its one-line account:
/// the runtime and device count, or why not. Asked once per process, on the first CUDA case.
struct TorchCuda {
    bool ok = false;
    std::string what;
};

const TorchCuda& torch_cuda(const TorchPlugin& pl) {
    static const TorchCuda cuda = [&pl] {
        TorchCuda c;
        char what[512] = {};
        c.ok = pl.cuda(what, sizeof what) == 1;
        c.what = what;
        return c;
    }();
    return cuda;
}

/// Why `pl` cannot run: INVALID_ARGUMENTS for a plugin the user named, SKIPPED otherwise.
Unsupported plugin_missing(const TorchPlugin& pl) {
    return Unsupported{pl.explicit_path ? Status::invalid_arguments : Status::skipped, pl.error};
}

SdpaTorchDtype torch_dtype(ElemType t) {
    return t == ElemType::bf16 ? kSdpaTorchBf16 : t == ElemType::f16 ? kSdpaTorchF16 : kSdpaTorchF32;
}

/// A view of `t`'s buffer at `data` with its geometry's dims and strides, the first `rank` of them.
SdpaTorchView view(void* data, const TensorGeom& t, int rank = 4) {
    SdpaTorchView v;
    v.data = data;
    v.dtype = torch_dtype(t.type);
    v.rank = rank;
    for (int k = 0; k < rank; ++k) {
        v.dims[k] = t.dims[static_cast<std::size_t>(k)];
        v.strides[k] = t.strides[static_cast<std::size_t>(k)];
    }
    return v;
}

/// Strided inputs, the merged mask, guarded outputs, and the call that runs between them.
class TorchPlan final : public Plan {
public:
    TorchPlan(const Problem& p, const SdpaInputs& in, const TorchVariantInfo& vi, const TorchMapping& m,
            SdpaTorchRunFn run, const DropoutMask* keep)
        : p_(p), geo_(geometry(p)), vi_(vi), m_(m), run_(run), outputs_(geo_) {
        if (keep) {  // the keep flags math applies: dense bool [B,H_q,S_q,S_kv]
            const Dims& d = p.dims;
            keep_.resize(static_cast<std::size_t>(d.B * d.H_q * d.S_q * d.S_kv));
            std::size_t at = 0;
            for (std::int64_t b = 0; b < d.B; ++b)
                for (std::int64_t h = 0; h < d.H_q; ++h)
                    for (std::int64_t i = 0; i < d.S_q; ++i, at += static_cast<std::size_t>(d.S_kv))
                        keep->keep_row(b, h, i, 0, d.S_kv, keep_.data() + at);
        }
        for (const TensorGeom* t : geo_.inputs())
            if (const Tensor* x = in.of(t->role); x && !x->empty()) inputs_[t->role] = pack_input(*t, *x);
        if (m_.mask == TorchMapping::MaskArg::merged) {
            const std::vector<std::int64_t> md = merged_mask_dims(p);
            mask_geom_.role = Role::bias;
            mask_geom_.type = elem_type(mask_dtype(p));
            std::copy(md.begin(), md.end(), mask_geom_.dims.begin());
            const std::vector<std::int64_t> st = dense_strides(md);
            std::copy(st.begin(), st.end(), mask_geom_.strides.begin());
            Tensor mask(mask_geom_.dims, mask_dtype(p));
            mask.data = merged_mask_values(p, in.bias, mask_geom_.dims);
            merged_ = pack_input(mask_geom_, mask);
        }
    }

    void execute() override {
        SdpaTorchCall c;
        c.variant = vi_.variant == TorchVariant::flash       ? kSdpaTorchFlash
                    : vi_.variant == TorchVariant::efficient ? kSdpaTorchEfficient
                    : vi_.variant == TorchVariant::cudnn     ? kSdpaTorchCudnn
                                                             : kSdpaTorchMath;
        c.device = vi_.device == TorchDevice::cuda ? kSdpaTorchCuda : kSdpaTorchCpu;
        c.backward = p_.dir == Dir::bwd ? 1 : 0;
        c.threads = omp_get_max_threads();
        c.is_causal = m_.is_causal;
        c.enable_gqa = m_.enable_gqa;
        c.expand_gqa = m_.expand_gqa;
        c.mask_grad = m_.mask_grad;
        c.has_scale = m_.scale.has_value();
        c.scale = m_.scale.value_or(0.0);
        c.q = in_view(Role::Q);
        c.k = in_view(Role::K);
        c.v = in_view(Role::V);
        if (m_.mask == TorchMapping::MaskArg::bias) c.mask = in_view(Role::bias);
        if (m_.mask == TorchMapping::MaskArg::merged) c.mask = view(merged_.data(), mask_geom_);
        if (!keep_.empty()) {
            const Dims& d = p_.dims;
            c.dropout_p = p_.dropout->p;
            c.dropout_mask = SdpaTorchView{keep_.data(), kSdpaTorchBool, 4, {d.B, d.H_q, d.S_q, d.S_kv},
                    {d.H_q * d.S_q * d.S_kv, d.S_q * d.S_kv, d.S_kv, 1}};
        }
        if (c.backward) {
            c.o = in_view(Role::O);
            c.d_o = in_view(Role::dO);
            c.lse = in_view(Role::stats, 3);
        }
        c.out_o = out_view(Role::O);
        c.out_lse = out_view(Role::stats, 3);
        c.out_dq = out_view(Role::dQ);
        c.out_dk = out_view(Role::dK);
        c.out_dv = out_view(Role::dV);
        c.out_dmask = out_view(Role::dMask);
        SdpaTorchResult r;
        run_(&c, &r);
        if (r.status == 1)
            throw BackendError(Status::unimplemented, fmt::format("PyTorch ({}): {}", torch_operators(vi_), r.message));
        if (r.status == 3) throw out_of_device_memory(fmt::format("PyTorch ({}): {}", torch_operators(vi_), r.message));
        if (r.status != 0) throw BackendError(Status::failed, fmt::format("PyTorch ({}): {}", torch_operators(vi_), r.message));
        kernel_ms_ = r.kernel_ms;
        info_ = r.info;
    }

    /// The operator call alone (host clock; the CPU operators are synchronous, a CUDA call is timed
    /// from a synchronized device to the device synchronized after it), without the copies of its
    /// results into the guarded buffers (and, on CUDA, of the inputs to the device).
    double execute_timed_ms() override {
        execute();
        return kernel_ms_;
    }

    void poison_outputs() override { outputs_.poison(); }

    /// The inputs the operator read in place: on the CPU its views are of these buffers; on CUDA
    /// it reads device copies, which are not read back (none shown: the input check is not made).
    std::vector<InputBuffer> input_buffers() const override {
        std::vector<InputBuffer> out;
        if (vi_.device == TorchDevice::cuda) return out;
        for (const auto& [role, bytes] : inputs_) out.push_back({role, bytes});
        return out;
    }
    SdpaOutputs read_outputs() override { return outputs_.read(); }

    /// The operator called and its SDPBackend, e.g. "at::_scaled_dot_product_flash_attention_backward
    /// (SDPBackend.FLASH_ATTENTION, CUDA)".
    Implementation implementation() const override {
        return {fmt::format("{} (SDPBackend.{}, {})", p_.dir == Dir::bwd ? vi_.backward_op : vi_.forward_op,
                        vi_.sdp_backend, vi_.device == TorchDevice::cuda ? "CUDA" : "CPU"),
            {}};
    }

    /// The views handed to the operator: the inputs, the attn_mask (the bias or the merged mask),
    /// the log-sum-exp as [B,H_q,S_q], then the outputs.
    std::vector<BoundTensor> bound_tensors() const override {
        std::vector<BoundTensor> out;
        const auto add = [&out](std::string name, const TensorGeom& t) {
            const int rank = t.role == Role::stats ? 3 : 4;
            const SdpaTorchView v = view(nullptr, t, rank);
            out.push_back({std::move(name), fmt::format("{}", t.type), {v.dims, v.dims + rank}, {v.strides, v.strides + rank}});
        };
        for (const TensorGeom* t : geo_.inputs())
            if (inputs_.count(t->role) && t->role != Role::bias) add(fmt::format("{}", t->role), *t);
        if (m_.mask == TorchMapping::MaskArg::bias) add("attn_mask", geo_.at(Role::bias));
        if (m_.mask == TorchMapping::MaskArg::merged) add("attn_mask", mask_geom_);
        for (const TensorGeom* t : geo_.outputs())
            if (!t->input) add(fmt::format("{}", t->role), *t);
        return out;
    }

    std::vector<std::string> notes() const override {
        const char* mask = m_.mask == TorchMapping::MaskArg::bias     ? "the bias"
                           : m_.mask == TorchMapping::MaskArg::merged ? "a merged 0/-inf mask"
                                                                      : "None";
        std::vector<std::string> n{fmt::format("PyTorch: {} is_causal={} attn_mask={} scale={}{}{}{}; PyTorch "
                "allocates its outputs{}, sdpabench copies them into its guarded buffers", torch_operators(vi_),
                m_.is_causal ? "True" : "False", mask, m_.scale ? fmt::format("{}", *m_.scale) : std::string("None"),
                m_.enable_gqa ? " enable_gqa=True" : "", m_.expand_gqa ? " (K, V heads repeated for GQA)" : "",
                m_.mask_grad ? " (with the attn_mask gradient)" : "",
                vi_.device == TorchDevice::cuda ? " on CUDA device 0 (inputs copied there with their strides)" : "")};
        if (!info_.empty()) n.push_back(info_);  // after a run: its log-sum-exp shape, its warnings
        return n;
    }

private:
    SdpaTorchView in_view(Role r, int rank = 4) {
        const auto it = inputs_.find(r);
        return it == inputs_.end() ? SdpaTorchView{} : view(it->second.data(), geo_.at(r), rank);
    }
    SdpaTorchView out_view(Role r, int rank = 4) {
        GuardedBuffer* b = outputs_.find(r);
        return b ? view(b->data(), geo_.at(r), rank) : SdpaTorchView{};
    }

    Problem p_;
    Geometry geo_;
    const TorchVariantInfo& vi_;
    TorchMapping m_;
    SdpaTorchRunFn run_;
    std::map<Role, std::vector<std::byte>> inputs_;
    GuardedOutputs outputs_;
    TensorGeom mask_geom_;
    std::vector<std::byte> merged_;
    std::vector<std::uint8_t> keep_;  ///< dropout keep flags (bool bytes), empty without dropout
    double kernel_ms_ = 0.0;
    std::string info_;  ///< what the operator returned that the outputs do not show (SdpaTorchResult::info)
};

class TorchBackend final : public Backend {
public:
    explicit TorchBackend(const TorchVariantInfo& vi) : vi_(vi), name_(torch_backend_name(vi)) {}

    std::string_view name() const override { return name_; }

    std::string version() const override {
        const TorchPlugin& pl = torch_plugin();
        if (!pl.run) return fmt::format("{}: {}, unavailable: {}", name_, torch_operators(vi_), pl.error);
        std::string device = "CPU";
        if (vi_.device == TorchDevice::cuda) {
            const TorchCuda& cuda = torch_cuda(pl);
            device = cuda.ok ? fmt::format("CUDA ({})", cuda.what) : fmt::format("CUDA, unavailable: {}", cuda.what);
        }
        return fmt::format("{}: libtorch {} (built against {}), {}, {}, plugin {}", name_, pl.version,
                SDPABENCH_TORCH_VERSION, torch_operators(vi_), device, pl.path);
    }

    /// The libtorch the plugin was built against (known without loading it: the run context asks
    /// every backend, and loading libtorch costs a fifth of a second).
    std::string library_version() const override { return SDPABENCH_TORCH_VERSION; }

    /// CPU variants: every call sets libtorch's intra-op threads (its OpenMP) to sdpabench's OpenMP
    /// count (--threads sets it; at::set_num_threads in the plugin), so that is what it may use.
    Threading threading() const override {
        if (vi_.device != TorchDevice::cpu) return {};
        return {"OpenMP", omp_get_max_threads(), "at::set_num_threads per call"};
    }

    /// The log-sum-exp of a fully masked row, as the row states it (kTorchVariants). math is a
    /// composite of ATen operators on the inputs' type, so its scores and softmax are computed in
    /// the io type (bf16/f16), not in f32 as the fused kernels compute them.
    Conventions conventions() const override {
        Conventions c{vi_.masked_row_lse};
        c.scores_in_io_type = vi_.variant == TorchVariant::math;
        return c;
    }

    /// math applies the mask it is given (its dropout_mask argument, "for testing purposes" in
    /// PyTorch's words): sdpabench's own generator, as the ref and cuDNN backends use.
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override {
        if (!p.dropout || (vi_.variant != TorchVariant::math && p.dropout->p > 0.f)) return nullptr;
        return ref_dropout_mask(p);  // flash: only p = 0 runs (dropout_p = 0, every element kept)
    }

    std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const override {
        (void)threads;
        const Dims& d = p.dims;
        const double scores = double(d.B) * double(d.H_q) * double(d.S_q) * double(d.S_kv);
        std::vector<MemoryItem> items{{"PyTorch backend: its strided input and guarded output buffers",
                vendor_buffer_bytes(p)},
            {"PyTorch backend: the outputs PyTorch allocates before they are copied", vendor_buffer_bytes(p)}};
        if (const std::vector<std::int64_t> md = merged_mask_dims(p); !md.empty())
            items.push_back({"PyTorch backend: the merged mask", double(md[0]) * double(md[1]) * double(md[2]) *
                    double(md[3]) * double(size_of(elem_type(mask_dtype(p))))});
        if (p.dropout)
            items.push_back({"PyTorch backend: the dropout keep mask (bool)", scores});
        if (vi_.variant == TorchVariant::math)  // scores, weights and the masked scores; autograd keeps and doubles them
            items.push_back({"PyTorch math: S_q x S_kv score matrices per head (f32)",
                    scores * 4.0 * (p.dir == Dir::bwd ? 6.0 : 3.0)});
        return items;
    }

    std::optional<Unsupported> support(const Problem& p) const override {
        auto m = runnable(p);
        if (auto* u = std::get_if<Unsupported>(&m)) return *u;
        return std::nullopt;
    }

    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        auto m = runnable(p);
        if (auto* u = std::get_if<Unsupported>(&m)) throw BackendError(u->status, u->reason);
        const std::shared_ptr<const DropoutMask> keep = vi_.variant == TorchVariant::math ? dropout_mask(p) : nullptr;
        return std::make_unique<TorchPlan>(p, in, vi_, std::get<TorchMapping>(m), torch_plugin().run, keep.get());
    }

private:
    /// The mapping of `p`, or why it cannot run: the mapping's refusal, else the plugin's absence,
    /// else (a CUDA row) no CUDA, SKIPPED with the plugin's reason (libtorch_cuda.so or a library
    /// it needs not loadable, or no device).
    std::variant<TorchMapping, Unsupported> runnable(const Problem& p) const {
        auto m = torch_mapping(p, vi_.variant, vi_.device);
        if (std::holds_alternative<Unsupported>(m)) return m;
        const TorchPlugin& pl = torch_plugin();
        if (!pl.run) return plugin_missing(pl);
        if (vi_.device == TorchDevice::cuda && !torch_cuda(pl).ok)
            return Unsupported{Status::skipped, fmt::format("{} runs on a CUDA GPU and PyTorch has none here: {}",
                    name_, torch_cuda(pl).what)};
        return m;
    }

    const TorchVariantInfo& vi_;
    std::string name_;
};

}  // namespace

std::unique_ptr<Backend> make_torch_backend(std::string_view variant) {
    const auto v = torch_variant(variant);
    return v ? std::make_unique<TorchBackend>(*v) : nullptr;
}

}  // namespace sdpa
