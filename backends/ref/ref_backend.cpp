#include "backends/ref/ref_backend.hpp"

#include <map>

#include <omp.h>

#include <fmt/format.h>

#include "backends/strided_buffer.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

namespace {

/// t rounded as the vendor stores output role `r` of p: onto the io type (fp8: its grid scaled by
/// the role's descale, saturating; core/fp8.hpp).
Tensor rounded(Tensor t, const Problem& p, Role r) {
    const float descale = geometry(p).at(r).descale;
    for (float& x : t.data) x = round_scaled(p.dt, x, descale);
    t.dt = p.dt;
    return t;
}

/// Strided input buffers, guarded output buffers, and the kernel that runs between them.
class RefPlan final : public Plan {
public:
    RefPlan(const Problem& p, const SdpaInputs& in, RefKernel k) : p_(p), geo_(geometry(p)), k_(std::move(k)), outputs_(geo_) {
        for (const TensorGeom* t : geo_.inputs())  // padding lengths have no host tensor: read from p
            if (const Tensor* x = in.of(t->role); x && !x->empty()) inputs_[t->role] = pack_input(*t, *x);
    }

    void execute() override {
        SdpaInputs in;
        for (const auto& [role, bytes] : inputs_) {
            const TensorGeom t = k_.read_as ? k_.read_as(geo_, role) : geo_.at(role);
            const std::int64_t avail = static_cast<std::int64_t>(bytes.size() / size_of(geo_.at(role).type));
            *in.of(role) = gather(t, bytes.data(), avail);
        }
        SdpaOutputs out = k_.compute ? k_.compute(p_, in) : reference_as_vendor(p_, in);
        for (auto& [role, buf] : outputs_) {
            const Tensor& x = out.of(*output_of(role));
            if (x.empty()) continue;
            if (k_.write_as) {
                const TensorGeom t = k_.write_as(geo_, role);
                buf.write(x, &t);
            } else {
                buf.write(x);
            }
            if (k_.after_write) k_.after_write(role, buf);
        }
        if (k_.after_run)
            for (auto& [role, bytes] : inputs_) k_.after_run(role, bytes);
    }

    std::vector<InputBuffer> input_buffers() const override {
        std::vector<InputBuffer> out;
        for (const auto& [role, bytes] : inputs_) out.push_back({role, bytes});
        return out;
    }

    void poison_outputs() override { outputs_.poison(); }
    SdpaOutputs read_outputs() override { return outputs_.read(); }

    std::vector<std::string> notes() const override { return k_.notes; }
    Implementation implementation() const override {
        if (!k_.impl.empty()) return {k_.impl, {}};
        return {p_.dir == Dir::bwd ? "sdpabench ref_backward" : "sdpabench ref_forward", {}};
    }
    std::vector<BoundTensor> bound_tensors() const override { return geometry_tensors(p_); }

private:
    Problem p_;
    Geometry geo_;
    RefKernel k_;
    std::map<Role, std::vector<std::byte>> inputs_;
    GuardedOutputs outputs_;
};

}  // namespace

SdpaOutputs reference_as_vendor(const Problem& p, const SdpaInputs& in, RefOptions opt, bool round_intermediates) {
    SdpaOutputs out;
    opt.emulate_rounding = round_intermediates;
    std::shared_ptr<const DropoutMask> own;
    if (p.dropout && !opt.dropout) {
        own = ref_dropout_mask(p);
        opt.dropout = own.get();
    }
    if (p.dir == Dir::bwd) {
        RefBackward b = ref_backward(p, in, opt);
        out.dQ = rounded(std::move(b.dQ), p, Role::dQ);
        out.dK = rounded(std::move(b.dK), p, Role::dK);
        out.dV = rounded(std::move(b.dV), p, Role::dV);
        if (p.dmask) out.dMask = std::move(b.dMask);  // f32, as the vendor graph's dS
        out.amax = std::move(b.amax);                  // fp8: f32, empty otherwise
    } else {
        RefForward f = ref_forward(p, in, opt);
        out.O = rounded(std::move(f.O), p, Role::O);
        if (p.dir == Dir::fwd_t) out.stats = std::move(f.stats);
        out.amax = std::move(f.amax);
    }
    return out;
}

std::vector<MemoryItem> reference_backend_host_items(const Problem& p, unsigned threads) {
    std::vector<MemoryItem> items{{"reference backend: its strided input and output buffers", vendor_buffer_bytes(p)},
        {"reference backend: the inputs it reads back", input_host_bytes(p)}};
    for (MemoryItem item : reference_host_items(p, threads)) {
        item.what = "reference backend: " + item.what;
        items.push_back(std::move(item));
    }
    return items;
}

std::unique_ptr<Plan> make_reference_plan(const Problem& p, const SdpaInputs& in, RefKernel kernel) {
    return std::make_unique<RefPlan>(p, in, std::move(kernel));
}

std::string RefBackend::version() const {
    return fmt::format("ref: sdpabench f32 reference, OpenMP {} threads", omp_get_max_threads());
}

std::optional<Unsupported> RefBackend::support(const Problem& p) const {
    if (is_fp8(p.dt))
        return Unsupported{Status::unimplemented, fmt::format("the reference backend runs no fp8 kernel (--dt={}): fp8 "
                "is checked on --backend=cudnn, against the reference's fp8 emulation (docs/knobs_types.md#fp8)",
                p.dt)};
    return std::nullopt;
}

std::unique_ptr<Plan> RefBackend::prepare(const Problem& p, const SdpaInputs& in) {
    return make_reference_plan(p, in);
}

}  // namespace sdpa
