// libsdpabench_torch.so: the only translation unit that includes libtorch (cmake/torch.cmake).
// It wraps the caller's buffers as ATen tensors (at::from_blob, no copy), calls one of PyTorch's
// SDPA operators and copies the results into the caller's output buffers (backends/torch/torch_abi.hpp).
// The operators' signatures are those of the wheel's ATen/ops headers (native_functions.yaml).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/ops/_scaled_dot_product_attention_math.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/headeronly/version.h>

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

at::Tensor need(const SdpaTorchView& v, const char* what) {
    if (auto t = wrap(v)) return *t;
    throw std::invalid_argument(std::string("sdpabench torch plugin: missing ") + what);
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

void run(const SdpaTorchCall& c, SdpaTorchResult& r) {
    at::set_num_threads(c.threads > 0 ? c.threads : 1);
    const at::Tensor q = need(c.q, "Q"), k = need(c.k, "K"), v = need(c.v, "V");
    const std::optional<at::Tensor> mask = wrap(c.mask);
    const std::optional<at::Tensor> keep = wrap(c.dropout_mask);  // math: PyTorch applies it for dropout_p > 0
    const std::optional<double> scale = c.has_scale ? std::optional<double>(c.scale) : std::nullopt;
    const bool causal = c.is_causal != 0;
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    auto stop = [&] { r.kernel_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count(); };
    if (!c.backward) {
        if (c.variant == kSdpaTorchFlash) {
            auto [o, lse] = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, mask, scale);
            stop();
            deliver(o, c.out_o, "O");
            deliver(lse, c.out_lse, "the log-sum-exp");
        } else {
            auto [o, weights] = at::_scaled_dot_product_attention_math(q, k, v, mask, c.dropout_p, causal, keep, scale,
                    c.enable_gqa != 0);
            stop();
            deliver(o, c.out_o, "O");
        }
        return;
    }
    const at::Tensor d_o = need(c.d_o, "dO");
    if (c.variant == kSdpaTorchFlash) {
        const at::Tensor o = need(c.o, "O"), lse = need(c.lse, "the log-sum-exp");
        auto [dq, dk, dv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(d_o, q, k, v, o, lse, 0.0, causal,
                mask, scale);
        stop();
        deliver(dq, c.out_dq, "dQ");
        deliver(dk, c.out_dk, "dK");
        deliver(dv, c.out_dv, "dV");
        return;
    }
    // math: autograd through the composite forward (leaves that alias the caller's inputs).
    at::Tensor qa = q.detach().requires_grad_(true), ka = k.detach().requires_grad_(true),
               va = v.detach().requires_grad_(true);
    std::optional<at::Tensor> ma;
    if (mask) ma = c.mask_grad ? mask->detach().requires_grad_(true) : *mask;
    t0 = clock::now();
    auto [o, weights] = at::_scaled_dot_product_attention_math(qa, ka, va, ma, c.dropout_p, causal, keep, scale,
            c.enable_gqa != 0);
    std::vector<at::Tensor> wrt{qa, ka, va};
    if (c.mask_grad && ma) wrt.push_back(*ma);
    const std::vector<at::Tensor> g = torch::autograd::grad({o}, wrt, {d_o});
    stop();
    deliver(g[0], c.out_dq, "dQ");
    deliver(g[1], c.out_dk, "dK");
    deliver(g[2], c.out_dv, "dV");
    if (c.mask_grad && ma) deliver(g[3], c.out_dmask, "the mask gradient");
}

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
    try {
        run(*call, r);
        r.status = 0;
    } catch (const c10::Error& e) {
        say(r, 1, e.what_without_backtrace());
    } catch (const std::exception& e) {
        say(r, 2, e.what());
    }
}

/// The ABI this plugin was built with (backends/torch/torch_abi.hpp).
extern "C" __attribute__((visibility("default"))) std::int32_t sdpabench_torch_abi() { return kSdpaTorchAbi; }

/// libtorch's version string (torch/headeronly/version.h).
extern "C" __attribute__((visibility("default"))) const char* sdpabench_torch_version() { return TORCH_VERSION; }
