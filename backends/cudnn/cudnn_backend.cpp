// The cuDNN adapter: turns cudnn::GraphDesc (cudnn_mapping.hpp) into a cuDNN frontend graph,
// builds a plan (heuristics A, then FALLBACK), binds guarded device buffers and runs it. The only
// file that includes the cuDNN frontend headers (they are heavy); device memory, the stream,
// event timing and the L2 flush come from the shared GPU layer (backends/cuda/cuda_runtime.hpp).
#include "backends/cudnn/cudnn_backend.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <map>
#include <unordered_map>

#include <cudnn_frontend.h>
#include <fmt/format.h>

#include "backends/cuda/cuda_runtime.hpp"
#include "backends/cudnn/cudnn_mapping.hpp"
#include "backends/guarded_buffer.hpp"
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

/// Loads libcudnn.so.9 once: first from the absolute cuDNN folder the build was configured with
/// (the one scripts/device_check.sh probed: a toolkit with its own cuDNN earlier on the RPATH or
/// the loader's path would otherwise give a mixed install), then by the loader's search; returns
/// "" on success, else the loader's message for each try.
const std::string& load_cudnn() {
    static const std::string error = [] {
        std::string err;
        for (const std::string& name : {std::string(SDPABENCH_CUDNN_LIBDIR) + "/libcudnn.so.9", std::string("libcudnn.so.9")}) {
            if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
                fe::cudnn_dlhandle = h;
                return std::string();
            }
            const char* msg = dlerror();
            err += fmt::format("{}cannot load {}: {}", err.empty() ? "" : "; ", name, msg ? msg : "unknown dlopen error");
        }
        return err;
    }();
    return error;
}

/// The file the loaded libcudnn came from (dladdr of its cudnnGetVersion), or "" before
/// load_cudnn() succeeded.
std::string loaded_cudnn_path() {
    if (!fe::cudnn_dlhandle) return "";
    void* sym = dlsym(fe::cudnn_dlhandle, "cudnnGetVersion");
    Dl_info info{};
    return sym && dladdr(sym, &info) != 0 && info.dli_fname ? std::string(info.dli_fname) : std::string();
}

/// A frontend status as a BackendError: UNIMPLEMENTED when cuDNN has no kernel for the graph
/// (GRAPH_NOT_SUPPORTED, HEURISTIC_QUERY_FAILED, GRAPH_EXECUTION_PLAN_CREATION_FAILED), FAILED
/// for everything else (an adapter bug, a broken install: CUDNN_BACKEND_API_FAILED, INVALID_VALUE,
/// ATTRIBUTE_NOT_SET, NVRTC_COMPILATION_FAILED, ...), with the code's name and cuDNN's message.
void check_fe(fe::error_t e, const char* step) {
    if (e.is_good()) return;
    const fe::error_code_t code = e.get_code();
    const bool no_kernel = code == fe::error_code_t::GRAPH_NOT_SUPPORTED || code == fe::error_code_t::HEURISTIC_QUERY_FAILED ||
                           code == fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED;
    throw BackendError(no_kernel ? Status::unimplemented : Status::failed,
            fmt::format("cuDNN {}: {} (error code {})", step, e.get_message(), static_cast<int>(code)));
}

/// cuDNN frontend data type of a tensor's element type.
fe::DataType_t fe_type(ElemType t) {
    switch (t) {
        case ElemType::bf16: return fe::DataType_t::BFLOAT16;
        case ElemType::f16: return fe::DataType_t::HALF;
        case ElemType::e4m3: return fe::DataType_t::FP8_E4M3;
        case ElemType::e5m2: return fe::DataType_t::FP8_E5M2;
        case ElemType::s32: return fe::DataType_t::INT32;
        case ElemType::s64: return fe::DataType_t::INT64;
        case ElemType::u8: return fe::DataType_t::UINT8;
        default: return fe::DataType_t::FLOAT;
    }
}

/// The frontend takes dims and strides as vectors.
std::vector<std::int64_t> vec(const std::array<std::int64_t, 4>& a) { return {a.begin(), a.end()}; }

/// The cuDNN handle on the shared GPU layer's stream, the event timer and the L2 flusher, created
/// on the first prepare() and shared by the backend's plans. Members are RAII, so a constructor
/// that throws releases what it made.
struct Runtime {
    struct Handle {
        cudnnHandle_t h = nullptr;
        Handle() {
            if (fe::detail::create_handle(&h) != CUDNN_STATUS_SUCCESS) throw BackendError(Status::failed, "cudnnCreate failed");
        }
        ~Handle() {
            if (h) fe::detail::destroy_handle(h);
        }
    };
    cuda::Stream stream;
    Handle handle;
    cuda::EventTimer timer;
    cuda::L2Flusher l2;

    Runtime() {
        if (fe::detail::set_stream(handle.h, stream.get()) != CUDNN_STATUS_SUCCESS)
            throw BackendError(Status::failed, "cudnnSetStream failed");
    }
};

/// One cuDNN graph with its plan, guarded device outputs and bound inputs. `mask`: the keep mask
/// the backend declares for p (Backend::dropout_mask; null without dropout), materialised as the
/// graph's dropout mask tensor.
class CudnnPlan final : public Plan {
public:
    CudnnPlan(const Problem& p, const SdpaInputs& in, Runtime& rt, std::shared_ptr<const DropoutMask> mask,
            const Conventions& conv)
        : rt_(rt), desc_(cudnn::describe_graph(p)), mask_(std::move(mask)) {
        if (desc_.dropout && !mask_) throw BackendError(Status::failed, "cuDNN: a dropout graph without a mask");
        const auto t0 = std::chrono::steady_clock::now();
        build_graph();
        compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        bind(in, conv);
    }

    void execute() override {
        run();
        rt_.stream.sync("execute");
    }

    /// Device time of one run: events around the launch, the host's launch work hidden behind the
    /// timer's gate (backends/cuda/cuda_runtime.hpp EventTimer).
    double execute_timed_ms() override {
        timed_ = true;
        return rt_.timer.time_ms(rt_.stream.get(), [&] { run(); });
    }

    /// The L2 flush: enqueued on the plan's stream before the timed run's events.
    void flush_caches() override { rt_.l2.flush(rt_.stream.get()); }
    bool runs_on_device() const override { return true; }

    void poison_outputs() override {
        for (auto& [uid, o] : outputs_) o.poison();
    }

    SdpaOutputs read_outputs() override {
        SdpaOutputs out;
        for (auto& [uid, o] : outputs_) store_output(out, o.download());
        return out;
    }

    std::vector<std::string> notes() const override {
        std::vector<std::string> n = notes_;
        if (timed_ && !rt_.timer.gated())
            n.push_back("timing: the launch gate timed out (cuDNN waited on the stream), so the times include host launch "
                        "overhead");
        return n;
    }
    double compile_ms() const override { return compile_ms_; }
    /// The execution plan the heuristics chose, by the name cudnn_frontend gives it
    /// (Graph::get_plan_name: the engine and its knobs, e.g. "eng0_k24=..."), with the
    /// implementation sdpabench pinned when it pinned one.
    Implementation implementation() const override {
        return {fmt::format("{}{}", plan_name_, composite_ ? " (COMPOSITE implementation, pinned)" : ""), {}};
    }
    /// The graph's tensors as given to cuDNN (backends/cudnn/cudnn_mapping.hpp).
    std::vector<BoundTensor> bound_tensors() const override { return cudnn::bound_tensors(desc_); }

private:
    void run() {
        auto status = graph_->execute(rt_.handle.h, pack_, workspace_.get());
        if (status.is_bad()) throw BackendError(Status::failed, fmt::format("cuDNN execute: {}", status.get_message()));
    }

    /// The graph's tensors by uid.
    using Tensors = std::map<Uid, std::shared_ptr<fe::graph::Tensor_attributes>>;

    /// The graph of desc_ with its plan built (UNIMPLEMENTED when cuDNN has no kernel for it:
    /// check_fe) and its workspace allocated.
    void build_graph() {
        graph_ = std::make_shared<fe::graph::Graph>();
        const ElemType io = desc_.find(Uid::Q)->geom.type;
        graph_->set_io_data_type(fe_type(io))
                .set_intermediate_data_type(fe::DataType_t::FLOAT)
                .set_compute_data_type(fe::DataType_t::FLOAT);
        Tensors t = input_tensors();
        if (!desc_.backward) add_forward(t);
        else if (desc_.fp8) add_fp8_backward(t);
        else add_backward(t);
        build_plan();
    }

    /// The graph's input tensors: the ragged offsets, the inputs, the scalars.
    Tensors input_tensors() {
        using fe::graph::Tensor_attributes;
        Tensors t;
        auto attrs = [](Uid uid, const std::string& name, const std::array<std::int64_t, 4>& dims,
                             const std::array<std::int64_t, 4>& strides, ElemType type) {
            return Tensor_attributes()
                    .set_name(name)
                    .set_uid(static_cast<std::int64_t>(uid))
                    .set_dim(vec(dims))
                    .set_stride(vec(strides))
                    .set_data_type(fe_type(type));
        };
        for (const cudnn::RaggedDesc& r : desc_.ragged)
            t[r.uid] = graph_->tensor(attrs(r.uid, r.name, {static_cast<std::int64_t>(r.offsets.size()), 1, 1, 1},
                    {1, 1, 1, 1}, r.type));
        for (const TensorDesc& d : desc_.inputs) {
            t[d.uid] = graph_->tensor(attrs(d.uid, d.name, d.geom.dims, d.geom.strides, d.geom.type));
            if (d.ragged) t[d.uid]->set_ragged_offset(t[*d.ragged]);
        }
        // By-value scalars (the dropout scales) are a host pointer in the variant pack at execute()
        // (Tensor_attributes::set_is_pass_by_value, graph_properties.h); the fp8 scalars are
        // [1,1,1,1] device tensors.
        for (const cudnn::ScalarDesc& d : desc_.scalars)
            t[d.uid] = graph_->tensor(attrs(d.uid, d.name, d.dims, d.strides, d.type).set_is_pass_by_value(d.by_value));
        return t;
    }

    /// Marks `x` as the graph's output `uid`, at its descriptor's dims, strides and type.
    void mark_output(Tensors& t, const std::shared_ptr<fe::graph::Tensor_attributes>& x, Uid uid) const {
        const TensorDesc* d = desc_.find(uid);
        x->set_output(true)
                .set_uid(static_cast<std::int64_t>(uid))
                .set_dim(vec(d->geom.dims))
                .set_stride(vec(d->geom.strides))
                .set_data_type(fe_type(d->geom.type));
        if (d->ragged) x->set_ragged_offset(t[*d->ragged]);
    }

    /// Marks `x` as the fp8 amax output `uid`: one f32.
    static void mark_amax(const std::shared_ptr<fe::graph::Tensor_attributes>& x, Uid uid) {
        x->set_output(true).set_uid(static_cast<std::int64_t>(uid)).set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1})
                .set_data_type(fe::DataType_t::FLOAT);
    }

    /// Sets the attributes shared by the forward and backward attributes (fp8 or not): the scale,
    /// bias, padding and the diagonal band.
    template <class Attributes>
    void set_common(Attributes& a, Tensors& t) const {
        a.set_attn_scale(desc_.attn_scale);
        if (t.count(Uid::bias)) a.set_bias(t[Uid::bias]);
        if (desc_.padding) a.set_padding_mask(true).set_seq_len_q(t[Uid::seq_len_q]).set_seq_len_kv(t[Uid::seq_len_kv]);
        if (desc_.alignment)
            a.set_diagonal_alignment(*desc_.alignment == cudnn::Alignment::top_left ? fe::DiagonalAlignment_t::TOP_LEFT
                                                                                   : fe::DiagonalAlignment_t::BOTTOM_RIGHT);
        if (desc_.left_bound) a.set_diagonal_band_left_bound(static_cast<int>(*desc_.left_bound));
        if (desc_.right_bound) a.set_diagonal_band_right_bound(static_cast<int>(*desc_.right_bound));
    }

    /// The forward node (sdpa or sdpa_fp8) and its outputs.
    void add_forward(Tensors& t) {
        // COMPOSITE pinned: AUTO would pick the UNIFIED node for some plain forwards, whose
        // conventions differ from the backward's composite node (graph_interface.h Graph::sdpa).
        auto a = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(desc_.generate_stats)
                .set_implementation(fe::AttentionImplementation_t::COMPOSITE);
        set_common(a, t);
        // graph_properties.h SDPA_attributes::set_dropout(mask, scale): caller-supplied mask mode.
        if (desc_.dropout) a.set_dropout(t[Uid::dropout_mask], t[Uid::dropout_scale]);
        if (desc_.fp8) {
            auto [O, stats, amax_s, amax_o] = graph_->sdpa_fp8(t[Uid::Q], t[Uid::K], t[Uid::V], t[Uid::descale_q],
                    t[Uid::descale_k], t[Uid::descale_v], t[Uid::descale_s], t[Uid::scale_s], t[Uid::scale_o], a);
            mark_output(t, O, Uid::O);
            if (desc_.generate_stats) mark_output(t, stats, Uid::stats);
            mark_amax(amax_s, Uid::amax_s);
            mark_amax(amax_o, Uid::amax_o);
        } else {
            auto [O, stats] = graph_->sdpa(t[Uid::Q], t[Uid::K], t[Uid::V], a);
            mark_output(t, O, Uid::O);
            if (desc_.generate_stats) mark_output(t, stats, Uid::stats);
        }
        notes_.push_back("cuDNN sdpa: COMPOSITE implementation (pinned)");
        composite_ = true;
    }

    /// The fp8 backward node (sdpa_fp8_backward) and its outputs.
    void add_fp8_backward(Tensors& t) {
        auto a = fe::graph::SDPA_fp8_backward_attributes().set_name("sdpa_fp8_backward");
        set_common(a, t);
        if (desc_.dropout) a.set_dropout(t[Uid::dropout_mask], t[Uid::dropout_scale], t[Uid::dropout_scale_inv]);
        if (desc_.deterministic) a.set_deterministic_algorithm(true);
        auto [dQ, dK, dV, amax_dq, amax_dk, amax_dv, amax_dp] = graph_->sdpa_fp8_backward(t[Uid::Q], t[Uid::K],
                t[Uid::V], t[Uid::O], t[Uid::dO], t[Uid::stats], t[Uid::descale_q], t[Uid::descale_k],
                t[Uid::descale_v], t[Uid::descale_o], t[Uid::descale_dO], t[Uid::descale_s], t[Uid::descale_dP],
                t[Uid::scale_s], t[Uid::scale_dQ], t[Uid::scale_dK], t[Uid::scale_dV], t[Uid::scale_dP], a);
        mark_output(t, dQ, Uid::dQ);
        mark_output(t, dK, Uid::dK);
        mark_output(t, dV, Uid::dV);
        mark_amax(amax_dq, Uid::amax_dQ);
        mark_amax(amax_dk, Uid::amax_dK);
        mark_amax(amax_dv, Uid::amax_dV);
        mark_amax(amax_dp, Uid::amax_dP);
    }

    /// The backward node (sdpa_backward) and its outputs.
    void add_backward(Tensors& t) {
        auto a = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward");
        set_common(a, t);
        // graph_properties.h SDPA_backward_attributes::set_dropout(mask, scale, scale_inv).
        if (desc_.dropout) a.set_dropout(t[Uid::dropout_mask], t[Uid::dropout_scale], t[Uid::dropout_scale_inv]);
        if (desc_.deterministic) a.set_deterministic_algorithm(true);
        auto [dQ, dK, dV] = graph_->sdpa_backward(t[Uid::Q], t[Uid::K], t[Uid::V], t[Uid::O], t[Uid::dO], t[Uid::stats], a);
        mark_output(t, dQ, Uid::dQ);
        mark_output(t, dK, Uid::dK);
        mark_output(t, dV, Uid::dV);
    }

    /// Validates the graph, builds its plan (heuristics A, then FALLBACK), allocates the workspace
    /// and notes the plan, the workspace and the dropout mask.
    void build_plan() {
        check_fe(graph_->validate(), "validate");
        check_fe(graph_->build_operation_graph(rt_.handle.h), "build_operation_graph");
        check_fe(graph_->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), "create_execution_plans");
        check_fe(graph_->check_support(rt_.handle.h), "check_support");
        check_fe(graph_->build_plans(rt_.handle.h, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans");
        std::int64_t ws = 0;
        check_fe(graph_->get_workspace_size(ws), "get_workspace_size");
        workspace_ = cuda::DeviceMem(static_cast<std::size_t>(ws));
        std::string plan;
        if (graph_->get_plan_name(plan).is_good()) {
            notes_.push_back(fmt::format("cuDNN plan: {}", plan));
            plan_name_ = plan;
        }
        notes_.push_back(fmt::format("cuDNN {}{}: workspace {} bytes{}", desc_.backward ? "sdpa_backward" : "sdpa",
                desc_.fp8 ? " (fp8)" : "", ws, desc_.deterministic ? ", deterministic" : ""));
        if (!desc_.ragged.empty()) notes_.push_back(fmt::format("cuDNN ragged offsets on {} tensors", desc_.ragged.size()));
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

    void bind(const SdpaInputs& in, const Conventions& conv) {
        auto keep = [&](Uid uid, cuda::DeviceMem m) {
            pack_[static_cast<std::int64_t>(uid)] = m.get();
            inputs_.push_back(std::move(m));
        };
        auto bytes_of = [](const void* data, std::size_t n) {
            std::vector<std::byte> b(n);
            std::memcpy(b.data(), data, n);
            return b;
        };
        // Inputs: the host tensor packed at the role's strides (gaps hold the canary; fp8: codes),
        // the padding lengths from the mapping, the ragged offsets, the dropout mask.
        for (const TensorDesc& d : desc_.inputs) {
            if (d.uid == Uid::seq_len_q || d.uid == Uid::seq_len_kv) {
                const auto& lens = d.uid == Uid::seq_len_q ? desc_.seq_len_q : desc_.seq_len_kv;
                keep(d.uid, cuda::upload(bytes_of(lens.data(), lens.size() * sizeof(std::int32_t))));
            } else if (d.uid == Uid::dropout_mask) {
                keep(d.uid, cuda::upload(cudnn::dropout_mask_bytes(d.geom, *mask_)));  // Z of the declared mask
            } else {
                keep(d.uid, cuda::upload_input(d.geom, *in.of(d.geom.role)));
            }
        }
        for (const cudnn::RaggedDesc& r : desc_.ragged) {
            if (r.type == ElemType::s64) {
                keep(r.uid, cuda::upload(bytes_of(r.offsets.data(), r.offsets.size() * sizeof(std::int64_t))));
            } else {
                const std::vector<std::int32_t> o(r.offsets.begin(), r.offsets.end());
                keep(r.uid, cuda::upload(bytes_of(o.data(), o.size() * sizeof(std::int32_t))));
            }
        }
        // Scalars: by value, a pointer to the host float in desc_ (which lives, unchanged, as long as
        // the plan); else a device copy of it.
        for (cudnn::ScalarDesc& s : desc_.scalars) {
            if (s.by_value) pack_[static_cast<std::int64_t>(s.uid)] = &s.value;
            else keep(s.uid, cuda::upload(bytes_of(&s.value, sizeof(float))));
        }
        // Outputs: guarded device buffers; with padding and the padded-rows conventions, the O,
        // stats and dQ rows past seq_len_q and the dK, dV rows past seq_len_kv are the kernel's to
        // leave (Conventions; compare/compare.hpp unchecked() skips the same rows).
        for (const TensorDesc& d : desc_.outputs) {
            cuda::DeviceOutput o(d.geom);
            const bool q_rows = d.uid == Uid::O || d.uid == Uid::stats || d.uid == Uid::dQ;
            const bool grad = d.uid == Uid::dQ || d.uid == Uid::dK || d.uid == Uid::dV;
            if (desc_.padding && (grad ? conv.padded_grad_rows_unspecified : conv.padded_rows_unspecified)) {
                const auto& lens = q_rows ? desc_.seq_len_q : desc_.seq_len_kv;
                o.set_unspecified_rows({lens.begin(), lens.end()});
                o.poison();
            }
            pack_[static_cast<std::int64_t>(d.uid)] = o.payload();
            outputs_.emplace(d.uid, std::move(o));
        }
        if (desc_.amax_buffer) {  // one guarded [1,1,1,k] buffer, entry k in its own 16-byte slot
            cuda::DeviceOutput o(*desc_.amax_buffer);
            for (const cudnn::AmaxDesc& a : desc_.amax)
                pack_[static_cast<std::int64_t>(a.uid)] = static_cast<std::byte*>(o.payload()) + a.byte_offset;
            outputs_.emplace(Uid::amax_s, std::move(o));
        }
    }

    Runtime& rt_;
    GraphDesc desc_;
    std::shared_ptr<const DropoutMask> mask_;
    std::shared_ptr<fe::graph::Graph> graph_;
    std::vector<cuda::DeviceMem> inputs_;
    std::map<Uid, cuda::DeviceOutput> outputs_;
    cuda::DeviceMem workspace_;
    std::unordered_map<std::int64_t, void*> pack_;
    std::vector<std::string> notes_;
    std::string plan_name_;   ///< Graph::get_plan_name of the built plan ("" when it gives none)
    bool composite_ = false;  ///< the COMPOSITE implementation was pinned
    double compile_ms_ = 0;
    bool timed_ = false;  ///< execute_timed_ms() ran (the gate note concerns timed plans only)
};

/// The cuDNN backend: SKIPPED without a device or libcudnn, UNIMPLEMENTED for f32 io and for
/// graphs cuDNN rejects; one handle and stream per backend, created on the first prepare().
class CudnnBackend final : public Backend {
public:
    explicit CudnnBackend(std::string_view name) : name_(name) {}
    std::string_view name() const override { return name_; }

    std::string device_name() const override {
        const cuda::Device& d = cuda::device();
        return d.ok ? cuda::describe(d.spec) : "";
    }

    double peak_tflops(DType dt) const override {
        const cuda::Device& d = cuda::device();
        return d.ok ? cuda::peak_dense_tflops(d.spec, dt) : 0;
    }

    /// cuDNN's conventions, from NVIDIA's own tests of the frontend (test/python/sdpa/fp16.py of
    /// cudnn-frontend 1.19.1; unverified here until a GPU run, docs/cudnn.md#conventions): a fully
    /// masked or padded row's stats are -inf (the log of an empty sum), and in padded mode the O
    /// and stats rows past seq_len_q are unspecified (the test overwrites both sides there). The
    /// gradient rows past the valid lengths are unspecified too until a GPU run says otherwise: the
    /// sources disagree (NVIDIA's test expects written zeros there, the XLA change that zeroes
    /// cuDNN SDPA's output buffers says cuDNN leaves them untouched; docs/cudnn.md#conventions),
    /// and the "observed:" line of every padded backward reports which.
    Conventions conventions() const override {
        Conventions c;
        c.masked_row_stats = -INFINITY;
        c.padded_rows_unspecified = true;
        c.padded_grad_rows_unspecified = true;
        return c;
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
                loaded = fmt::format("loaded cuDNN {} from {}", fe::detail::get_backend_version_string(), loaded_cudnn_path());
            } catch (const std::exception& e) {
                loaded = e.what();
            }
        }
        const cuda::Device& d = cuda::device();
        return fmt::format("{}: cuDNN frontend {}.{}.{}, built against cuDNN {}.{}.{}, {}, device: {}", name_,
                CUDNN_FRONTEND_MAJOR_VERSION, CUDNN_FRONTEND_MINOR_VERSION, CUDNN_FRONTEND_PATCH_VERSION, CUDNN_MAJOR,
                CUDNN_MINOR, CUDNN_PATCHLEVEL, loaded, d.ok ? cuda::describe(d.spec) : d.reason);
    }

    /// The mask the plan feeds cuDNN (caller-supplied-mask mode, cudnn_mapping.cpp): sdpabench's own
    /// generator, so the reference gets the exact mask without knowing cuDNN's Philox.
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(p); }

    /// Host bytes of a plan: its host copies of the strided inputs (staged for the upload) and of
    /// the guarded outputs (core/memory_estimate.hpp vendor_buffer_bytes), and with dropout the
    /// mask tensor staged for its upload (dropout_mask_geom: [B,H_q,S_q,S_kv] in the io dtype),
    /// freed after the upload. (The device copy, the same size, is not a host cost.)
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned) const override {
        std::vector<MemoryItem> items{{"cuDNN host staging of the strided inputs and guarded outputs", vendor_buffer_bytes(p)}};
        if (const auto m = cudnn::dropout_mask_geom(p))
            items.push_back({"cuDNN dropout mask staged on the host ([B,H_q,S_q,S_kv], io dtype)",
                static_cast<double>(m->span()) * static_cast<double>(size_of(m->type))});
        return items;
    }

    /// Device bytes of a plan: the device copies of the strided inputs and of the guarded outputs
    /// (vendor_buffer_bytes) and with dropout the mask; cuDNN's work space is known only once the
    /// graph is built (its allocation failing is out_of_device_memory, SKIPPED).
    std::vector<MemoryItem> device_memory(const Problem& p) const override {
        std::vector<MemoryItem> items{{"cuDNN device copies of the strided inputs and guarded outputs", vendor_buffer_bytes(p)}};
        if (const auto m = cudnn::dropout_mask_geom(p))
            items.push_back({"cuDNN dropout mask on the device ([B,H_q,S_q,S_kv], io dtype)",
                static_cast<double>(m->span()) * static_cast<double>(size_of(m->type))});
        return items;
    }

    std::uint64_t device_free_bytes() const override { return cuda::free_device_bytes(); }

    std::optional<Unsupported> support(const Problem& p) const override {
        // What cuDNN never takes first (f32 io, dMask): UNIMPLEMENTED on every machine, GPU or not.
        // Dropout (any p in [0, 1); p = 0 keeps the mask, all ones but for 32-bit draws of exactly 0
        // (core/dropout.hpp philox_keeps), with scale 1) is accepted here;
        // what cuDNN refuses with it (bottom-right alignment, left bounds) its validate() says.
        if (auto why = cudnn::cudnn_precheck(p)) return Unsupported{Status::unimplemented, *why};
        if (const cuda::Device& d = cuda::device(); !d.ok) return Unsupported{Status::skipped, d.reason};
        if (const std::string& err = load_cudnn(); !err.empty()) return Unsupported{Status::skipped, err};
        return std::nullopt;
    }

    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        try {
            if (!rt_) rt_ = std::make_unique<Runtime>();
            return std::make_unique<CudnnPlan>(p, in, *rt_, p.dropout ? dropout_mask(p) : nullptr, conventions());
        } catch (const BackendError&) {
            throw;
        } catch (const std::exception& e) {
            throw BackendError(Status::failed, fmt::format("cuDNN: {}", e.what()));
        }
    }

private:
    std::string name_;
    std::unique_ptr<Runtime> rt_;
};

}  // namespace

std::unique_ptr<Backend> make_cudnn_backend(std::string_view name) { return std::make_unique<CudnnBackend>(name); }

}  // namespace sdpa
