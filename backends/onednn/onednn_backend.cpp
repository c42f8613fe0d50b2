#include "backends/onednn/onednn_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_graph.hpp>

#include "backends/guarded_buffer.hpp"
#include "backends/onednn/onednn_graph.hpp"

namespace sdpa {

namespace {

using onednn::Port;

std::string_view isa_name(dnnl::cpu_isa isa) {
    switch (isa) {
        case dnnl::cpu_isa::sse41: return "sse41";
        case dnnl::cpu_isa::avx: return "avx";
        case dnnl::cpu_isa::avx2: return "avx2";
        case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
        case dnnl::cpu_isa::avx2_vnni_2: return "avx2_vnni_2";
        case dnnl::cpu_isa::avx512_core: return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
        case dnnl::cpu_isa::avx10_1_512: return "avx10_1_512 (avx512_core_fp16)";
        case dnnl::cpu_isa::avx10_1_512_amx: return "avx10_1_512_amx (avx512_core_amx)";
        case dnnl::cpu_isa::avx10_1_512_amx_fp16: return "avx10_1_512_amx_fp16";
        case dnnl::cpu_isa::avx10_2_512: return "avx10_2_512";
        case dnnl::cpu_isa::avx10_2_512_amx_2: return "avx10_2_512_amx_2";
        default: return "default";
    }
}

/// True when every feature bit of `need` is in `have` (oneDNN's ISA values nest as bit sets).
bool has_isa(dnnl::cpu_isa have, dnnl::cpu_isa need) {
    const auto h = static_cast<unsigned>(have), n = static_cast<unsigned>(need);
    return (h & n) == n;
}

std::string_view runtime_name(unsigned rt) {
    switch (rt) {
        case DNNL_RUNTIME_SEQ: return "SEQ";
        case DNNL_RUNTIME_OMP: return "OpenMP";
        case DNNL_RUNTIME_TBB: return "TBB";
        case DNNL_RUNTIME_THREADPOOL: return "THREADPOOL";
        case DNNL_RUNTIME_SYCL: return "SYCL";
        default: return "unknown";
    }
}

std::size_t count(const std::vector<std::int64_t>& dims) {
    std::size_t n = 1;
    for (auto d : dims) n *= static_cast<std::size_t>(d);
    return n;
}

DType from_ldt(dnnl::graph::logical_tensor::data_type dt) {
    using ldt = dnnl::graph::logical_tensor::data_type;
    if (dt == ldt::bf16) return DType::bf16;
    if (dt == ldt::f16) return DType::f16;
    return DType::f32;
}

/// The additive mask the graph consumes, shaped by onednn::mask_dims (batch, flattened heads,
/// S_q, S_kv): the filled bias (0 without one) where visible(p, b, i, j), -inf elsewhere (causal,
/// window and padding all become explicit -inf entries).
std::vector<float> mask_values(const Problem& p, const SdpaInputs& in) {
    const auto& d = p.dims;
    const std::vector<std::int64_t> md = onednn::mask_dims(p);
    const std::int64_t mb = md.front();
    std::int64_t mh = 1;
    for (std::size_t k = 1; k + 2 < md.size(); ++k) mh *= md[k];
    const std::int64_t mq = md[md.size() - 2];  // S_q, or 1 for a one-row (key padding) bias
    std::vector<float> m(static_cast<std::size_t>(mb * mh * mq * d.S_kv));
    std::size_t at = 0;
    for (std::int64_t b = 0; b < mb; ++b)
        for (std::int64_t h = 0; h < mh; ++h)
            for (std::int64_t i = 0; i < mq; ++i)
                for (std::int64_t j = 0; j < d.S_kv; ++j, ++at) {
                    float v = 0.f;
                    if (p.mask == Mask::bias) v = in.bias.data[in.bias.broadcast_offset(b, h, i, j)];
                    m[at] = visible(p, b, i, j) ? v : -INFINITY;
                }
    return m;
}

/// The engine and stream, created once per backend on first use.
struct Runtime {
    dnnl::engine engine;
    dnnl::stream stream;
};

/// Compiled partitions of one case with every buffer bound: inputs and intermediates in plain
/// host buffers, graph outputs in guarded buffers.
class OnednnPlan final : public Plan {
public:
    OnednnPlan(const Problem& p, const SdpaInputs& in, Runtime& rt) : p_(p), rt_(rt) {
        const auto t0 = std::chrono::steady_clock::now();
        try {
            build(in);
        } catch (const dnnl::error& e) {
            throw BackendError(Status::unimplemented, fmt::format("oneDNN rejected the graph: {} (status {})",
                    e.what(), static_cast<int>(e.status)));
        }
        compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }

    void execute() override {
        try {
            for (auto& step : steps_) step.cp.execute(rt_.stream, step.ins, step.outs);
            rt_.stream.wait();
        } catch (const dnnl::error& e) {
            throw BackendError(Status::failed,
                    fmt::format("oneDNN execute: {} (status {})", e.what(), static_cast<int>(e.status)));
        }
    }

    void poison_outputs() override {
        for (auto& [port, o] : outputs_) o.buffer.poison();
    }

    SdpaOutputs read_outputs() override {
        SdpaOutputs out;
        const Dims& d = p_.dims;
        auto read = [&](Port port, Output which, Tensor& dst, std::array<std::int64_t, 4> dims4) {
            const auto it = outputs_.find(port);
            if (it == outputs_.end()) return;
            const GraphOutput& o = it->second;
            dst = Tensor(dims4, o.dt);
            decode(o.dt, o.buffer.data(), dst.data.data(), std::min(dst.size(), o.buffer.size() / size_of(o.dt)));
            out.integrity_of(which) = o.buffer.check();
        };
        read(Port::O, Output::O, out.O, {d.B, d.H_q, d.S_q, d.D_v});
        read(Port::stats, Output::stats, out.stats, {d.B, d.H_q, d.S_q, 1});
        read(Port::dQ, Output::dQ, out.dQ, {d.B, d.H_q, d.S_q, d.D_qk});
        read(Port::dK, Output::dK, out.dK, {d.B, d.H_kv, d.S_kv, d.D_qk});
        read(Port::dV, Output::dV, out.dV, {d.B, d.H_kv, d.S_kv, d.D_v});
        return out;
    }

    std::vector<std::string> notes() const override { return notes_; }
    double compile_ms() const override { return compile_ms_; }

private:
    struct Step {
        dnnl::graph::compiled_partition cp;
        std::vector<dnnl::graph::tensor> ins, outs;
    };
    struct GraphOutput {
        GuardedBuffer buffer;
        DType dt;
    };

    void build(const SdpaInputs& in) {
        using dnnl::graph::logical_tensor;
        onednn::SdpaGraph sg = onednn::build_sdpa_graph(p_, dnnl::engine::kind::cpu);
        sg.graph.finalize();
        const std::vector<dnnl::graph::partition> parts = sg.graph.get_partitions();

        auto bind_input = [&](Port port, const std::vector<float>& values) {
            const auto& pt = sg.inputs.at(port);
            const DType dt = from_ldt(pt.lt.get_data_type());
            auto& b = buffers_[pt.lt.get_id()];
            b.resize(count(pt.dims) * size_of(dt));
            encode(dt, values.data(), b.data(), count(pt.dims));
        };
        bind_input(Port::Q, in.Q.data);
        bind_input(Port::K, in.K.data);
        bind_input(Port::V, in.V.data);
        bind_input(Port::scale, {scale_tensor_value(p_)});
        if (onednn::has_mask_tensor(p_)) bind_input(Port::mask, mask_values(p_, in));
        if (p_.dir == Dir::bwd) {
            bind_input(Port::O, in.O.data);
            bind_input(Port::dO, in.dO.data);
            bind_input(Port::stats, in.stats.data);
        }
        std::map<std::size_t, Port> output_ids;
        for (const auto& [port, pt] : sg.outputs) output_ids[pt.lt.get_id()] = port;

        notes_.push_back(fmt::format("oneDNN graph: {} ops, {} partition(s)", sg.op_count, parts.size()));
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const auto& part = parts[i];
            if (!part.is_supported())
                throw BackendError(Status::unimplemented,
                        fmt::format("oneDNN: partition {} of {} ({} ops) is not supported by any backend", i,
                                parts.size(), part.get_ops_num()));
            std::vector<logical_tensor> ins = part.get_input_ports(), outs = part.get_output_ports();
            Step step{part.compile(ins, outs, rt_.engine), {}, {}};
            for (const auto& lt : ins) {
                auto it = buffers_.find(lt.get_id());
                if (it == buffers_.end())
                    throw BackendError(Status::failed, fmt::format("oneDNN: partition {} input {} has no producer", i, lt.get_id()));
                step.ins.emplace_back(lt, rt_.engine, it->second.data());
            }
            for (const auto& lt : outs) {
                const logical_tensor q = step.cp.query_logical_tensor(lt.get_id());
                void* handle = nullptr;
                if (const auto port = output_ids.find(lt.get_id()); port != output_ids.end()) {
                    const DType dt = from_ldt(q.get_data_type());
                    auto [it, _] = outputs_.try_emplace(port->second, GraphOutput{GuardedBuffer(q.get_mem_size(), size_of(dt)), dt});
                    handle = it->second.buffer.data();
                } else {
                    auto& b = buffers_[lt.get_id()];
                    b.assign(q.get_mem_size(), std::byte{0});
                    handle = b.data();
                }
                step.outs.emplace_back(q, rt_.engine, handle);
            }
            notes_.push_back(fmt::format("partition {}: {} ops, {} inputs, {} outputs", i, part.get_ops_num(),
                    ins.size(), outs.size()));
            steps_.push_back(std::move(step));
        }
        for (const auto& [port, pt] : sg.outputs)
            if (!outputs_.count(port))
                throw BackendError(Status::failed, fmt::format("oneDNN: no partition produces output {}", pt.lt.get_id()));
    }

    Problem p_;
    Runtime& rt_;
    std::map<std::size_t, std::vector<std::byte>> buffers_;  ///< inputs and intermediates by id
    std::map<Port, GraphOutput> outputs_;
    std::vector<Step> steps_;
    std::vector<std::string> notes_;
    double compile_ms_ = 0;
};

class OnednnBackend final : public Backend {
public:
    std::string_view name() const override { return "onednn"; }

    std::string version() const override {
        const dnnl_version_t* v = dnnl_version();
        return fmt::format("onednn: oneDNN v{}.{}.{} (commit {}), CPU runtime {}, ISA {}", v->major,
                v->minor, v->patch, v->hash, runtime_name(v->cpu_runtime),
                isa_name(dnnl::get_effective_cpu_isa()));
    }

    Conventions conventions() const override { return Conventions{0.0f}; }

    /// Its io-dtype copies of the inputs and guarded outputs, the explicit mask it builds (f32
    /// on the host plus the graph tensor), and the intermediates of a non-fused graph: S_q x S_kv
    /// f32 per head and batch, 2 for the forward (scores, P), 3 for the backward (P, dP, dS).
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned) const override {
        const Dims& d = p.dims;
        const bool bwd = p.dir == Dir::bwd || p.dir == Dir::fwd_bwd;
        const double io = static_cast<double>(size_of(p.dt));
        const double nq = double(d.B) * d.H_q * d.S_q * d.D_qk, nk = double(d.B) * d.H_kv * d.S_kv * d.D_qk,
                     nv = double(d.B) * d.H_kv * d.S_kv * d.D_v, no = double(d.B) * d.H_q * d.S_q * d.D_v,
                     ns = double(d.B) * d.H_q * d.S_q;
        const double in_copies = io * (nq + nk + nv) + (bwd ? io * 2 * no + 4 * ns : 0);
        const double out_bufs = bwd ? io * (nq + nk + nv) : io * no + 4 * ns;
        std::vector<MemoryItem> items{{"oneDNN input and guarded output buffers", in_copies + out_bufs}};
        double mask = 0;
        for (const auto m : onednn::mask_dims(p)) mask = (mask == 0 ? 1 : mask) * double(m);
        if (mask > 0)
            items.push_back({"oneDNN explicit mask (f32 on the host plus the graph tensor)",
                mask * (4 + static_cast<double>(size_of(mask_dtype(p))))});
        items.push_back({"oneDNN intermediates of a non-fused graph (S_q x S_kv f32 per head)",
            (bwd ? 3 : 2) * 4 * double(d.B) * d.H_q * d.S_q * d.S_kv});
        return items;
    }

    std::optional<Unsupported> support(const Problem& p) const override {
        if (p.layout != Layout::bhsd)
            return Unsupported{Status::unimplemented, "--layout=bshd is not mapped to oneDNN logical tensor strides yet"};
        const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
        // oneDNN's CPU kernels need AVX-512 (bf16: avx512_core, emulated below avx512_core_bf16)
        // or AVX2-VNNI-2 for the 16-bit types; f16 needs AVX512-FP16 (avx10_1_512) or AVX2-VNNI-2.
        if (p.dt == DType::bf16 && !has_isa(isa, dnnl::cpu_isa::avx512_core) &&
                !has_isa(isa, dnnl::cpu_isa::avx2_vnni_2))
            return Unsupported{Status::skipped, fmt::format("bf16 needs avx512_core or avx2_vnni_2; this CPU: {}", isa_name(isa))};
        if (p.dt == DType::f16 && !has_isa(isa, dnnl::cpu_isa::avx10_1_512) &&
                !has_isa(isa, dnnl::cpu_isa::avx2_vnni_2))
            return Unsupported{Status::skipped, fmt::format("f16 needs avx512_core_fp16 or avx2_vnni_2; this CPU: {}", isa_name(isa))};
        return std::nullopt;
    }

    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        ensure_runtime();
        return std::make_unique<OnednnPlan>(p, in, *rt_);
    }

private:
    void ensure_runtime() {
        if (rt_) return;
#ifdef SDPABENCH_ONEDNN_OCL_ICD
        // Intel's wheel runs CPU kernels through SYCL on its OpenCL CPU device; the wheel's
        // .icd file names an unresolved prefix, so point the ICD loader at the library.
        if (std::strlen(SDPABENCH_ONEDNN_OCL_ICD) > 0 && std::getenv("OCL_ICD_FILENAMES") == nullptr)
            setenv("OCL_ICD_FILENAMES", SDPABENCH_ONEDNN_OCL_ICD, 0);
#endif
        try {
            if (dnnl::engine::get_count(dnnl::engine::kind::cpu) == 0)
                throw BackendError(Status::failed,
                        "oneDNN sees no CPU device (SYCL runtime: is the OpenCL CPU runtime registered? "
                        "set OCL_ICD_FILENAMES to the wheel's libintelocl.so)");
            dnnl::engine eng(dnnl::engine::kind::cpu, 0);
            rt_ = std::make_unique<Runtime>(Runtime{eng, dnnl::stream(eng)});
        } catch (const dnnl::error& e) {
            throw BackendError(Status::failed, fmt::format("oneDNN: cannot create the CPU engine: {}", e.what()));
        }
    }

    std::unique_ptr<Runtime> rt_;
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<OnednnBackend>(); }

}  // namespace sdpa
