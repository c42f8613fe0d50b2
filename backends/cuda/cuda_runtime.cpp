#include "backends/cuda/cuda_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/strided_buffer.hpp"

namespace sdpa::cuda {

void check(cudaError_t e, const std::string& what) {
    if (e == cudaSuccess) return;
    const std::string text = fmt::format("CUDA {}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e));
    if (e == cudaErrorMemoryAllocation) throw out_of_device_memory(text);  // SKIPPED, as a host out of memory
    throw BackendError(Status::failed, text);
}

std::uint64_t free_device_bytes() {
    if (!device().ok) return 0;
    std::size_t free = 0, total = 0;
    return cudaMemGetInfo(&free, &total) == cudaSuccess ? static_cast<std::uint64_t>(free) : 0;
}

const Device& device() {
    static const Device info = [] {
        Device d;
        int n = 0;
        if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
            d.reason = fmt::format("no usable NVIDIA driver or GPU: cudaGetDeviceCount: {} ({})", cudaGetErrorName(e),
                    cudaGetErrorString(e));
            return d;
        }
        if (n == 0) {
            d.reason = "no NVIDIA GPU: the CUDA runtime sees 0 devices";
            return d;
        }
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
            d.reason = "cudaGetDeviceProperties failed on device 0";
            return d;
        }
        GpuSpec& g = d.spec;
        g.name = prop.name;
        g.sm_major = prop.major;
        g.sm_minor = prop.minor;
        g.sm_count = prop.multiProcessorCount;
        g.l2_bytes = prop.l2CacheSize;
        g.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
        int khz = 0;
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess) g.sm_clock_mhz = khz / 1000.0;
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) g.mem_clock_mhz = khz / 1000.0;
        cudaDriverGetVersion(&g.driver_version);
        cudaRuntimeGetVersion(&g.runtime_version);
        d.ok = true;
        return d;
    }();
    return info;
}

DeviceMem::DeviceMem(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) check(cudaMalloc(&ptr_, bytes), fmt::format("cudaMalloc({} bytes)", bytes));
}
DeviceMem::DeviceMem(DeviceMem&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
DeviceMem& DeviceMem::operator=(DeviceMem&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
}
DeviceMem::~DeviceMem() {
    if (ptr_) cudaFree(ptr_);
}

DeviceMem upload(const std::vector<std::byte>& bytes) {
    DeviceMem m(bytes.size());
    if (!bytes.empty()) check(cudaMemcpy(m.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy input");
    return m;
}

DeviceMem upload_input(const TensorGeom& t, const Tensor& host) { return upload(pack_input(t, host)); }

DeviceOutput::DeviceOutput(const TensorGeom& t) : host_(t), dev_(host_.raw().size()) { poison(); }

void* DeviceOutput::payload() const { return static_cast<std::byte*>(dev_.get()) + GuardedBuffer::kGuardBytes; }

void DeviceOutput::poison() {
    host_.poison();
    check(cudaMemcpy(dev_.get(), host_.raw().data(), host_.raw().size(), cudaMemcpyHostToDevice),
            "cudaMemcpy guarded output to the device");
}

const GuardedBuffer& DeviceOutput::download() {
    check(cudaMemcpy(host_.raw().data(), dev_.get(), host_.raw().size(), cudaMemcpyDeviceToHost),
            "cudaMemcpy output to the host");
    return host_;
}

Stream::Stream() { check(cudaStreamCreate(&s_), "cudaStreamCreate"); }
Stream::~Stream() {
    if (s_) cudaStreamDestroy(s_);
}
void Stream::sync(const std::string& after) const { check(cudaStreamSynchronize(s_), "cudaStreamSynchronize after " + after); }

void L2Flusher::flush(cudaStream_t s) {
    if (!buf_.get()) buf_ = DeviceMem(static_cast<std::size_t>(std::max<std::int64_t>(device().spec.l2_bytes, 1 << 20)) * 2);
    ++flushes_;
    check(cudaMemsetAsync(buf_.get(), ++value_, buf_.bytes(), s), "cudaMemsetAsync (L2 flush)");
}

EventTimer::EventTimer() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    if (const cudaError_t e = cudaEventCreate(&stop_); e != cudaSuccess) {
        cudaEventDestroy(start_);
        check(e, "cudaEventCreate");
    }
}
EventTimer::~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
}

double EventTimer::time_ms(cudaStream_t s, const std::function<void()>& enqueue) {
    // The gate lives on the heap until the host function has run: it may outlive this call when
    // the stream is still blocked behind a throwing `enqueue`.
    std::shared_ptr<Gate> gate;
    if (use_gate_) {
        gate = std::make_shared<Gate>();
        auto* held = new std::shared_ptr<Gate>(gate);
        const cudaError_t e = cudaLaunchHostFunc(
                s,
                [](void* p) {
                    std::unique_ptr<std::shared_ptr<Gate>> g(static_cast<std::shared_ptr<Gate>*>(p));
                    const auto t0 = std::chrono::steady_clock::now();
                    while (!(*g)->open.load(std::memory_order_acquire)) {
                        if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() >
                                kGateLimitMs) {
                            (*g)->timed_out = true;
                            return;
                        }
                        std::this_thread::yield();
                    }
                },
                held);
        if (e != cudaSuccess) {
            delete held;
            check(e, "cudaLaunchHostFunc (timing gate)");
        }
    }
    struct Open {  // opens the gate on every path out, so the stream never stays held
        Gate* g;
        ~Open() {
            if (g) g->open.store(true, std::memory_order_release);
        }
    } open{gate.get()};
    check(cudaEventRecord(start_, s), "cudaEventRecord");
    enqueue();
    check(cudaEventRecord(stop_, s), "cudaEventRecord");
    if (gate) gate->open.store(true, std::memory_order_release);
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    if (gate && gate->timed_out) {  // the time holds the gate's wait: measure again without it
        use_gate_ = false;
        return time_ms(s, enqueue);
    }
    float ms = 0.f;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
}

}  // namespace sdpa::cuda
