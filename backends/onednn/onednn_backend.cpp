#include "backends/onednn/onednn_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_graph.hpp>

#include "backends/guarded_buffer.hpp"
#include "backends/strided_buffer.hpp"
#include "core/geometry.hpp"
#include "core/host_cpu.hpp"
#include "backends/onednn/onednn_graph.hpp"
#include "backends/onednn/onednn_verbose.hpp"

namespace sdpa {

namespace {

using onednn::Port;

// core/cpu_isa.hpp spells oneDNN's levels with oneDNN's own values: checked here, where both are known.
static_assert(static_cast<unsigned>(CpuIsa::none) == static_cast<unsigned>(dnnl::cpu_isa::isa_default));
static_assert(static_cast<unsigned>(CpuIsa::sse41) == static_cast<unsigned>(dnnl::cpu_isa::sse41));
static_assert(static_cast<unsigned>(CpuIsa::avx) == static_cast<unsigned>(dnnl::cpu_isa::avx));
static_assert(static_cast<unsigned>(CpuIsa::avx2) == static_cast<unsigned>(dnnl::cpu_isa::avx2));
static_assert(static_cast<unsigned>(CpuIsa::avx2_vnni) == static_cast<unsigned>(dnnl::cpu_isa::avx2_vnni));
static_assert(static_cast<unsigned>(CpuIsa::avx2_vnni_2) == static_cast<unsigned>(dnnl::cpu_isa::avx2_vnni_2));
static_assert(static_cast<unsigned>(CpuIsa::avx512_core) == static_cast<unsigned>(dnnl::cpu_isa::avx512_core));
static_assert(static_cast<unsigned>(CpuIsa::avx512_core_vnni) == static_cast<unsigned>(dnnl::cpu_isa::avx512_core_vnni));
static_assert(static_cast<unsigned>(CpuIsa::avx512_core_bf16) == static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16));
static_assert(static_cast<unsigned>(CpuIsa::avx512_core_fp16) == static_cast<unsigned>(dnnl::cpu_isa::avx512_core_fp16));
static_assert(static_cast<unsigned>(CpuIsa::avx512_core_amx) == static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx));
static_assert(static_cast<unsigned>(CpuIsa::avx512_core_amx_fp16) ==
        static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx_fp16));
static_assert(static_cast<unsigned>(CpuIsa::avx10_2_512) == static_cast<unsigned>(dnnl::cpu_isa::avx10_2_512));
static_assert(static_cast<unsigned>(CpuIsa::avx10_2_512_amx_2) == static_cast<unsigned>(dnnl::cpu_isa::avx10_2_512_amx_2));

/// oneDNN's level as core/cpu_isa.hpp has it (the same value).
CpuIsa to_cpu_isa(dnnl::cpu_isa isa) { return static_cast<CpuIsa>(static_cast<std::uint32_t>(isa)); }

/// A level's name, with oneDNN's avx10 alias where it has one ("avx512_core_amx (avx10_1_512_amx)").
std::string isa_name(dnnl::cpu_isa isa) {
    const CpuIsa level = to_cpu_isa(isa);
    const std::string_view alias = enum_name(kCpuIsaAliases, level);
    return alias == "?" ? fmt::format("{}", level) : fmt::format("{} ({})", level, alias);
}

/// True when every feature bit of `need` is in `have` (oneDNN's ISA values nest as bit sets).
bool has_isa(dnnl::cpu_isa have, dnnl::cpu_isa need) { return isa_includes(to_cpu_isa(have), to_cpu_isa(need)); }

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

/// The additive mask the graph consumes, shaped by onednn::mask_dims (batch, heads flattened
/// from the 5-D GQA form, S_q or 1, S_kv): merged_mask_values (backends/strided_buffer.hpp).
std::vector<float> mask_values(const Problem& p, const SdpaInputs& in) {
    const std::vector<std::int64_t> md = onednn::mask_dims(p);
    std::int64_t mh = 1;
    for (std::size_t k = 1; k + 2 < md.size(); ++k) mh *= md[k];
    return merged_mask_values(p, in.bias, {md.front(), mh, md[md.size() - 2], md.back()});
}

/// The name of a logical tensor's data type, as sdpabench spells types ("bf16", "s64", ...).
std::string_view ldt_name(dnnl::graph::logical_tensor::data_type dt) {
    using ldt = dnnl::graph::logical_tensor::data_type;
    switch (dt) {
        case ldt::f32: return "f32";
        case ldt::bf16: return "bf16";
        case ldt::f16: return "f16";
        case ldt::s32: return "s32";
        case ldt::s64: return "s64";
        case ldt::u8: return "u8";
        case ldt::s8: return "s8";
        case ldt::boolean: return "boolean";
        case ldt::f8_e4m3: return "e4m3";
        case ldt::f8_e5m2: return "e5m2";
        default: return "undef";
    }
}

/// A port's logical tensor as bound: rank 0 for a host scalar.
BoundTensor bound(GraphPort port, const dnnl::graph::logical_tensor& lt) {
    const bool scalar = lt.get_property_type() == dnnl::graph::logical_tensor::property_type::host_scalar;
    return {std::string(port_name(port)), std::string(ldt_name(lt.get_data_type())),
        scalar ? std::vector<std::int64_t>{} : lt.get_dims(), scalar ? std::vector<std::int64_t>{} : lt.get_strides()};
}

/// True when the user asked oneDNN for verbose output (ONEDNN_VERBOSE or its old name
/// DNNL_VERBOSE set to anything but "0" or "none").
bool user_verbose() {
    for (const char* name : {"ONEDNN_VERBOSE", "DNNL_VERBOSE"})
        if (const char* v = std::getenv(name); v && *v && std::strcmp(v, "0") != 0 && std::strcmp(v, "none") != 0)
            return true;
    return false;
}

/// A span in which oneDNN's verbose output is captured (backends/onednn/onednn_verbose.hpp) to
/// learn what it compiled or ran: verbosity `level` is on inside (1: executions; 2: creation and
/// compilation too), off after. When the user set ONEDNN_VERBOSE, their setting stands and what
/// was captured is written on to stdout, as they asked.
class VerboseWindow {
public:
    explicit VerboseWindow(int level) {
        if (!user_) dnnl_set_verbose(level);
    }
    ~VerboseWindow() { finish(); }
    VerboseWindow(const VerboseWindow&) = delete;
    VerboseWindow& operator=(const VerboseWindow&) = delete;
    /// Ends the span; what oneDNN printed in it.
    std::string finish() {
        if (done_) return {};
        done_ = true;
        std::string text = capture_.finish();
        if (user_) {
            std::fwrite(text.data(), 1, text.size(), stdout);
            std::fflush(stdout);
        } else {
            dnnl_set_verbose(0);
        }
        return text;
    }

private:
    bool user_ = user_verbose();
    bool done_ = false;
    onednn::StdoutCapture capture_;
};

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

    /// The first run is profiled: oneDNN's verbose lines of it name each primitive's
    /// implementation and time (implementation()). The timing loop's warm-up is that run.
    void execute() override {
        if (profiled_) return run();
        profiled_ = true;
        VerboseWindow w(1);
        run();
        ran_ = onednn::parse_verbose(w.finish());
    }

    Implementation implementation() const override {
        // The partitions of the profiled run, else those of the compilation (whose primitives are
        // listed only when oneDNN did not take the compiled partition from its cache).
        const auto& parts = !ran_.empty() ? ran_ : compiled_;
        Implementation im;
        for (std::size_t k = 0; k < parts.size(); ++k) {
            im.name += (k ? "+" : "") + parts[k].kernel;
            const std::string where = parts.size() > 1 && k < order_.size() ? fmt::format("partition {}", order_[k]) : "";
            for (ImplPart prim : parts[k].primitives) {
                prim.where = where;
                im.parts.push_back(std::move(prim));
            }
        }
        return im;
    }

    std::vector<BoundTensor> bound_tensors() const override { return bound_; }

    std::vector<InputBuffer> input_buffers() const override {
        std::vector<InputBuffer> out;
        for (const auto& [role, id] : input_ids_) out.push_back({role, buffers_.at(id)});
        return out;
    }

    void poison_outputs() override {
        for (auto& [port, o] : outputs_) o.buffer.poison();
    }

    SdpaOutputs read_outputs() override {
        SdpaOutputs out;
        for (const auto& [port, o] : outputs_) store_output(out, o.buffer);
        return out;
    }

    std::vector<std::string> notes() const override { return notes_; }
    double compile_ms() const override { return compile_ms_; }
    std::optional<std::size_t> partitions() const override { return partitions_; }

private:
    void run() {
        try {
            for (auto& step : steps_) step.cp.execute(rt_.stream, step.ins, step.outs);
            rt_.stream.wait();
        } catch (const dnnl::error& e) {
            throw BackendError(Status::failed,
                    fmt::format("oneDNN execute: {} (status {})", e.what(), static_cast<int>(e.status)));
        }
    }

    struct Step {
        dnnl::graph::compiled_partition cp;
        std::vector<dnnl::graph::tensor> ins, outs;
    };
    struct GraphOutput {
        GuardedBuffer buffer;
    };

    /// What the compilation of the partitions shares: the geometry, the graph outputs by logical
    /// tensor id, the buffer each produced id is written to, the outputs as bound.
    struct Binding {
        Geometry geo;
        std::map<std::size_t, Port> output_ids;
        std::map<std::size_t, void*> made;  ///< logical tensor id -> the buffer a partition writes it to
        std::map<Port, BoundTensor> bound_outputs;
    };

    void build(const SdpaInputs& in) {
        onednn::SdpaGraph sg = onednn::build_sdpa_graph(p_, dnnl::engine::kind::cpu);
        sg.graph.finalize();
        const std::vector<dnnl::graph::partition> parts = sg.graph.get_partitions();
        partitions_ = parts.size();

        Binding bind{geometry(p_), {}, {}, {}};
        bind_inputs(sg, bind.geo, in);
        for (const auto& [port, pt] : sg.outputs) bind.output_ids[pt.lt.get_id()] = port;

        notes_.push_back(fmt::format("oneDNN graph: {} ops, {} partition(s)", sg.op_count, parts.size()));
        const std::vector<std::size_t> order = run_order(parts);
        for (const auto& [port, pt] : sg.inputs) bound_.push_back(bound(port, pt.lt));
        order_ = order;
        VerboseWindow compiling(2);  // the kernel oneDNN picks for each partition, before it runs
        for (const std::size_t i : order) steps_.push_back(compile_step(parts, i, bind));
        compiled_ = onednn::parse_verbose(compiling.finish());
        for (auto& [port, t] : bind.bound_outputs) bound_.push_back(std::move(t));  // in port order, whatever
                                                                                    // order oneDNN lists them in
        for (const auto& [port, pt] : sg.outputs)
            if (!outputs_.count(port))
                throw BackendError(Status::failed, fmt::format("oneDNN: no partition produces output {}", pt.lt.get_id()));
    }

    /// Inputs: a role's host tensor packed at its geometry's strides (gaps hold the canary);
    /// the scale and a merged mask are dense tensors the graph alone has; the dropout and
    /// implicit-causal scalars are host scalars.
    void bind_inputs(const onednn::SdpaGraph& sg, const Geometry& geo, const SdpaInputs& in) {
        auto bind_values = [&](Port port, const std::vector<float>& values) {
            const auto& pt = sg.inputs.at(port);
            const DType dt = from_ldt(pt.lt.get_data_type());
            auto& b = buffers_[pt.lt.get_id()];
            b.resize(count(pt.dims) * size_of(dt));
            encode(dt, values.data(), b.data(), count(pt.dims));
        };
        for (const auto& [port, pt] : sg.inputs) {
            // At least the bytes oneDNN says the strided tensor needs (it may round up past the span).
            if (const auto role = port_role(p_, port)) {
                const TensorGeom& t = geo.at(*role);
                buffers_[pt.lt.get_id()] = pack_input(t, *in.of(*role),
                        static_cast<std::int64_t>(pt.lt.get_mem_size() / size_of(t.type)));
                input_ids_.emplace_back(*role, pt.lt.get_id());
            }
            else if (port == Port::scale) bind_values(port, {scale_tensor_value(p_)});
            else if (port == Port::dropout_seed || port == Port::dropout_offset || port == Port::dropout_p) {
                // Host scalars: s64 seed and offset, f32 probability (oneDNN's Dropout op).
                auto& b = buffers_[pt.lt.get_id()];
                const Dropout& d = *p_.dropout;
                const auto s64 = static_cast<std::int64_t>(port == Port::dropout_seed ? d.seed : d.offset);
                b.resize(sizeof s64);
                if (port == Port::dropout_p) std::memcpy(b.data(), &d.p, sizeof d.p);
                else std::memcpy(b.data(), &s64, sizeof s64);
            }
            else if (port == Port::mask_fill) bind_values(port, {-std::numeric_limits<float>::infinity()});
            else if (port == Port::causal_s_kv || port == Port::causal_s_q) {
                // s32 host scalars of the implicit causal_br mask: row + S_kv - S_q >= column.
                const auto v = static_cast<std::int32_t>(port == Port::causal_s_kv ? p_.dims.S_kv : p_.dims.S_q);
                auto& b = buffers_[pt.lt.get_id()];
                b.resize(sizeof v);
                std::memcpy(b.data(), &v, sizeof v);
            }
            else bind_values(port, mask_values(p_, in));
        }
    }

    /// Run order: a partition after every partition that produces one of its inputs (the bound
    /// inputs are there from the start). oneDNN's list need not be in that order (--random found
    /// one: --dir=bwd --mask=bias --dmask=true --dropout=0:1:1 b1hq1sq16d16, whose partition 5
    /// reads an output of a later one). The partitions no order places come last, to fail in
    /// compile_step naming their input.
    std::vector<std::size_t> run_order(const std::vector<dnnl::graph::partition>& parts) const {
        std::vector<std::size_t> order;
        std::set<std::size_t> produced;
        std::vector<bool> placed(parts.size(), false);
        for (bool progress = true; progress && order.size() < parts.size();) {
            progress = false;
            for (std::size_t i = 0; i < parts.size(); ++i) {
                if (placed[i]) continue;
                const auto ins = parts[i].get_input_ports();
                if (!std::all_of(ins.begin(), ins.end(), [&](const dnnl::graph::logical_tensor& lt) {
                        return buffers_.count(lt.get_id()) > 0 || produced.count(lt.get_id()) > 0;
                    }))
                    continue;
                placed[i] = progress = true;
                order.push_back(i);
                for (const auto& lt : parts[i].get_output_ports()) produced.insert(lt.get_id());
            }
        }
        for (std::size_t i = 0; i < parts.size(); ++i)  // what is left fails below, naming its input
            if (!placed[i]) order.push_back(i);
        return order;
    }

    /// Partition `i` compiled with every input and output bound: UNIMPLEMENTED when no backend of
    /// oneDNN supports it, FAILED for an input nothing produced.
    Step compile_step(const std::vector<dnnl::graph::partition>& parts, std::size_t i, Binding& bind) {
        using dnnl::graph::logical_tensor;
        const auto& part = parts[i];
        if (!part.is_supported())
            throw BackendError(Status::unimplemented,
                    fmt::format("oneDNN: partition {} of {} ({} ops) is not supported by any backend", i,
                            parts.size(), part.get_ops_num()));
        std::vector<logical_tensor> ins = part.get_input_ports(), outs = part.get_output_ports();
        Step step{part.compile(ins, outs, rt_.engine), {}, {}};
        for (const auto& lt : ins) {
            auto it = buffers_.find(lt.get_id());
            // A graph output that another partition reads (dMask's dS, read by the dQ/dK matmuls).
            if (it == buffers_.end() && bind.made.count(lt.get_id()) > 0 &&
                    lt.get_property_type() != logical_tensor::property_type::host_scalar) {
                step.ins.emplace_back(lt, rt_.engine, bind.made.at(lt.get_id()));
                continue;
            }
            if (it == buffers_.end())
                throw BackendError(Status::failed, fmt::format("oneDNN: partition {} input {} has no producer{}", i,
                        lt.get_id(), partitions_io(parts)));
            if (lt.get_property_type() == logical_tensor::property_type::host_scalar)
                step.ins.push_back(dnnl::graph::tensor::make_scalar_tensor(lt, it->second.data()));
            else
                step.ins.emplace_back(lt, rt_.engine, it->second.data());
        }
        for (const auto& lt : outs) bind_output(step, lt, bind);
        notes_.push_back(fmt::format("partition {}: {} ops, {} inputs, {} outputs", i, part.get_ops_num(),
                ins.size(), outs.size()));
        return step;
    }

    /// Binds output `lt` of `step`'s compiled partition: a graph output to its guarded buffer at
    /// the geometry's strides (UNIMPLEMENTED when oneDNN would write other strides), an
    /// intermediate to a zeroed host buffer.
    void bind_output(Step& step, const dnnl::graph::logical_tensor& lt, Binding& bind) {
        const dnnl::graph::logical_tensor q = step.cp.query_logical_tensor(lt.get_id());
        void* handle = nullptr;
        const auto port = bind.output_ids.find(lt.get_id());
        if (port != bind.output_ids.end()) {
            const TensorGeom& want = bind.geo.at(*port_role(p_, port->second));
            const GraphView v = graph_view(p_, want);
            if (q.get_strides() != v.strides)
                throw BackendError(Status::unimplemented,
                        fmt::format("oneDNN would write {} with strides [{}] instead of the requested [{}]",
                                want.role, fmt::join(q.get_strides(), ","), fmt::join(v.strides, ",")));
            // The bytes oneDNN asks for may exceed the span: the excess is checked as gap.
            const auto need = static_cast<std::int64_t>((q.get_mem_size() + size_of(want.type) - 1) / size_of(want.type));
            auto [it, _] = outputs_.try_emplace(port->second, GraphOutput{GuardedBuffer(want, need)});
            handle = it->second.buffer.data();
        } else {
            auto& b = buffers_[lt.get_id()];
            b.assign(q.get_mem_size(), std::byte{0});
            handle = b.data();
        }
        bind.made[lt.get_id()] = handle;
        step.outs.emplace_back(q, rt_.engine, handle);
        if (port != bind.output_ids.end()) bind.bound_outputs.emplace(port->second, bound(port->second, q));
    }

    /// "; partition K (N ops, ids ...): [inputs] -> [outputs]" for every partition: the graph as
    /// split, for the message of an input nothing produces.
    static std::string partitions_io(const std::vector<dnnl::graph::partition>& parts) {
        std::string text;
        for (std::size_t k = 0; k < parts.size(); ++k) {
            std::vector<std::size_t> a, b;
            for (const auto& x : parts[k].get_input_ports()) a.push_back(x.get_id());
            for (const auto& x : parts[k].get_output_ports()) b.push_back(x.get_id());
            text += fmt::format("; partition {} ({} ops, ids {}): [{}] -> [{}]", k, parts[k].get_ops_num(),
                    fmt::join(parts[k].get_ops(), ","), fmt::join(a, ","), fmt::join(b, ","));
        }
        return text;
    }

    Problem p_;
    Runtime& rt_;
    std::map<std::size_t, std::vector<std::byte>> buffers_;  ///< inputs and intermediates by id
    std::vector<std::pair<Role, std::size_t>> input_ids_;     ///< the role inputs' buffers: role, id
    std::map<Port, GraphOutput> outputs_;
    std::vector<Step> steps_;
    std::vector<std::string> notes_;
    std::size_t partitions_ = 0;
    double compile_ms_ = 0;
    std::vector<std::size_t> order_;                  ///< partitions in run (and compile) order
    std::vector<onednn::VerbosePartition> compiled_;  ///< what the compilation's verbose lines named
    std::vector<onednn::VerbosePartition> ran_;       ///< what the profiled first run's lines named
    bool profiled_ = false;
    std::vector<BoundTensor> bound_;                  ///< inputs, then outputs as compiled, in port order
};

class OnednnBackend final : public Backend {
public:
    explicit OnednnBackend(std::string_view name) : name_(name) {}
    std::string_view name() const override { return name_; }

    std::string version() const override {
        const dnnl_version_t* v = dnnl_version();
        return fmt::format("{}: oneDNN v{} (commit {}), CPU runtime {}, ISA {}", name_, library_version(), v->hash,
                runtime_name(v->cpu_runtime), isa_name(dnnl::get_effective_cpu_isa()));
    }

    std::string library_version() const override {
        const dnnl_version_t* v = dnnl_version();
        return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
    }

    Conventions conventions() const override { return Conventions{0.0f}; }
    bool partitions_graphs() const override { return true; }

    bool caps_cpu_isa() const override { return true; }

    /// dnnl::set_max_cpu_isa: oneDNN takes it only before its first ISA query or kernel.
    std::string cap_cpu_isa(CpuIsa level) override {
        const auto st = dnnl_set_max_cpu_isa(static_cast<dnnl_cpu_isa_t>(static_cast<std::uint32_t>(level)));
        if (st == dnnl_success) return "";
        return fmt::format("oneDNN refused dnnl_set_max_cpu_isa({}) (status {}): it fixes its ISA at its first ISA query or "
                           "kernel, and this process already made one", level, static_cast<int>(st));
    }

    std::optional<CpuIsa> cpu_isa() const override { return to_cpu_isa(dnnl::get_effective_cpu_isa()); }

    /// The SYCL CPU runtime of Intel's wheels runs oneDNN's kernels on TBB (libdnnl needs
    /// libtbb.so.12): its max_concurrency is what they may use. Read through the library oneDNN
    /// loaded, without TBB's headers (tbb::detail::r1::max_concurrency, the entry point of
    /// tbb::this_task_arena::max_concurrency in oneTBB's ABI 12); the process's CPUs when that
    /// library or symbol is absent.
    Threading threading() const override {
        const dnnl_version_t* v = dnnl_version();
        Threading t{std::string(runtime_name(v->cpu_runtime)), 0, ""};
        if (v->cpu_runtime == DNNL_RUNTIME_SYCL || v->cpu_runtime == DNNL_RUNTIME_TBB) {
            if (v->cpu_runtime == DNNL_RUNTIME_SYCL) t.runtime += " (TBB)";
            if (void* lib = dlopen("libtbb.so.12", RTLD_LAZY | RTLD_NOLOAD)) {
                using MaxConcurrency = int (*)(const void*);
                if (auto f = reinterpret_cast<MaxConcurrency>(
                            dlsym(lib, "_ZN3tbb6detail2r115max_concurrencyEPKNS0_2d115task_arena_baseE"))) {
                    t.threads = f(nullptr);
                    t.source = "tbb::this_task_arena::max_concurrency";
                }
                dlclose(lib);
            }
        }
        if (t.threads <= 0) {
            t.threads = process_cpus();
            t.source = "the process's CPUs (sched_getaffinity)";
        }
        return t;
    }

    /// oneDNN's own generator, replicated bit for bit (core/dropout.hpp onednn_dropout_mask).
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return onednn_dropout_mask(p); }

    /// Its strided copies of the inputs and guarded outputs (core/memory_estimate.hpp
    /// vendor_buffer_bytes), the explicit mask it builds (f32 on the host plus the graph tensor),
    /// and the intermediates of a non-fused graph: S_q x S_kv f32 per head and batch, 2 for the
    /// forward (scores, P), 3 for the backward (P, dP, dS).
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned) const override {
        const Geometry g = geometry(p);
        std::vector<MemoryItem> items{{"oneDNN strided input and guarded output buffers", vendor_buffer_bytes(p)}};
        double mask = 0;
        for (const auto m : onednn::mask_dims(p)) mask = (mask == 0 ? 1 : mask) * double(m);
        if (mask > 0 && !graph_mask_is_bias(p))
            items.push_back({"oneDNN explicit mask (f32 on the host plus the graph tensor)",
                mask * (4 + static_cast<double>(size_of(mask_dtype(p))))});
        const double scores = static_cast<double>(g.at(Role::scores).elements());
        items.push_back({"oneDNN intermediates of a non-fused graph (S_q x S_kv f32 per head)",
            (g.has(Role::dQ) ? 3 : 2) * 4 * scores});
        return items;
    }

    std::optional<Unsupported> support(const Problem& p) const override {
        if (is_fp8(p.dt))
            return Unsupported{Status::unimplemented, fmt::format("the oneDNN adapter builds no fp8 SDPA graph (--dt={}: "
                    "oneDNN's Graph API has no fp8 SDPA training pattern with per-tensor scales and amax outputs)", p.dt)};
        if (p.ragged)
            return Unsupported{Status::unimplemented, "the oneDNN Graph API takes no ragged (packed, THD) tensors "
                    "(--ragged=true): its logical tensors have one stride per dimension"};
        // The adapter merges padding into one dense explicit mask, which cannot keep a bias's own strides.
        if (p.mask == Mask::bias && !graph_mask_is_bias(p) && !geometry(p).at(Role::bias).dense())
            return Unsupported{Status::unimplemented, "the oneDNN adapter merges padding (--seq-len-q/kv) and the bias "
                    "into one dense explicit mask, so --strides=bias:... cannot be honoured with padding"};
        const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
        // oneDNN's CPU kernels need AVX-512 (bf16: avx512_core, emulated below avx512_core_bf16)
        // or AVX2-VNNI-2 for the 16-bit types; f16 needs AVX512-FP16 (avx10_1_512) or AVX2-VNNI-2.
        if (p.dt == DType::bf16 && !has_isa(isa, dnnl::cpu_isa::avx512_core) &&
                !has_isa(isa, dnnl::cpu_isa::avx2_vnni_2))
            return Unsupported{Status::skipped, fmt::format("bf16 needs avx512_core or avx2_vnni_2; oneDNN dispatches to {} here", isa_name(isa))};
        if (p.dt == DType::f16 && !has_isa(isa, dnnl::cpu_isa::avx10_1_512) &&
                !has_isa(isa, dnnl::cpu_isa::avx2_vnni_2))
            return Unsupported{Status::skipped, fmt::format("f16 needs avx512_core_fp16 or avx2_vnni_2; oneDNN dispatches to {} here", isa_name(isa))};
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

    std::string name_;
    std::unique_ptr<Runtime> rt_;
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend(std::string_view name) { return std::make_unique<OnednnBackend>(name); }

}  // namespace sdpa
