// The small interface every vendor backend implements, and the errors it may raise.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/conventions.hpp"
#include "core/cpu_isa.hpp"
#include "core/implementation.hpp"
#include "core/memory_estimate.hpp"
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"
#include "core/status.hpp"

namespace sdpa {

/// Why a backend will not run a problem: SKIPPED (platform lacks something) or
/// UNIMPLEMENTED (the library has no kernel for this valid case), with a reason.
struct Unsupported {
    Status status = Status::skipped;
    std::string reason;
};

/// Raised by Backend::prepare and Plan's functions when the library refuses or fails: `status` says which
/// (UNIMPLEMENTED for a graph the library rejects, FAILED for an execution error, SKIPPED
/// when the platform turns out to lack something); what() carries the library's message.
struct BackendError : std::runtime_error {
    Status status;
    BackendError(Status s, const std::string& msg) : std::runtime_error(msg), status(s) {}
};

/// What a backend throws when its device runs out of memory during a case (cudaErrorMemoryAllocation,
/// PyTorch's OutOfMemoryError): SKIPPED "out of device memory: WHAT", as a host out of memory is
/// (the platform cannot run the case; driver/run_case.cpp), never FAILED: the kernel was not wrong.
inline BackendError out_of_device_memory(const std::string& what) {
    return BackendError(Status::skipped, "out of device memory: " + what);
}

/// One input buffer as the vendor holds it: its role and its bytes (pack_input's layout,
/// backends/strided_buffer.hpp: the geometry's strides, gaps holding kInputGapCanary).
struct InputBuffer {
    Role role;
    std::span<const std::byte> bytes;
};

/// A prepared case: the vendor's compiled objects and buffers with the inputs bound (RAII).
/// Made by Backend::prepare; run as often as needed (checks, timing, determinism).
class Plan {
public:
    virtual ~Plan() = default;
    /// Runs the compiled kernels once on the bound inputs and waits for them. Throws BackendError.
    virtual void execute() = 0;
    /// Runs once and returns the elapsed time in milliseconds on the backend's own clock (host
    /// steady clock around execute() on the CPU; a GPU backend times with device events).
    virtual double execute_timed_ms();
    /// Evicts the device's caches before a timed run (a GPU backend enqueues a write of at least
    /// twice the L2 size, outside the timed span); no-op by default (CPU backends). The timing
    /// loop calls it before every timed run with --cold-cache (driver/timing.hpp).
    virtual void flush_caches() {}
    /// True when the kernels run on a device with its own memory: --cold-cache then flushes only
    /// the device's caches (flush_caches), not the host's.
    virtual bool runs_on_device() const { return false; }
    /// Refills every output buffer with the NaN prefill (so the next run's writes are checked).
    virtual void poison_outputs() = 0;
    /// The outputs of the last run decoded to floats, with what the guard bands saw.
    virtual SdpaOutputs read_outputs() = 0;
    /// Lines worth printing with -v (e.g. "oneDNN graph: 18 ops, 1 partition(s)").
    virtual std::vector<std::string> notes() const { return {}; }
    /// Wall time of building and compiling the plan, in milliseconds.
    virtual double compile_ms() const { return 0.0; }
    /// How many partitions the vendor split the graph into (oneDNN's get_partitions); nullopt for
    /// a backend that does not partition (Backend::partitions_graphs()). Checked against
    /// --expected-n-partitions.
    virtual std::optional<std::size_t> partitions() const { return std::nullopt; }
    /// What the vendor ran (core/implementation.hpp): its name for the plan's kernels and, where
    /// it lists them, the implementations inside. The name is known after prepare where the
    /// vendor says it when compiling (oneDNN, cuDNN, PyTorch); the parts are complete after the
    /// first execute() (oneDNN lists its primitives with their times then). Default: nothing said.
    virtual Implementation implementation() const { return {}; }
    /// The plan's input buffers as they are now, for the input check (driver/input_check.hpp: after
    /// the checked run each must hold what prepare() packed). Valid until the plan runs again or
    /// dies. Default: none (the check is not made: a device's copies are not read back).
    virtual std::vector<InputBuffer> input_buffers() const { return {}; }
    /// Every tensor as the plan bound it to the vendor: dims and strides in the vendor's rank and
    /// order (oneDNN's 5-D GQA views, PyTorch's views), inputs then outputs. Default: none.
    virtual std::vector<BoundTensor> bound_tensors() const { return {}; }
};

/// The tensors of geometry(p) (core/geometry.hpp) that a plan binding the geometry as it is
/// (the reference backend, the fault injector) gives its kernel: every input and output role
/// with its dims and strides, in role order (ragged tensors: the strides within a batch).
std::vector<BoundTensor> geometry_tensors(const Problem& p);

/// How a backend's library runs its kernels on the host's cores: its threading runtime and the
/// concurrency that runtime reports it may use, read back from the library where it can say
/// (oneDNN's SYCL CPU runtime: TBB's max_concurrency), else the process's CPUs.
struct Threading {
    std::string runtime;  ///< e.g. "SYCL (TBB)", "OpenMP"; "" for a backend on a device
    int threads = 0;      ///< the concurrency it reports; 0 unknown
    std::string source;   ///< where `threads` came from ("tbb::this_task_arena::max_concurrency", ...)
};

/// A vendor adapter. Implementations translate vendor exceptions into BackendError at
/// their public functions; nothing else escapes. Every Problem it is given is one step's
/// (driver/run_case.hpp step_problem): p.dir is fwd_i, fwd_t or bwd, never fwd_bwd, which is the
/// driver's list of two steps.
class Backend {
public:
    virtual ~Backend() = default;
    /// Name as given to --backend (e.g. "onednn").
    virtual std::string_view name() const = 0;
    /// One line for --version: library version, runtime and ISA.
    virtual std::string version() const = 0;
    /// The vendor library's version, "MAJOR.MINOR.PATCH" (oneDNN's dnnl_version(), the cuDNN
    /// that was loaded), "" for a backend without one or when it cannot be loaded. --expect
    /// entries' "requires" compare against it (driver/expect.hpp).
    virtual std::string library_version() const { return ""; }
    /// The device this backend runs on when it is not the host CPU (a GPU's name, SMs, clocks),
    /// "" otherwise or when there is none; for the reports' run context.
    virtual std::string device_name() const { return ""; }
    /// The device's peak dense rate for io type `dt` in TFLOP/s (backends/cuda/gpu_spec.hpp), 0
    /// when unknown (every CPU backend); the reports' percent of peak.
    virtual double peak_tflops(DType dt) const {
        (void)dt;
        return 0;
    }
    /// True when --cpu-isa caps this backend's dispatch (oneDNN): cap_cpu_isa and cpu_isa answer.
    virtual bool caps_cpu_isa() const { return false; }
    /// Caps the library's CPU dispatch, for this whole process, at `level` (CpuIsa::none: no cap);
    /// must come before anything makes the library fix its ISA (its first kernel, a cpu_isa()
    /// query). "" when the cap is set, else why not (the library fixed its ISA already, or it
    /// has no such control). docs/knobs_run.md#cpu-isa-levels---cpu-isa.
    virtual std::string cap_cpu_isa(CpuIsa level) {
        (void)level;
        return fmt::format("backend {} has no CPU ISA cap", name());
    }
    /// The level the library dispatches to in this process (the cap met with what the CPU has);
    /// nullopt for a backend without ISA control. Asking fixes the library's ISA for the process.
    virtual std::optional<CpuIsa> cpu_isa() const { return std::nullopt; }
    /// The library's threading runtime and the concurrency it reports (Threading); empty for a
    /// backend that does not run on the host's cores or cannot say.
    virtual Threading threading() const { return {}; }
    /// Documented conventions of this backend's outputs (see Conventions).
    virtual Conventions conventions() const { return {}; }
    /// True when the vendor splits its graph into partitions that its plans count
    /// (Plan::partitions(); oneDNN's get_partitions): --expected-n-partitions is UNIMPLEMENTED
    /// elsewhere, before anything is filled.
    virtual bool partitions_graphs() const { return false; }
    /// Host bytes this backend allocates for `p` beyond the harness's own tensors (its copies of
    /// the inputs, guarded outputs, masks, library intermediates), for the memory guard
    /// (core/memory_estimate.hpp). `threads`: the threads it may use. Default: nothing.
    virtual std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const {
        (void)p;
        (void)threads;
        return {};
    }
    /// Device bytes a case of `p` needs (its device copies of the inputs, the guarded outputs, masks;
    /// the library's work space where known before it builds), for the device-memory guard
    /// (--max-device-memory, driver/run_case.cpp). Default: nothing (the kernels use host memory).
    virtual std::vector<MemoryItem> device_memory(const Problem& p) const {
        (void)p;
        return {};
    }
    /// The device's free memory now, in bytes (cudaMemGetInfo); 0 when not known (the default).
    /// Called only in the process that runs the case, after support(): never in a parent that
    /// forks children (the first CUDA call starts the runtime in the calling process).
    virtual std::uint64_t device_free_bytes() const { return 0; }
    /// The dropout keep mask this backend's kernel applies for `p` (p.dropout set), known before it
    /// runs: the library's generator replicated bit for bit, or the mask the backend feeds it
    /// (core/dropout.hpp). The reference is fed this very mask, never an independent draw.
    /// nullptr (the default): the backend runs no dropout, and support() refuses such cases.
    virtual std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const {
        (void)p;
        return nullptr;
    }
    /// Cheap check before any allocation; nullopt when the backend will try to run `p`.
    virtual std::optional<Unsupported> support(const Problem& p) const = 0;
    /// Builds and compiles the vendor objects for `p`, allocates the guarded output buffers
    /// (prefilled with NaN, stride gaps included) and copies `in` (dense host tensors, dims of
    /// their geometry roles) into vendor buffers with the strides of geometry(p)
    /// (core/geometry.hpp, backends/strided_buffer.hpp).
    /// Throws BackendError (UNIMPLEMENTED when the library rejects the case).
    virtual std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) = 0;
};

}  // namespace sdpa
