// The cuDNN adapter: turns cudnn::GraphDesc (cudnn_mapping.hpp) into a cuDNN frontend graph,
// builds a plan (heuristics A, then FALLBACK), binds guarded device buffers and runs it. The only
// file that includes the cuDNN frontend headers (they are heavy).
#include "backends/cudnn/cudnn_backend.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include <cuda_runtime.h>
#include <cudnn_frontend.h>
#include <fmt/format.h>

#include "backends/cudnn/cudnn_mapping.hpp"
#include "backends/guarded_buffer.hpp"
#include "backends/strided_buffer.hpp"
#include "core/memory_estimate.hpp"

// The frontend's dynamic loading (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING) resolves every cuDNN
// symbol from this handle, which the application owns.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace sdpa {

namespace {

namespace fe = cudnn_frontend;
using cudnn::GraphDesc;
using cudnn::TensorDesc;
using cudnn::Uid;

/// What the CUDA runtime says about device 0, probed once per process.
struct DeviceInfo {
    bool ok = false;
    std::string reason;  ///< why not, when !ok
    std::string name;
    int l2_bytes = 0;
};

/// Device 0 as the (static) CUDA runtime sees it; never throws (no driver: !ok with the reason).
const DeviceInfo& device_info() {
    static const DeviceInfo info = [] {
        DeviceInfo d;
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess) {
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
        d.ok = true;
        d.name = fmt::format("{} (sm_{}{})", prop.name, prop.major, prop.minor);
        d.l2_bytes = prop.l2CacheSize;
        return d;
    }();
    return info;
}

/// Loads libcudnn.so.9 once (the loader's search path, then the build's cuDNN directory);
/// returns "" on success, else the loader's message.
const std::string& load_cudnn() {
    static const std::string error = [] {
        std::string err;
        for (const std::string& name : {std::string("libcudnn.so.9"), std::string(SDPABENCH_CUDNN_LIBDIR) + "/libcudnn.so.9"}) {
            if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
                fe::cudnn_dlhandle = h;
                return std::string();
            }
            const char* msg = dlerror();
            err = fmt::format("cannot load libcudnn.so.9: {}", msg ? msg : "unknown dlopen error");
        }
        return err;
    }();
    return error;
}

/// Throws BackendError(FAILED) naming `what` and the CUDA error when `e` is not cudaSuccess.
void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        throw BackendError(Status::failed, fmt::format("CUDA {}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}

/// A cudnn frontend status: UNIMPLEMENTED with cuDNN's message when bad (graph rejected).
void check_fe(fe::error_t e, const char* step) {
    if (e.is_bad()) throw BackendError(Status::unimplemented, fmt::format("cuDNN {}: {}", step, e.get_message()));
}

/// cuDNN frontend data type of a tensor's element type.
fe::DataType_t fe_type(ElemType t) {
    switch (t) {
        case ElemType::bf16: return fe::DataType_t::BFLOAT16;
        case ElemType::f16: return fe::DataType_t::HALF;
        case ElemType::s32: return fe::DataType_t::INT32;
        case ElemType::u8: return fe::DataType_t::UINT8;
        default: return fe::DataType_t::FLOAT;
    }
}

/// The frontend takes dims and strides as vectors.
std::vector<std::int64_t> vec(const std::array<std::int64_t, 4>& a) { return {a.begin(), a.end()}; }

/// Owned device allocation.
class DeviceMem {
public:
    DeviceMem() = default;
    explicit DeviceMem(std::size_t bytes) : bytes_(bytes) {
        if (bytes > 0) check_cuda(cudaMalloc(&ptr_, bytes), fmt::format("cudaMalloc({} bytes)", bytes).c_str());
    }
    DeviceMem(DeviceMem&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
    DeviceMem& operator=(DeviceMem&& o) noexcept {
        std::swap(ptr_, o.ptr_);
        std::swap(bytes_, o.bytes_);
        return *this;
    }
    ~DeviceMem() {
        if (ptr_) cudaFree(ptr_);
    }
    void* get() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

/// cuDNN handle, stream, timing events and the L2 flush buffer, created on first prepare().
struct Runtime {
    cudnnHandle_t handle = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    DeviceMem flush;

    Runtime() {
        check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
        check_cuda(cudaEventCreate(&start), "cudaEventCreate");
        check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
        if (fe::detail::create_handle(&handle) != CUDNN_STATUS_SUCCESS)
            throw BackendError(Status::failed, "cudnnCreate failed");
        if (fe::detail::set_stream(handle, stream) != CUDNN_STATUS_SUCCESS)
            throw BackendError(Status::failed, "cudnnSetStream failed");
    }
    ~Runtime() {
        if (handle) fe::detail::destroy_handle(handle);
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
        if (stream) cudaStreamDestroy(stream);
    }
};

/// One cuDNN graph with its plan, guarded device outputs and bound inputs. `mask`: the keep mask
/// the backend declares for p (Backend::dropout_mask; null without dropout), materialised as the
/// graph's dropout mask tensor.
class CudnnPlan final : public Plan {
public:
    CudnnPlan(const Problem& p, const SdpaInputs& in, Runtime& rt, std::shared_ptr<const DropoutMask> mask)
        : p_(p), rt_(rt), desc_(cudnn::describe_graph(p)), mask_(std::move(mask)) {
        if (desc_.dropout && !mask_) throw BackendError(Status::failed, "cuDNN: a dropout graph without a mask");
        const auto t0 = std::chrono::steady_clock::now();
        build_graph();
        bind(in);
        compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }

    void execute() override {
        run();
        check_cuda(cudaStreamSynchronize(rt_.stream), "cudaStreamSynchronize after execute");
    }

    double execute_timed_ms() override {
        check_cuda(cudaEventRecord(rt_.start, rt_.stream), "cudaEventRecord");
        run();
        check_cuda(cudaEventRecord(rt_.stop, rt_.stream), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(rt_.stop), "cudaEventSynchronize");
        float ms = 0.f;
        check_cuda(cudaEventElapsedTime(&ms, rt_.start, rt_.stop), "cudaEventElapsedTime");
        return ms;
    }

    void flush_caches() override {
        if (!rt_.flush.get()) {
            const int l2 = device_info().l2_bytes;
            rt_.flush = DeviceMem(static_cast<std::size_t>(std::max(l2, 1 << 20)) * 2);
        }
        check_cuda(cudaMemsetAsync(rt_.flush.get(), ++flush_byte_, rt_.flush.bytes(), rt_.stream), "L2 flush");
    }

    void poison_outputs() override {
        for (auto& [uid, o] : outputs_) {
            o.host.poison();
            upload(o);
        }
    }

    SdpaOutputs read_outputs() override {
        SdpaOutputs out;
        for (auto& [uid, o] : outputs_) {
            check_cuda(cudaMemcpy(o.host.raw().data(), o.dev.get(), o.host.raw().size(), cudaMemcpyDeviceToHost),
                    "cudaMemcpy output to host");
            store_output(out, o.host);
        }
        return out;
    }

    std::vector<std::string> notes() const override { return notes_; }
    double compile_ms() const override { return compile_ms_; }

private:
    /// A device output: [guard | payload | guard] mirrored by a host GuardedBuffer.
    struct GuardedOut {
        TensorDesc desc;
        GuardedBuffer host;
        DeviceMem dev;
    };

    void run() {
        auto status = graph_->execute(rt_.handle, pack_, workspace_.get());
        if (status.is_bad()) throw BackendError(Status::failed, fmt::format("cuDNN execute: {}", status.get_message()));
    }

    void upload(GuardedOut& o) {
        check_cuda(cudaMemcpy(o.dev.get(), o.host.raw().data(), o.host.raw().size(), cudaMemcpyHostToDevice),
                "cudaMemcpy guarded output to device");
    }

    void build_graph() {
        using fe::graph::Tensor_attributes;
        graph_ = std::make_shared<fe::graph::Graph>();
        const ElemType io = desc_.find(Uid::Q)->geom.type;
        graph_->set_io_data_type(fe_type(io))
                .set_intermediate_data_type(fe::DataType_t::FLOAT)
                .set_compute_data_type(fe::DataType_t::FLOAT);
        std::map<Uid, std::shared_ptr<Tensor_attributes>> t;
        for (const TensorDesc& d : desc_.inputs)
            t[d.uid] = graph_->tensor(Tensor_attributes()
                                              .set_name(d.name)
                                              .set_uid(static_cast<std::int64_t>(d.uid))
                                              .set_dim(vec(d.geom.dims))
                                              .set_stride(vec(d.geom.strides))
                                              .set_data_type(fe_type(d.geom.type)));
        // By-value scalars (the dropout scales): a host pointer in the variant pack at execute(),
        // Tensor_attributes::set_is_pass_by_value(true) (graph_properties.h).
        for (const cudnn::ScalarDesc& d : desc_.scalars)
            t[d.uid] = graph_->tensor(Tensor_attributes()
                                              .set_name(d.name)
                                              .set_uid(static_cast<std::int64_t>(d.uid))
                                              .set_dim(vec(d.dims))
                                              .set_stride(vec(d.strides))
                                              .set_is_pass_by_value(true)
                                              .set_data_type(fe_type(d.type)));
        auto mark_output = [&](std::shared_ptr<Tensor_attributes>& x, Uid uid) {
            const TensorDesc* d = desc_.find(uid);
            x->set_output(true)
                    .set_uid(static_cast<std::int64_t>(uid))
                    .set_dim(vec(d->geom.dims))
                    .set_stride(vec(d->geom.strides))
                    .set_data_type(fe_type(d->geom.type));
        };
        // Attributes shared by SDPA_attributes and SDPA_backward_attributes.
        auto common = [&](auto& a) {
            a.set_attn_scale(desc_.attn_scale);
            if (t.count(Uid::bias)) a.set_bias(t[Uid::bias]);
            if (desc_.padding) a.set_padding_mask(true).set_seq_len_q(t[Uid::seq_len_q]).set_seq_len_kv(t[Uid::seq_len_kv]);
            if (desc_.alignment)
                a.set_diagonal_alignment(*desc_.alignment == cudnn::Alignment::top_left ? fe::DiagonalAlignment_t::TOP_LEFT
                                                                                       : fe::DiagonalAlignment_t::BOTTOM_RIGHT);
            if (desc_.left_bound) a.set_diagonal_band_left_bound(static_cast<int>(*desc_.left_bound));
            if (desc_.right_bound) a.set_diagonal_band_right_bound(static_cast<int>(*desc_.right_bound));
        };
        if (!desc_.backward) {
            auto a = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(desc_.generate_stats);
            common(a);
            // graph_properties.h SDPA_attributes::set_dropout(mask, scale): caller-supplied mask mode.
            if (desc_.dropout) a.set_dropout(t[Uid::dropout_mask], t[Uid::dropout_scale]);
            auto [O, stats] = graph_->sdpa(t[Uid::Q], t[Uid::K], t[Uid::V], a);
            mark_output(O, Uid::O);
            if (desc_.generate_stats) mark_output(stats, Uid::stats);
        } else {
            auto a = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward");
            common(a);
            // graph_properties.h SDPA_backward_attributes::set_dropout(mask, scale, scale_inv).
            if (desc_.dropout) a.set_dropout(t[Uid::dropout_mask], t[Uid::dropout_scale], t[Uid::dropout_scale_inv]);
            if (desc_.deterministic) a.set_deterministic_algorithm(true);
            auto [dQ, dK, dV] = graph_->sdpa_backward(t[Uid::Q], t[Uid::K], t[Uid::V], t[Uid::O], t[Uid::dO], t[Uid::stats], a);
            mark_output(dQ, Uid::dQ);
            mark_output(dK, Uid::dK);
            mark_output(dV, Uid::dV);
        }
        check_fe(graph_->validate(), "validate");
        check_fe(graph_->build_operation_graph(rt_.handle), "build_operation_graph");
        check_fe(graph_->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), "create_execution_plans");
        check_fe(graph_->check_support(rt_.handle), "check_support");
        check_fe(graph_->build_plans(rt_.handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans");
        std::int64_t ws = 0;
        check_fe(graph_->get_workspace_size(ws), "get_workspace_size");
        workspace_ = DeviceMem(static_cast<std::size_t>(ws));
        std::string plan;
        if (graph_->get_plan_name(plan).is_good()) notes_.push_back(fmt::format("cuDNN plan: {}", plan));
        notes_.push_back(fmt::format("cuDNN {}: workspace {} bytes{}", desc_.backward ? "sdpa_backward" : "sdpa", ws,
                desc_.deterministic ? ", deterministic" : ""));
        if (desc_.dropout) {
            const TensorGeom& m = desc_.find(Uid::dropout_mask)->geom;
            notes_.push_back(fmt::format("cuDNN dropout: caller-supplied mask {} [{},{},{},{}] ({} bytes on the device, "
                    "read by the kernel and so inside the timings), scale {}{}; mask: {}", m.type, m.dims[0], m.dims[1],
                    m.dims[2], m.dims[3],
                    static_cast<std::size_t>(m.span()) * size_of(m.type), desc_.find_scalar(Uid::dropout_scale)->value,
                    desc_.backward ? fmt::format(", scale_inv {}", desc_.find_scalar(Uid::dropout_scale_inv)->value) : "",
                    mask_->describe()));
        }
    }

    void bind(const SdpaInputs& in) {
        // Inputs: the host tensor packed at the role's strides (gaps hold the canary); the padding
        // lengths from the mapping.
        auto upload_input = [&](Uid uid, const std::vector<std::byte>& bytes) {
            DeviceMem m(bytes.size());
            check_cuda(cudaMemcpy(m.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy input");
            pack_[static_cast<std::int64_t>(uid)] = m.get();
            inputs_.push_back(std::move(m));
        };
        for (const TensorDesc& d : desc_.inputs) {
            if (d.uid == Uid::seq_len_q || d.uid == Uid::seq_len_kv) {
                const auto& lens = d.uid == Uid::seq_len_q ? desc_.seq_len_q : desc_.seq_len_kv;
                std::vector<std::byte> bytes(lens.size() * sizeof(std::int32_t));
                std::memcpy(bytes.data(), lens.data(), bytes.size());
                upload_input(d.uid, bytes);
            } else if (d.uid == Uid::dropout_mask) {
                upload_input(d.uid, cudnn::dropout_mask_bytes(d.geom, *mask_));  // Z of the declared mask
            } else {
                upload_input(d.uid, pack_input(d.geom, *in.of(d.geom.role)));
            }
        }
        // By-value scalars: pointers to the host floats in desc_, which lives (unchanged) as long as the plan.
        for (cudnn::ScalarDesc& s : desc_.scalars) pack_[static_cast<std::int64_t>(s.uid)] = &s.value;
        for (const TensorDesc& d : desc_.outputs) {
            GuardedOut o{d, GuardedBuffer(d.geom), DeviceMem()};
            o.dev = DeviceMem(o.host.raw().size());
            upload(o);
            pack_[static_cast<std::int64_t>(d.uid)] = static_cast<std::byte*>(o.dev.get()) + GuardedBuffer::kGuardBytes;
            outputs_.emplace(d.uid, std::move(o));
        }
    }

    Problem p_;
    Runtime& rt_;
    GraphDesc desc_;
    std::shared_ptr<const DropoutMask> mask_;
    std::shared_ptr<fe::graph::Graph> graph_;
    std::vector<DeviceMem> inputs_;
    std::map<Uid, GuardedOut> outputs_;
    DeviceMem workspace_;
    std::unordered_map<std::int64_t, void*> pack_;
    std::vector<std::string> notes_;
    double compile_ms_ = 0;
    unsigned char flush_byte_ = 0;
};

/// The cuDNN backend: SKIPPED without a device or libcudnn, UNIMPLEMENTED for f32 io and for
/// graphs cuDNN rejects; one handle and stream per backend, created on the first prepare().
class CudnnBackend final : public Backend {
public:
    std::string_view name() const override { return "cudnn"; }

    std::string device_name() const override {
        const DeviceInfo& d = device_info();
        return d.ok ? d.name : "";
    }

    std::string library_version() const override {
        if (!load_cudnn().empty()) return "";
        try {
            return fe::detail::get_backend_version_string();
        } catch (const std::exception&) {
            return "";
        }
    }

    std::string version() const override {
        std::string loaded;
        if (const std::string& err = load_cudnn(); !err.empty()) loaded = err;
        else {
            try {
                loaded = fmt::format("loaded cuDNN {}", fe::detail::get_backend_version_string());
            } catch (const std::exception& e) {
                loaded = e.what();
            }
        }
        const DeviceInfo& d = device_info();
        return fmt::format("cudnn: cuDNN frontend {}.{}.{}, built against cuDNN {}.{}.{}, {}, device: {}",
                CUDNN_FRONTEND_MAJOR_VERSION, CUDNN_FRONTEND_MINOR_VERSION, CUDNN_FRONTEND_PATCH_VERSION, CUDNN_MAJOR,
                CUDNN_MINOR, CUDNN_PATCHLEVEL, loaded, d.ok ? d.name : d.reason);
    }

    /// The mask the plan feeds cuDNN (caller-supplied-mask mode, cudnn_mapping.cpp): sdpabench's own
    /// generator, so the reference gets the exact mask without knowing cuDNN's Philox.
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(p); }

    /// Host bytes of a plan: its host copies of the strided inputs (staged for the upload) and of
    /// the guarded outputs (core/memory_estimate.hpp vendor_buffer_bytes), and with dropout the
    /// mask tensor staged for its upload (dropout_mask_geom: [B,H_q,S_q,S_kv] in the io dtype),
    /// counted once: fwd_bwd's two plans stage the same mask one after the other, each freeing
    /// its copy after the upload. (The device copy, the same size, is not a host cost.)
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned) const override {
        std::vector<MemoryItem> items{{"cuDNN host staging of the strided inputs and guarded outputs", vendor_buffer_bytes(p)}};
        if (const auto m = cudnn::dropout_mask_geom(p))
            items.push_back({"cuDNN dropout mask staged on the host ([B,H_q,S_q,S_kv], io dtype)",
                static_cast<double>(m->span()) * static_cast<double>(size_of(m->type))});
        return items;
    }

    std::optional<Unsupported> support(const Problem& p) const override {
        if (const DeviceInfo& d = device_info(); !d.ok) return Unsupported{Status::skipped, d.reason};
        if (const std::string& err = load_cudnn(); !err.empty()) return Unsupported{Status::skipped, err};
        // Dropout (any p in [0, 1); p = 0 keeps the mask, all ones but for 32-bit draws of exactly 0
        // (core/dropout.hpp philox_keeps), with scale 1) is accepted here;
        // what cuDNN refuses with it (bottom-right alignment, left bounds) its validate() says.
        if (auto why = cudnn::cudnn_precheck(p)) return Unsupported{Status::unimplemented, *why};
        return std::nullopt;
    }

    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        try {
            if (!rt_) rt_ = std::make_unique<Runtime>();
            return std::make_unique<CudnnPlan>(p, in, *rt_, p.dropout ? dropout_mask(p) : nullptr);
        } catch (const BackendError&) {
            throw;
        } catch (const std::exception& e) {
            throw BackendError(Status::failed, fmt::format("cuDNN: {}", e.what()));
        }
    }

private:
    std::unique_ptr<Runtime> rt_;
};

}  // namespace

std::unique_ptr<Backend> make_cudnn_backend() { return std::make_unique<CudnnBackend>(); }

}  // namespace sdpa
