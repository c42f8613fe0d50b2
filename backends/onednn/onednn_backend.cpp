#include "backends/onednn/onednn_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_graph.hpp>

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

/// Host buffer with the bytes of one graph tensor.
struct Buffer {
    std::vector<std::byte> bytes;
    void* data() { return bytes.data(); }
};

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

/// The additive mask the graph consumes: the filled bias, or 0 / -inf for the causal rules.
std::vector<float> mask_values(const Problem& p, const SdpaInputs& in) {
    if (p.mask == Mask::bias) return in.bias.data;
    const auto& d = p.dims;
    std::vector<float> m(static_cast<std::size_t>(d.S_q * d.S_kv));
    for (std::int64_t i = 0; i < d.S_q; ++i)
        for (std::int64_t j = 0; j < d.S_kv; ++j)
            m[static_cast<std::size_t>(i * d.S_kv + j)] = visible(p, i, j) ? 0.f : -INFINITY;
    return m;
}

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

    std::optional<Unsupported> support(const Problem& p) const override {
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

    BackendRun run(const Problem& p, const SdpaInputs& in) override {
        try {
            return run_graph(p, in);
        } catch (const dnnl::error& e) {
            // Building, partitioning and compiling reject a graph (UNIMPLEMENTED); a failure
            // while executing a compiled partition is the kernel's (FAILED).
            const Status s = executing_ ? Status::failed : Status::unimplemented;
            throw BackendError(s, fmt::format("oneDNN {}: {} (status {})", executing_ ? "execute" : "rejected the graph",
                    e.what(), static_cast<int>(e.status)));
        }
    }

private:
    void ensure_engine() {
        if (engine_) return;
#ifdef SDPABENCH_ONEDNN_OCL_ICD
        // Intel's wheel runs CPU kernels through SYCL on its OpenCL CPU device; the wheel's
        // .icd file names an unresolved prefix, so point the ICD loader at the library.
        if (std::strlen(SDPABENCH_ONEDNN_OCL_ICD) > 0 && std::getenv("OCL_ICD_FILENAMES") == nullptr)
            setenv("OCL_ICD_FILENAMES", SDPABENCH_ONEDNN_OCL_ICD, 0);
#endif
        if (dnnl::engine::get_count(dnnl::engine::kind::cpu) == 0)
            throw BackendError(Status::failed,
                    "oneDNN sees no CPU device (SYCL runtime: is the OpenCL CPU runtime registered? "
                    "set OCL_ICD_FILENAMES to the wheel's libintelocl.so)");
        engine_ = std::make_unique<dnnl::engine>(dnnl::engine::kind::cpu, 0);
        stream_ = std::make_unique<dnnl::stream>(*engine_);
    }

    BackendRun run_graph(const Problem& p, const SdpaInputs& in) {
        ensure_engine();
        executing_ = false;
        using dnnl::graph::logical_tensor;
        onednn::SdpaGraph sg = onednn::build_sdpa_graph(p, dnnl::engine::kind::cpu);
        sg.graph.finalize();
        std::vector<dnnl::graph::partition> parts = sg.graph.get_partitions();

        // Host data for every external port.
        std::map<std::size_t, Buffer> buffers;  // logical tensor id -> bytes
        auto bind_input = [&](Port port, const std::vector<float>& values) {
            const auto& pt = sg.inputs.at(port);
            const DType dt = from_ldt(pt.lt.get_data_type());
            Buffer& b = buffers[pt.lt.get_id()];
            b.bytes.resize(count(pt.dims) * size_of(dt));
            encode(dt, values.data(), b.data(), count(pt.dims));
        };
        bind_input(Port::Q, in.Q.data);
        bind_input(Port::K, in.K.data);
        bind_input(Port::V, in.V.data);
        bind_input(Port::scale, {scale_tensor_value(p)});
        if (p.mask != Mask::none) bind_input(Port::mask, mask_values(p, in));
        if (p.dir == Dir::bwd) {
            bind_input(Port::O, in.O.data);
            bind_input(Port::dO, in.dO.data);
            bind_input(Port::stats, in.stats.data);
        }

        BackendRun run;
        run.notes.push_back(fmt::format("oneDNN graph: {} ops, {} partition(s)", sg.op_count, parts.size()));
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const auto& part = parts[i];
            if (!part.is_supported())
                throw BackendError(Status::unimplemented,
                        fmt::format("oneDNN: partition {} of {} ({} ops) is not supported by any backend",
                                i, parts.size(), part.get_ops_num()));
            std::vector<logical_tensor> ins = part.get_input_ports(), outs = part.get_output_ports();
            dnnl::graph::compiled_partition cp = part.compile(ins, outs, *engine_);
            std::vector<dnnl::graph::tensor> tin, tout;
            for (const auto& lt : ins) {
                auto it = buffers.find(lt.get_id());
                if (it == buffers.end())
                    throw BackendError(Status::failed, fmt::format("oneDNN: partition {} input {} has no producer", i, lt.get_id()));
                tin.emplace_back(lt, *engine_, it->second.data());
            }
            for (const auto& lt : outs) {
                const logical_tensor q = cp.query_logical_tensor(lt.get_id());
                Buffer& b = buffers[lt.get_id()];
                b.bytes.assign(q.get_mem_size(), std::byte{0});
                tout.emplace_back(q, *engine_, b.data());
            }
            executing_ = true;
            cp.execute(*stream_, tin, tout);
            stream_->wait();
            executing_ = false;
            run.notes.push_back(fmt::format("partition {}: {} ops, {} inputs, {} outputs", i,
                    part.get_ops_num(), ins.size(), outs.size()));
        }

        auto read = [&](Port port, std::array<std::int64_t, 4> dims4) {
            const auto& pt = sg.outputs.at(port);
            auto it = buffers.find(pt.lt.get_id());
            if (it == buffers.end())
                throw BackendError(Status::failed, fmt::format("oneDNN: no partition wrote output {}", pt.lt.get_id()));
            const DType dt = from_ldt(pt.lt.get_data_type());
            Tensor t(dims4, dt);
            decode(dt, it->second.data(), t.data.data(), t.size());
            return t;
        };
        const Dims& d = p.dims;
        if (p.dir == Dir::bwd) {
            run.out.dQ = read(Port::dQ, {d.B, d.H_q, d.S_q, d.D_qk});
            run.out.dK = read(Port::dK, {d.B, d.H_kv, d.S_kv, d.D_qk});
            run.out.dV = read(Port::dV, {d.B, d.H_kv, d.S_kv, d.D_v});
        } else {
            run.out.O = read(Port::O, {d.B, d.H_q, d.S_q, d.D_v});
            if (p.dir == Dir::fwd_t) run.out.stats = read(Port::stats, {d.B, d.H_q, d.S_q, 1});
        }
        return run;
    }

    bool executing_ = false;  ///< inside compiled_partition::execute (error attribution)
    std::unique_ptr<dnnl::engine> engine_;
    std::unique_ptr<dnnl::stream> stream_;
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<OnednnBackend>(); }

}  // namespace sdpa
