#include "backends/test/test_backends.hpp"

#include "backends/ref/ref_backend.hpp"
#include "backends/registry.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

namespace sdpa {

namespace {

/// What the plan does when executed.
enum class Misbehaviour { sleep, segv };

class MisbehavingPlan final : public Plan {
public:
    explicit MisbehavingPlan(Misbehaviour m) : m_(m) {}
    void execute() override {
        if (m_ == Misbehaviour::sleep) {
            std::this_thread::sleep_for(std::chrono::hours(1));
            throw BackendError(Status::failed, "test:sleep woke up after an hour");
        }
        // The default action (die by the signal), even where a sanitizer installed a handler.
        std::signal(SIGSEGV, SIG_DFL);
        std::raise(SIGSEGV);
        throw BackendError(Status::failed, "test:segv: SIGSEGV did not end the process");
    }
    void poison_outputs() override {}
    SdpaOutputs read_outputs() override { return {}; }

private:
    Misbehaviour m_;
};

class MisbehavingBackend final : public Backend {
public:
    MisbehavingBackend(std::string name, Misbehaviour m) : name_(std::move(name)), m_(m) {}
    std::string_view name() const override { return name_; }
    std::string version() const override { return name_ + ": test-only backend"; }
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::unique_ptr<Plan> prepare(const Problem&, const SdpaInputs&) override {
        return std::make_unique<MisbehavingPlan>(m_);
    }

private:
    std::string name_;
    Misbehaviour m_;
};

/// The reference, except that every case after the first of a process FAILS: a vendor whose
/// state from earlier cases breaks later ones (what the fresh-process rerun of a FAILED case finds).
class StatefulBackend final : public Backend {
public:
    StatefulBackend() : ref_(std::make_unique<RefBackend>()) {}
    std::string_view name() const override { return "test:stateful"; }
    std::string version() const override { return "test:stateful: test-only backend"; }
    std::optional<Unsupported> support(const Problem& p) const override { return ref_->support(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        static int prepared = 0;  // per process
        if (++prepared > 1)
            throw BackendError(Status::failed, "test:stateful: every case after the first of a process fails");
        return ref_->prepare(p, in);
    }

private:
    std::unique_ptr<Backend> ref_;
};

/// The reference backend's plan on fp8 buffers too: the pipeline's fp8 path (fills, codes and
/// descales in the buffers, the reference's emulation, saturation, amax) end to end on the CPU.
/// A stand-in for an fp8 kernel in sdpabench's own tests, never a vendor (RefBackend refuses fp8).
class Fp8RefBackend final : public Backend {
public:
    std::string_view name() const override { return "test:fp8"; }
    std::string version() const override { return "test:fp8: test-only backend (the reference on fp8 buffers)"; }
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const override {
        return reference_backend_host_items(p, threads);
    }
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override { return make_reference_plan(p, in); }
};

/// The environment knob of test:slow: the factor each run is stretched to.
constexpr const char* kSlowdownVariable = "SDPABENCH_TEST_SLOWDOWN";

/// A reference plan whose every run is stretched to `factor` times its own wall time by a busy
/// wait (CPU work, so that a loaded machine slows the stretch as it slows the run).
class SlowPlan final : public Plan {
public:
    SlowPlan(std::unique_ptr<Plan> inner, double factor) : inner_(std::move(inner)), factor_(factor) {}
    void execute() override {
        using clock = std::chrono::steady_clock;
        const auto t0 = clock::now();
        inner_->execute();
        const auto until = t0 + std::chrono::duration_cast<clock::duration>((clock::now() - t0) * factor_);
        while (clock::now() < until) {
        }
    }
    void poison_outputs() override { inner_->poison_outputs(); }
    SdpaOutputs read_outputs() override { return inner_->read_outputs(); }
    std::vector<std::string> notes() const override {
        auto n = inner_->notes();
        n.push_back(fmt::format("test:slow: every run stretched {}x ({})", factor_, kSlowdownVariable));
        return n;
    }
    Implementation implementation() const override { return inner_->implementation(); }
    std::vector<BoundTensor> bound_tensors() const override { return inner_->bound_tensors(); }

private:
    std::unique_ptr<Plan> inner_;
    double factor_;
};

/// The reference backend with a planted slowdown of a known size: each run takes
/// SDPABENCH_TEST_SLOWDOWN (a factor >= 1; unset: 1) times the reference's time. One binary, one
/// environment knob: the A/B script's planted-slowdown test (scripts/ab_interleave.py).
class SlowBackend final : public Backend {
public:
    std::string_view name() const override { return "test:slow"; }
    std::string version() const override {
        return fmt::format("test:slow: test-only backend (the reference, each run stretched {}x by {})", factor(),
                kSlowdownVariable);
    }
    std::optional<Unsupported> support(const Problem& p) const override { return ref_.support(p); }
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const override {
        return reference_backend_host_items(p, threads);
    }
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        const double f = factor();
        if (!(f >= 1.0) || !std::isfinite(f))
            throw BackendError(Status::invalid_arguments, fmt::format("test:slow: {}='{}' is not a factor >= 1",
                    kSlowdownVariable, std::getenv(kSlowdownVariable)));
        return std::make_unique<SlowPlan>(make_reference_plan(p, in), f);
    }

private:
    /// The factor in the environment (1 when unset or empty; NaN when it is not a number).
    static double factor() {
        const char* v = std::getenv(kSlowdownVariable);
        if (!v || !*v) return 1.0;
        char* end = nullptr;
        const double f = std::strtod(v, &end);
        return *end == '\0' ? f : NAN;
    }
    RefBackend ref_;
};

/// The reference as a vendor that rounds its intermediates one way, checked against the reference
/// that rounds them the other way: the self-consistency test of the bound (compare/README.md,
/// "Intermediates"; scripts/self_consistency.sh). test:ref_f32 keeps P and the scaled dS in f32
/// (PyTorch's CPU kernels' choice) against the rounding reference (oneDNN's graphs' choice);
/// test:ref_rounded rounds them against a reference that keeps them in f32. Every correct case
/// must PASS on both.
class IntermediatesBackend final : public Backend {
public:
    explicit IntermediatesBackend(bool vendor_rounds) : rounds_(vendor_rounds) {}
    std::string_view name() const override { return rounds_ ? "test:ref_rounded" : "test:ref_f32"; }
    std::string version() const override {
        return rounds_ ? "test:ref_rounded: test-only backend (the reference rounding P and dS to the io type, checked "
                         "against one that keeps them in f32)"
                       : "test:ref_f32: test-only backend (the reference keeping P and dS in f32, checked against one "
                         "that rounds them to the io type)";
    }
    std::optional<Unsupported> support(const Problem& p) const override { return ref_.support(p); }
    Conventions conventions() const override {
        Conventions c;
        c.reference_rounds_intermediates = !rounds_;
        return c;
    }
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const override {
        return reference_backend_host_items(p, threads);
    }
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        RefKernel k;
        const bool rounds = rounds_;
        k.compute = [rounds](const Problem& q, const SdpaInputs& x) { return reference_as_vendor(q, x, {}, rounds); };
        k.impl = rounds ? "sdpabench reference, P and dS rounded to the io type" : "sdpabench reference, P and dS in f32";
        return make_reference_plan(p, in, std::move(k));
    }

private:
    bool rounds_;
    RefBackend ref_;
};

}  // namespace

std::vector<std::string> test_backend_kinds() {
    return {"sleep", "segv", "stateful", "fp8", "slow", "ref_f32", "ref_rounded"};
}

std::unique_ptr<Backend> make_test_backend(std::string_view kind) {
    const std::string name = fmt::format("{}{}", kTestPrefix, kind);
    if (kind == "sleep") return std::make_unique<MisbehavingBackend>(name, Misbehaviour::sleep);
    if (kind == "segv") return std::make_unique<MisbehavingBackend>(name, Misbehaviour::segv);
    if (kind == "stateful") return std::make_unique<StatefulBackend>();
    if (kind == "fp8") return std::make_unique<Fp8RefBackend>();
    if (kind == "slow") return std::make_unique<SlowBackend>();
    if (kind == "ref_f32") return std::make_unique<IntermediatesBackend>(false);
    if (kind == "ref_rounded") return std::make_unique<IntermediatesBackend>(true);
    return nullptr;
}

}  // namespace sdpa
