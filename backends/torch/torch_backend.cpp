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
#include "backends/strided_buffer.hpp"
#include "backends/torch/torch_abi.hpp"
#include "core/geometry.hpp"
#include "core/memory_estimate.hpp"

namespace sdpa {

const std::array<TorchVariantInfo, 4> kTorchVariants{{
    {TorchVariant::math, "math", "at::_scaled_dot_product_attention_math", true,
        "top-left (is_causal=True keeps key j for query i when j <= i)", "enable_gqa=True (K, V heads repeated)",
        "none (the second output is the attention weights)",
        "autograd through the composite forward; dropout with the keep mask it is given (dropout_mask)"},
    {TorchVariant::flash, "flash", "at::_scaled_dot_product_flash_attention_for_cpu (+ _backward)", true,
        "top-left on the CPU", "native: H_kv < H_q taken as is (query head h reads key head h / (H_q / H_kv))",
        "[B,H_q,S_q] f32 for every io type; 0 for a fully masked row",
        "the fused backward, fed O and the log-sum-exp; Q, K, V, O, dO with last-dimension stride 1 (the dispatcher's rule)"},
    {TorchVariant::efficient, "efficient", "at::_scaled_dot_product_efficient_attention (+ _backward)", false,
        "CUDA only: not in this build", "CUDA only", "CUDA only ([B,H_q,S_q] padded to a multiple of 32)",
        "CUDA only"},
    {TorchVariant::cudnn, "cudnn", "at::_scaled_dot_product_cudnn_attention (+ _backward)", false,
        "CUDA only: not in this build", "CUDA only", "CUDA only ([B,H_q,S_q,1])", "CUDA only"},
}};

std::optional<TorchVariant> torch_variant(std::string_view name) {
    for (const TorchVariantInfo& v : kTorchVariants)
        if (v.name == name) return v.variant;
    return std::nullopt;
}

namespace {

const TorchVariantInfo& info(TorchVariant v) { return kTorchVariants[static_cast<std::size_t>(v)]; }

Unsupported unimplemented(std::string reason) { return Unsupported{Status::unimplemented, std::move(reason)}; }

}  // namespace

std::variant<TorchMapping, Unsupported> torch_mapping(const Problem& p, TorchVariant v) {
    const TorchVariantInfo& vi = info(v);
    if (!vi.cpu)
        return Unsupported{Status::skipped, fmt::format("torch:{} runs on a CUDA GPU ({}); this build's PyTorch "
                "plugin links libtorch's CPU library only", vi.name, vi.op)};
    if (is_fp8(p.dt))
        return unimplemented(fmt::format("torch:{}: PyTorch's SDPA operators take no fp8 tensors with per-tensor "
                "descales (--dt={})", vi.name, p.dt));
    if (p.ragged)
        return unimplemented(fmt::format("torch:{}: the dense SDPA operators take no ragged (packed) tensors "
                "(--ragged=true; PyTorch's varlen path is its nested tensors)", vi.name));
    if (p.dropout && p.dropout->p > 0.f && v != TorchVariant::math)
        return unimplemented(fmt::format("torch:{}: dropout_p draws PyTorch's own generator, which sdpabench does "
                "not replicate, and the operator takes no mask (torch:math takes one: --dropout runs there)", vi.name));
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
                return unimplemented(fmt::format("torch:flash: {} has stride {} in its last dimension; PyTorch's "
                        "dispatcher takes flash only for a last-dimension stride of 1 "
                        "(check_last_dim_stride_equals_1_dense), and the operator misreads others", r, t->strides[3]));
        }
    if (v == TorchVariant::math && p.dir == Dir::bwd)  // it recomputes O and stats, the reference reads them
        for (const Role r : {Role::O, Role::stats})
            if (!non_overlapping(g.at(r)))
                return unimplemented(fmt::format("torch:math recomputes O and stats from Q, K, V, so an aliased {} "
                        "input (a 0 stride or overlapping rows), which the reference backward reads as given, "
                        "has no counterpart there", r));
    const bool stats_out = p.dir == Dir::fwd_t || p.dir == Dir::fwd_bwd;
    if (v == TorchVariant::math && stats_out)
        return unimplemented("torch:math returns no log-sum-exp (its second output is the attention weights): "
                "--dir=fwd_i and --dir=bwd run on it");
    if (v == TorchVariant::flash && p.dmask)
        return unimplemented("torch:flash's backward returns no attn_mask gradient (--dmask runs on torch:math)");
    TorchMapping m;
    const bool padded = !p.seq_len_q.empty() || !p.seq_len_kv.empty();
    const bool square = p.dims.S_q == p.dims.S_kv;
    if (padded || p.mask == Mask::window || (p.mask == Mask::causal_br && !square))
        m.mask = TorchMapping::MaskArg::merged;
    else if (p.mask == Mask::bias)
        m.mask = TorchMapping::MaskArg::bias;
    else if (p.mask == Mask::causal_tl || p.mask == Mask::causal_br)
        m.is_causal = true;
    m.mask_grad = p.dmask;
    if (!p.scale && p.scale_op == ScaleOp::mul && scale_dtype(p) == DType::f32) {
        m.scale = std::nullopt;  // the operator's default, 1/sqrt(D_qk): what sdpabench's default is
    } else {
        const double s = scale_tensor_value(p);
        m.scale = p.scale_op == ScaleOp::mul ? s : 1.0 / s;
    }
    m.enable_gqa = v == TorchVariant::math && p.dims.H_kv != p.dims.H_q;
    return m;
}

namespace {

/// The plugin's entry points, loaded once per process on first use.
struct TorchPlugin {
    SdpaTorchRunFn run = nullptr;
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
            const char* v = version ? version() : nullptr;
            if (!abi || !run || !v) {
                why.push_back(fmt::format("{}: not an sdpabench PyTorch plugin (no sdpabench_torch_abi, _run or _version)",
                        path.string()));
            } else if (abi() != kSdpaTorchAbi) {
                why.push_back(fmt::format("{}: speaks plugin ABI {}, this sdpabench {} (rebuild them together)",
                        path.string(), abi(), kSdpaTorchAbi));
            } else {
                pl.run = run;
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
    TorchPlan(const Problem& p, const SdpaInputs& in, TorchVariant v, const TorchMapping& m, SdpaTorchRunFn run,
            const DropoutMask* keep)
        : p_(p), geo_(geometry(p)), v_(v), m_(m), run_(run), outputs_(geo_) {
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
        c.variant = v_ == TorchVariant::flash ? kSdpaTorchFlash : kSdpaTorchMath;
        c.backward = p_.dir == Dir::bwd ? 1 : 0;
        c.threads = omp_get_max_threads();
        c.is_causal = m_.is_causal;
        c.enable_gqa = m_.enable_gqa;
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
            throw BackendError(Status::unimplemented, fmt::format("PyTorch ({}): {}", info(v_).op, r.message));
        if (r.status != 0) throw BackendError(Status::failed, fmt::format("PyTorch ({}): {}", info(v_).op, r.message));
        kernel_ms_ = r.kernel_ms;
    }

    /// The operator call alone (host clock; the CPU operators are synchronous), without the copies
    /// of its results into the guarded buffers.
    double execute_timed_ms() override {
        execute();
        return kernel_ms_;
    }

    void poison_outputs() override { outputs_.poison(); }
    SdpaOutputs read_outputs() override { return outputs_.read(); }

    std::vector<std::string> notes() const override {
        const char* mask = m_.mask == TorchMapping::MaskArg::bias     ? "the bias"
                           : m_.mask == TorchMapping::MaskArg::merged ? "a merged 0/-inf mask"
                                                                      : "None";
        return {fmt::format("PyTorch: {} is_causal={} attn_mask={} scale={}{}{}; PyTorch allocates its outputs, "
                "sdpabench copies them into its guarded buffers", info(v_).op, m_.is_causal ? "True" : "False", mask,
                m_.scale ? fmt::format("{}", *m_.scale) : std::string("None"), m_.enable_gqa ? " enable_gqa=True" : "",
                m_.mask_grad ? " (with the attn_mask gradient)" : "")};
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
    TorchVariant v_;
    TorchMapping m_;
    SdpaTorchRunFn run_;
    std::map<Role, std::vector<std::byte>> inputs_;
    GuardedOutputs outputs_;
    TensorGeom mask_geom_;
    std::vector<std::byte> merged_;
    std::vector<std::uint8_t> keep_;  ///< dropout keep flags (bool bytes), empty without dropout
    double kernel_ms_ = 0.0;
};

class TorchBackend final : public Backend {
public:
    explicit TorchBackend(TorchVariant v) : v_(v), name_(fmt::format("torch:{}", info(v).name)) {}

    std::string_view name() const override { return name_; }

    std::string version() const override {
        const TorchVariantInfo& vi = info(v_);
        if (!vi.cpu) return fmt::format("{}: {}, not in this build (CUDA only; the plugin links libtorch_cpu)", name_, vi.op);
        const TorchPlugin& pl = torch_plugin();
        if (!pl.run) return fmt::format("{}: {}, unavailable: {}", name_, vi.op, pl.error);
        return fmt::format("{}: libtorch {} (built against {}), {}, CPU, plugin {}", name_, pl.version,
                SDPABENCH_TORCH_VERSION, vi.op, pl.path);
    }

    /// The libtorch the plugin was built against (known without loading it: the run context asks
    /// every backend, and loading libtorch costs a fifth of a second).
    std::string library_version() const override { return info(v_).cpu ? SDPABENCH_TORCH_VERSION : ""; }

    /// flash writes 0 as the log-sum-exp of a fully masked row (math has no log-sum-exp).
    Conventions conventions() const override { return Conventions{0.0f}; }

    /// math applies the mask it is given (its dropout_mask argument, "for testing purposes" in
    /// PyTorch's words): sdpabench's own generator, as the ref and cuDNN backends use.
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override {
        if (!p.dropout || (v_ != TorchVariant::math && p.dropout->p > 0.f)) return nullptr;
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
        if (v_ == TorchVariant::math)  // scores, weights and the masked scores; autograd keeps and doubles them
            items.push_back({"PyTorch math: S_q x S_kv score matrices per head (f32)",
                    scores * 4.0 * (p.dir == Dir::bwd ? 6.0 : 3.0)});
        return items;
    }

    std::optional<Unsupported> support(const Problem& p) const override {
        auto m = torch_mapping(p, v_);
        if (auto* u = std::get_if<Unsupported>(&m)) return *u;
        if (!torch_plugin().run) return plugin_missing(torch_plugin());
        return std::nullopt;
    }

    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        auto m = torch_mapping(p, v_);
        if (auto* u = std::get_if<Unsupported>(&m)) throw BackendError(u->status, u->reason);
        const TorchPlugin& pl = torch_plugin();
        if (!pl.run) throw BackendError(plugin_missing(pl).status, pl.error);
        const std::shared_ptr<const DropoutMask> keep = v_ == TorchVariant::math ? dropout_mask(p) : nullptr;
        return std::make_unique<TorchPlan>(p, in, v_, std::get<TorchMapping>(m), pl.run, keep.get());
    }

private:
    TorchVariant v_;
    std::string name_;
};

}  // namespace

std::unique_ptr<Backend> make_torch_backend(std::string_view name) {
    if (name.rfind("torch:", 0) != 0) return nullptr;
    const auto v = torch_variant(name.substr(6));
    return v ? std::make_unique<TorchBackend>(*v) : nullptr;
}

}  // namespace sdpa
