#include "backends/cuda/gpu_spec.hpp"

#include <fmt/format.h>

namespace sdpa::cuda {

double dense_flops_per_sm_per_clock(int sm_major, int sm_minor, DType dt) {
    const bool half = dt == DType::bf16 || dt == DType::f16;
    const bool fp8 = is_fp8(dt);
    if (sm_major == 8 && sm_minor == 0) return half ? 2048 : 0;  // A100: no fp8 tensor cores
    if (sm_major == 9 && sm_minor == 0) return half ? 4096 : fp8 ? 8192 : 0;
    return 0;
}

double peak_dense_tflops(const GpuSpec& g, DType dt) {
    return g.sm_count * dense_flops_per_sm_per_clock(g.sm_major, g.sm_minor, dt) * g.sm_clock_mhz * 1e6 * 1e-12;
}

std::string describe(const GpuSpec& g) {
    auto version = [](int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); };
    return fmt::format("{} (sm_{}{}, {} SMs, {:.0f} MHz, L2 {} MiB, {} GiB, driver {}, runtime {})", g.name, g.sm_major,
            g.sm_minor, g.sm_count, g.sm_clock_mhz, g.l2_bytes >> 20, g.memory_bytes >> 30, version(g.driver_version),
            version(g.runtime_version));
}

}  // namespace sdpa::cuda
