// What a GPU backend knows about its device, as plain data with no CUDA header: name,
// architecture, SM count, clocks, memory, and the peak dense tensor-core rate derived from them.
// backends/cuda/cuda_runtime.hpp fills it from the CUDA runtime; reports and the percent-of-peak
// column read it; it is unit-tested on machines without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.hpp"

namespace sdpa::cuda {

/// One device as the CUDA runtime describes it (cudaGetDeviceProperties, cudaDeviceGetAttribute).
struct GpuSpec {
    std::string name;              ///< e.g. "NVIDIA H200"
    int sm_major = 0, sm_minor = 0;  ///< compute capability, e.g. 9.0
    int sm_count = 0;              ///< streaming multiprocessors
    double sm_clock_mhz = 0;       ///< peak SM clock (cudaDevAttrClockRate), MHz
    double mem_clock_mhz = 0;      ///< peak memory clock (cudaDevAttrMemoryClockRate), MHz
    std::int64_t l2_bytes = 0;     ///< L2 cache size
    std::int64_t memory_bytes = 0; ///< global memory
    int driver_version = 0;        ///< cudaDriverGetVersion, e.g. 13000
    int runtime_version = 0;       ///< cudaRuntimeGetVersion of the runtime sdpabench links
};

/// Dense (no structured sparsity) tensor-core FLOPs per SM per clock for io type `dt` with f32
/// accumulation, for the architectures whose rate is published; 0 when unknown (f32, or an
/// architecture not in the table). Sources: NVIDIA A100 Tensor Core GPU Architecture whitepaper
/// (sm_80: 312 TFLOP/s bf16/f16 = 108 SMs x 2048 x 1410 MHz); NVIDIA H100 Tensor Core GPU
/// Architecture whitepaper, table 2 (sm_90: 989.4 TFLOP/s bf16/f16 and 1978.9 fp8 = 132 SMs x
/// 4096 (8192 for fp8) x 1830 MHz).
double dense_flops_per_sm_per_clock(int sm_major, int sm_minor, DType dt);

/// Peak dense tensor-core rate of `g` for io type `dt` in TFLOP/s: SMs x FLOPs per SM per clock x
/// the peak SM clock the device reports (for an H100/H200 SXM that clock is 1980 MHz, so the figure
/// is 8% above the datasheet's 1830 MHz one); 0 when the rate per SM is unknown.
double peak_dense_tflops(const GpuSpec& g, DType dt);

/// "NVIDIA H200 (sm_90, 132 SMs, 1980 MHz, L2 60 MiB, 141 GiB, driver 13.0, runtime 13.0)".
std::string describe(const GpuSpec& g);

}  // namespace sdpa::cuda
