// libsdpabench_torch.so: the only translation unit that includes libtorch (cmake/torch.cmake).
// It wraps the caller's buffers as ATen tensors (at::from_blob, no copy; on CUDA, copies on device 0
// with the same strides), calls one of PyTorch's SDPA operators and copies the results into the
// caller's output buffers (backends/torch/torch_abi.hpp). It links libtorch_cpu and c10 only; the
// CUDA rows load libtorch_cuda.so at run time (sdpabench_torch_cuda).
// The operators' signatures are those of the wheel's ATen/ops headers (native_functions.yaml).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// Only what is called: Tensor and its methods, the operators by their own headers (PyTorch's
// per-operator headers), not all of ATen/ATen.h.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/_scaled_dot_product_attention_math.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <ATen/ops/_scaled_dot_product_flash_attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_backward.h>
#include <ATen/ops/_scaled_dot_product_efficient_attention.h>
#include <ATen/ops/_scaled_dot_product_efficient_attention_backward.h>
#include <ATen/ops/_scaled_dot_product_cudnn_attention.h>
#include <ATen/ops/_scaled_dot_product_cudnn_attention_backward.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/autograd/autograd.h>
#if __has_include(<torch/headeronly/version.h>)  // torch >= 2.8; earlier: torch/version.h
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>
#endif

#include "backends/torch/torch_abi.hpp"

namespace {

at::ScalarType scalar_type(std::int32_t dt) {
    return dt == kSdpaTorchBf16 ? at::kBFloat16 : dt == kSdpaTorchF16 ? at::kHalf : dt == kSdpaTorchBool ? at::kBool : at::kFloat;
}

/// The caller's memory as a tensor (no copy); nullopt for an absent view.
std::optional<at::Tensor> wrap(const SdpaTorchView& v) {
    if (!v.data) return std::nullopt;
    return at::from_blob(v.data, at::IntArrayRef(v.dims, static_cast<std::size_t>(v.rank)),
            at::IntArrayRef(v.strides, static_cast<std::size_t>(v.rank)), at::TensorOptions().dtype(scalar_type(v.dtype)));
}

/// Copies `result` into the caller's view (element by element at the view's strides, with
/// PyTorch's conversion to the view's dtype); a shape mismatch is an error naming both shapes.
void deliver(const at::Tensor& result, const SdpaTorchView& v, const char* what) {
    if (!v.data) return;
    at::Tensor dst = *wrap(v);
    if (result.sizes() != dst.sizes())
        throw std::invalid_argument(std::string("PyTorch returned ") + what + " of shape " + c10::str(result.sizes()) +
                ", sdpabench expects " + c10::str(dst.sizes()));
    dst.copy_(result);
}

/// The number of elements from a view's first to its last (1 + sum of (dim - 1) * stride): the
/// block that holds it whatever its strides.
std::int64_t span(const SdpaTorchView& v) {
    std::int64_t last = 0;
    for (int k = 0; k < v.rank; ++k) {
        if (v.dims[k] == 0) return 0;
        last += (v.dims[k] - 1) * v.strides[k];
    }
    return last + 1;
}

/// The view as a tensor on `dev`: itself on the CPU; on CUDA a copy of its whole span, viewed with
/// the same dims and strides, so that the operator sees the geometry sdpabench built.
std::optional<at::Tensor> place(const SdpaTorchView& v, const at::Device& dev) {
    if (!v.data) return std::nullopt;
    if (dev.is_cpu()) return wrap(v);
    const at::Tensor block = at::from_blob(v.data, {span(v)}, at::TensorOptions().dtype(scalar_type(v.dtype)));
    return block.to(dev).as_strided(at::IntArrayRef(v.dims, static_cast<std::size_t>(v.rank)),
            at::IntArrayRef(v.strides, static_cast<std::size_t>(v.rank)));
}

/// place() of a view that must be there; std::invalid_argument naming `what` when it is absent.
at::Tensor need_on(const SdpaTorchView& v, const at::Device& dev, const char* what) {
    if (auto t = place(v, dev)) return *t;
    throw std::invalid_argument(std::string("sdpabench torch plugin: missing ") + what);
}

/// The log-sum-exp rows [B,H,S_q] of an operator's log-sum-exp, as a view of it: cuDNN's
/// [B,H,S_q,1] without its last dimension, efficient's [B,H,S_q rounded up to 32] narrowed.
at::Tensor lse_rows(const at::Tensor& lse, std::int64_t s_q) {
    const at::Tensor rows = lse.dim() == 4 ? lse.select(3, 0) : lse;
    return rows.narrow(2, 0, s_q);
}

/// dK or dV of heads repeated `group` times, summed back over each group: [B,H_q,S,D] ->
/// [B,H_q/group,S,D] (the gradient of repeat_interleave).
at::Tensor sum_groups(const at::Tensor& g, std::int64_t group) {
    if (group == 1) return g;
    return g.reshape({g.size(0), g.size(1) / group, group, g.size(2), g.size(3)}).sum(2);
}

/// What the fused CUDA forward returns besides O that its backward takes.
struct FusedForward {
    at::Tensor o, lse, philox_seed, philox_offset, cum_seq_q, cum_seq_k;
    std::int64_t max_q = 0, max_k = 0;
};

/// flash's and cudnn's forward outputs (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
/// philox_seed, philox_offset, debug_attn_mask: the same nine in both operators' schemas).
template <class Nine>
FusedForward from_nine(const Nine& t) {
    FusedForward f;
    f.o = std::get<0>(t);
    f.lse = std::get<1>(t);
    f.cum_seq_q = std::get<2>(t);
    f.cum_seq_k = std::get<3>(t);
    f.max_q = std::get<4>(t).expect_int();
    f.max_k = std::get<5>(t).expect_int();
    f.philox_seed = std::get<6>(t);
    f.philox_offset = std::get<7>(t);
    return f;
}

/// One fused CUDA forward (flash, efficient, cudnn) with dropout_p = 0.
FusedForward fused_forward(std::int32_t variant, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
        const std::optional<at::Tensor>& bias, bool lse, bool causal, std::optional<double> scale) {
    if (variant == kSdpaTorchFlash)
        return from_nine(at::_scaled_dot_product_flash_attention(q, k, v, 0.0, causal, false, scale));
    if (variant == kSdpaTorchCudnn)
        return from_nine(at::_scaled_dot_product_cudnn_attention(q, k, v, bias, lse, 0.0, causal, false, scale));
    FusedForward f;
    auto t = at::_scaled_dot_product_efficient_attention(q, k, v, bias, lse, 0.0, causal, scale);
    f.o = std::get<0>(t);
    f.lse = std::get<1>(t);
    f.philox_seed = std::get<2>(t);
    f.philox_offset = std::get<3>(t);
    return f;
}

/// efficient's attn_bias: broadcast to [B,H,S_q,S_kv] and stored with rows padded to a multiple
/// of 16 elements, the alignment its kernel reads (PyTorch's own scaled_dot_product_attention
/// pads it the same way before the call).
at::Tensor efficient_bias(const at::Tensor& bias, const at::Tensor& q, const at::Tensor& k) {
    const std::int64_t s_kv = k.size(2), padded = (s_kv + 15) / 16 * 16;
    at::Tensor out = at::empty({q.size(0), q.size(1), q.size(2), padded}, bias.options()).narrow(3, 0, s_kv);
    out.copy_(bias.expand({q.size(0), q.size(1), q.size(2), s_kv}));
    return out;
}

/// One call's inputs on its device (K and V with heads repeated where the call expands GQA, the
/// mask as the variant takes it) and the timer around its operator.
struct Placed {
    const SdpaTorchCall& c;
    SdpaTorchResult& r;
    bool cuda;
    at::Device dev;
    at::Tensor q, k, v;
    std::optional<at::Tensor> mask;
    std::optional<at::Tensor> keep;  ///< math: applied for dropout_p > 0
    std::optional<double> scale;
    bool causal;
    std::int64_t group;                    ///< the query heads per K, V head the call expands (1: none)
    std::vector<std::int64_t> mask_sizes;  ///< the mask's own shape, before efficient's padding
    std::chrono::steady_clock::time_point t0;

    Placed(const SdpaTorchCall& call, SdpaTorchResult& result)
        : c(call), r(result), cuda(call.device == kSdpaTorchCuda),
          dev(cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU)), q(need_on(call.q, dev, "Q")),
          k(need_on(call.k, dev, "K")), v(need_on(call.v, dev, "V")), mask(place(call.mask, dev)),
          keep(place(call.dropout_mask, dev)),
          scale(call.has_scale ? std::optional<double>(call.scale) : std::nullopt), causal(call.is_causal != 0),
          group(call.expand_gqa ? q.size(1) / k.size(1) : 1) {
        if (group > 1) {
            k = k.repeat_interleave(group, 1);
            v = v.repeat_interleave(group, 1);
        }
        mask_sizes = mask ? mask->sizes().vec() : std::vector<std::int64_t>{};
        if (mask && c.variant == kSdpaTorchEfficient) mask = efficient_bias(*mask, q, k);
    }

    void sync() const {
        if (cuda) at::detail::getCUDAHooks().deviceSynchronize(dev.index());
    }
    /// Starts the operator's time (after the device finished what was queued before).
    void start() {
        sync();
        t0 = std::chrono::steady_clock::now();
    }
    /// Ends it (once the device finished the operator): the result's kernel_ms.
    void stop() {
        sync();
        r.kernel_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    /// Says the log-sum-exp's shape and type in the result's info.
    void say_lse(const at::Tensor& lse) const {
        std::snprintf(r.info, sizeof r.info, "PyTorch returned its log-sum-exp as %s %s", c10::str(lse.sizes()).c_str(),
                c10::str(lse.scalar_type()).c_str());
    }
};

/// The forward: O, and the log-sum-exp when the call asks for it.
void run_forward(Placed& x) {
    const SdpaTorchCall& c = x.c;
    const bool want_lse = c.out_lse.data != nullptr;
    if (c.variant == kSdpaTorchMath) {
        x.start();
        auto [o, weights] = at::_scaled_dot_product_attention_math(x.q, x.k, x.v, x.mask, c.dropout_p, x.causal, x.keep,
                x.scale, c.enable_gqa != 0);
        x.stop();
        deliver(o, c.out_o, "O");
    } else if (c.variant == kSdpaTorchFlash && !x.cuda) {
        x.start();
        auto [o, lse] = at::_scaled_dot_product_flash_attention_for_cpu(x.q, x.k, x.v, 0.0, x.causal, x.mask, x.scale);
        x.stop();
        x.say_lse(lse);
        deliver(o, c.out_o, "O");
        deliver(lse, c.out_lse, "the log-sum-exp");
    } else {
        x.start();
        const FusedForward f = fused_forward(c.variant, x.q, x.k, x.v, x.mask, want_lse, x.causal, x.scale);
        x.stop();
        deliver(f.o, c.out_o, "O");
        if (want_lse) {
            x.say_lse(f.lse);
            deliver(lse_rows(f.lse, x.q.size(2)), c.out_lse, "the log-sum-exp");
        }
    }
}

/// math's backward: autograd through the composite forward (leaves that alias the inputs), with
/// the mask's gradient when the call asks for it.
void run_math_backward(Placed& x, const at::Tensor& d_o) {
    const SdpaTorchCall& c = x.c;
    at::Tensor qa = x.q.detach().requires_grad_(true), ka = x.k.detach().requires_grad_(true),
               va = x.v.detach().requires_grad_(true);
    std::optional<at::Tensor> ma;
    if (x.mask) ma = c.mask_grad ? x.mask->detach().requires_grad_(true) : *x.mask;
    x.start();
    auto [o, weights] = at::_scaled_dot_product_attention_math(qa, ka, va, ma, c.dropout_p, x.causal, x.keep, x.scale,
            c.enable_gqa != 0);
    std::vector<at::Tensor> wrt{qa, ka, va};
    if (c.mask_grad && ma) wrt.push_back(*ma);
    const std::vector<at::Tensor> g = torch::autograd::grad({o}, wrt, {d_o});
    x.stop();
    deliver(g[0], c.out_dq, "dQ");
    deliver(g[1], c.out_dk, "dK");
    deliver(g[2], c.out_dv, "dV");
    if (c.mask_grad && ma) deliver(g[3].sum_to_size(x.mask_sizes), c.out_dmask, "the mask gradient");
}

/// The fused CUDA backward: its forward's other outputs, and the given log-sum-exp in its layout;
/// dK and dV summed back over the repeated heads, efficient's mask gradient when asked for.
void run_fused_backward(Placed& x, const at::Tensor& d_o, const at::Tensor& o, const at::Tensor& lse_in) {
    const SdpaTorchCall& c = x.c;
    const FusedForward f = fused_forward(c.variant, x.q, x.k, x.v, x.mask, true, x.causal, x.scale);
    at::Tensor lse = f.lse.clone();
    lse_rows(lse, x.q.size(2)).copy_(lse_in);
    x.say_lse(lse);
    const at::Tensor bias = x.mask ? *x.mask : at::Tensor();
    at::Tensor dq, dk, dv, dbias;
    x.start();
    if (c.variant == kSdpaTorchFlash) {
        std::tie(dq, dk, dv) = at::_scaled_dot_product_flash_attention_backward(d_o, x.q, x.k, x.v, o, lse, f.cum_seq_q,
                f.cum_seq_k, f.max_q, f.max_k, 0.0, x.causal, f.philox_seed, f.philox_offset, x.scale);
    } else if (c.variant == kSdpaTorchEfficient) {
        std::tie(dq, dk, dv, dbias) = at::_scaled_dot_product_efficient_attention_backward(d_o, x.q, x.k, x.v, bias, o,
                lse, f.philox_seed, f.philox_offset, 0.0, {true, true, true, c.mask_grad != 0 && x.mask.has_value()},
                x.causal, x.scale);
    } else {
        std::tie(dq, dk, dv) = at::_scaled_dot_product_cudnn_attention_backward(d_o, x.q, x.k, x.v, o, lse,
                f.philox_seed, f.philox_offset, bias, f.cum_seq_q, f.cum_seq_k, f.max_q, f.max_k, 0.0, x.causal,
                x.scale);
    }
    x.stop();
    deliver(dq, c.out_dq, "dQ");
    deliver(sum_groups(dk, x.group), c.out_dk, "dK");
    deliver(sum_groups(dv, x.group), c.out_dv, "dV");
    if (c.mask_grad && dbias.defined())
        deliver(dbias.narrow(3, 0, x.k.size(2)).sum_to_size(x.mask_sizes), c.out_dmask, "the mask gradient");
}

/// Runs call `c` on its variant and device, writing the outputs and what to say into `r`.
void run(const SdpaTorchCall& c, SdpaTorchResult& r) {
    at::set_num_threads(c.threads > 0 ? c.threads : 1);
    Placed x(c, r);
    if (!c.backward) return run_forward(x);
    const at::Tensor d_o = need_on(c.d_o, x.dev, "dO");
    if (c.variant == kSdpaTorchMath) return run_math_backward(x, d_o);
    const at::Tensor o = need_on(c.o, x.dev, "O"), lse_in = need_on(c.lse, x.dev, "the log-sum-exp");
    if (c.variant == kSdpaTorchFlash && !x.cuda) {
        x.start();
        auto [dq, dk, dv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(d_o, x.q, x.k, x.v, o, lse_in, 0.0,
                x.causal, x.mask, x.scale);
        x.stop();
        deliver(dq, c.out_dq, "dQ");
        deliver(dk, c.out_dk, "dK");
        deliver(dv, c.out_dv, "dV");
        return;
    }
    run_fused_backward(x, d_o, o, lse_in);
}

/// Collects the warnings PyTorch issues on the calling thread (TORCH_WARN: e.g. math's "Dropout
/// mask should only be used for testing purposes"), so that they reach -v with the case instead of
/// stderr between the result lines.
class CollectWarnings final : public c10::WarningHandler {
public:
    void process(const c10::Warning& w) override {
        if (std::find(msgs.begin(), msgs.end(), w.msg()) == msgs.end()) msgs.push_back(w.msg());
    }
    std::vector<std::string> msgs;
};

void say(SdpaTorchResult& r, int status, const std::string& msg) {
    r.status = status;
    std::snprintf(r.message, sizeof r.message, "%s", msg.c_str());
}

}  // namespace

/// Runs one call (backends/torch/torch_abi.hpp); never throws.
extern "C" __attribute__((visibility("default"))) void sdpabench_torch_run(const SdpaTorchCall* call,
        SdpaTorchResult* result) {
    SdpaTorchResult& r = *result;
    r = SdpaTorchResult{};
    if (call->abi != kSdpaTorchAbi) {
        say(r, 2, "sdpabench torch plugin: ABI " + std::to_string(call->abi) + " asked, this plugin speaks " +
                std::to_string(kSdpaTorchAbi) + " (rebuild sdpabench and the plugin together)");
        return;
    }
    CollectWarnings warnings;
    c10::WarningUtils::WarningHandlerGuard guard(&warnings);
    try {
        run(*call, r);
        r.status = 0;
        std::string info = r.info;
        for (const std::string& m : warnings.msgs) info += (info.empty() ? "" : "; ") + ("PyTorch warned: " + m);
        std::snprintf(r.info, sizeof r.info, "%s", info.c_str());
    } catch (const c10::OutOfMemoryError& e) {  // before c10::Error, its base
        say(r, 3, e.what_without_backtrace());
    } catch (const c10::Error& e) {
        say(r, 1, e.what_without_backtrace());
    } catch (const std::exception& e) {
        say(r, 2, e.what());
    }
}

/// The ABI this plugin was built with (backends/torch/torch_abi.hpp).
extern "C" __attribute__((visibility("default"))) std::int32_t sdpabench_torch_abi() { return kSdpaTorchAbi; }

/// Loads libtorch_cuda.so once and asks for a device (backends/torch/torch_abi.hpp SdpaTorchCudaFn).
extern "C" __attribute__((visibility("default"))) std::int32_t sdpabench_torch_cuda(char* what, std::int32_t n) {
    static const std::pair<bool, std::string> state = []() -> std::pair<bool, std::string> {
        try {
            Dl_info self{};
            if (!dladdr(reinterpret_cast<void*>(&at::set_num_threads), &self) || !self.dli_fname)
                return {false, "cannot tell where libtorch_cpu.so was loaded from"};
            std::string lib = self.dli_fname;
            lib = lib.substr(0, lib.find_last_of('/') + 1) + "libtorch_cuda.so";
            if (!dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL))
                return {false, std::string("libtorch_cuda.so could not be loaded: ") + dlerror()};
            if (!at::hasCUDA()) return {false, "libtorch_cuda.so is loaded but finds no CUDA device"};
            const auto& hooks = at::detail::getCUDAHooks();
            return {true, "CUDA runtime " + std::to_string(hooks.versionCUDART()) + ", cuDNN " +
                    std::to_string(hooks.versionCuDNN()) + ", " + std::to_string(at::getNumGPUs()) + " device(s)"};
        } catch (const std::exception& e) {
            return {false, std::string("libtorch's CUDA check failed: ") + e.what()};
        }
    }();
    if (what && n > 0) std::snprintf(what, static_cast<std::size_t>(n), "%s", state.second.c_str());
    return state.first ? 1 : 0;
}

/// libtorch's version string (torch/headeronly/version.h).
extern "C" __attribute__((visibility("default"))) const char* sdpabench_torch_version() { return TORCH_VERSION; }
