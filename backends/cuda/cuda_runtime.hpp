// The shared GPU layer of every CUDA backend (cuDNN today): the device and its description,
// owned device memory, guarded output buffers mirrored on the host (guard bands and the NaN
// prefill, stride gaps included, backends/guarded_buffer.hpp), strided input upload, a stream,
// event timing that leaves the host's launch overhead out, and the L2 flush of --cold-cache.
// Errors are BackendError (backends/backend.hpp): FAILED with the CUDA error's name and text.
// Needs the CUDA runtime headers: only GPU backends include it (built with the CUDA Toolkit).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/gpu_spec.hpp"
#include "backends/guarded_buffer.hpp"
#include "core/geometry.hpp"
#include "core/tensor.hpp"

namespace sdpa::cuda {

/// Throws BackendError(FAILED) "CUDA <what>: <name> (<text>)" when `e` is not cudaSuccess; for
/// cudaErrorMemoryAllocation out_of_device_memory (SKIPPED) with that text.
void check(cudaError_t e, const std::string& what);

/// Device 0 as the CUDA runtime sees it, probed once per process; never throws.
struct Device {
    bool ok = false;
    std::string reason;  ///< why not usable (no driver, no GPU), when !ok
    GpuSpec spec;
};
const Device& device();

/// Device 0's free memory now in bytes (cudaMemGetInfo), 0 without a usable device.
std::uint64_t free_device_bytes();

/// Owned device allocation (cudaMalloc, 256-byte aligned); empty for 0 bytes.
class DeviceMem {
public:
    DeviceMem() = default;
    explicit DeviceMem(std::size_t bytes);
    DeviceMem(DeviceMem&& o) noexcept;
    DeviceMem& operator=(DeviceMem&& o) noexcept;
    DeviceMem(const DeviceMem&) = delete;
    DeviceMem& operator=(const DeviceMem&) = delete;
    ~DeviceMem();
    void* get() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

/// A device copy of `bytes` (synchronous cudaMemcpy).
DeviceMem upload(const std::vector<std::byte>& bytes);

/// Input role `t` on the device: `host` (dense, dims t.dims) packed at t's strides with
/// kInputGapCanary in the gaps (backends/strided_buffer.hpp pack_input), then uploaded.
DeviceMem upload_input(const TensorGeom& t, const Tensor& host);

/// One output on the device laid out like its host mirror GuardedBuffer, guards included: the
/// whole [guard | payload | guard] allocation is copied both ways, so the guard and stride-gap
/// checks see exactly what the kernel left on the device.
class DeviceOutput {
public:
    explicit DeviceOutput(const TensorGeom& t);
    /// The payload's device address (what the kernel writes).
    void* payload() const;
    /// NaN-prefills the payload on the host mirror and uploads the whole allocation.
    void poison();
    /// GuardedBuffer::set_unspecified_rows of the host mirror (before the run).
    void set_unspecified_rows(std::vector<std::int64_t> rows) { host_.set_unspecified_rows(std::move(rows)); }
    /// Copies the whole allocation back and returns the host mirror (to decode and check).
    const GuardedBuffer& download();

private:
    GuardedBuffer host_;
    DeviceMem dev_;
};

/// An owned, blocking CUDA stream (ordered with the synchronous copies on the legacy stream).
class Stream {
public:
    Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();
    cudaStream_t get() const { return s_; }
    /// cudaStreamSynchronize, surfacing asynchronous errors as BackendError naming `after`.
    void sync(const std::string& after) const;

private:
    cudaStream_t s_ = nullptr;
};

/// --cold-cache on a GPU: a device buffer of twice the L2 (at least 2 MiB) rewritten on the stream
/// before a timed run, so the run starts with none of its data in L2. Allocated on first use.
class L2Flusher {
public:
    /// Enqueues the rewrite on `s` (cudaMemsetAsync of a new byte value each call).
    void flush(cudaStream_t s);
    std::size_t flushes() const { return flushes_; }

private:
    DeviceMem buf_;
    unsigned char value_ = 0;
    std::size_t flushes_ = 0;
};

/// Device time of enqueued work with two CUDA events. A host gate (cudaLaunchHostFunc holding
/// the stream until the work is enqueued) is queued before the start event, so the time is the
/// device's alone: the host's work inside `enqueue` (a library building its launch arguments)
/// overlaps the gate instead of delaying the start. The gate releases itself after kGateLimitMs
/// when `enqueue` waits on the stream (a library that synchronises); that run is then measured
/// again without the gate, which stays off for the timer's later runs, and gated() says so.
class EventTimer {
public:
    static constexpr double kGateLimitMs = 200;
    EventTimer();
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;
    ~EventTimer();
    /// Runs `enqueue` (which queues work on `s`) between the events and returns the elapsed ms.
    /// Throws BackendError for a CUDA error; what `enqueue` throws propagates (the gate opened).
    double time_ms(cudaStream_t s, const std::function<void()>& enqueue);
    /// False once a gate had to release itself (the times then include host overhead).
    bool gated() const { return use_gate_; }

private:
    struct Gate {
        std::atomic<bool> open{false};
        std::atomic<bool> timed_out{false};
    };
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    bool use_gate_ = true;
};

}  // namespace sdpa::cuda
