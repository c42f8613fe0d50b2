#include "backends/test/test_backends.hpp"

#include "backends/ref/ref_backend.hpp"
#include "backends/registry.hpp"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

/// A test backend, called by the name its factory was given: test:KIND, the registry's prefix
/// and the kind of kTestKinds (the one place each is spelled).
class TestBackend : public Backend {
public:
    explicit TestBackend(std::string name) : name_(std::move(name)) {}
    std::string_view name() const override { return name_; }

protected:
    std::string name_;
};

/// What the plan does when executed.
enum class Misbehaviour { sleep, segv };

/// The plan of backend `name` (test:sleep or test:segv) that does `m` when executed.
class MisbehavingPlan final : public Plan {
public:
    MisbehavingPlan(std::string name, Misbehaviour m) : name_(std::move(name)), m_(m) {}
    void execute() override {
        if (m_ == Misbehaviour::sleep) {
            std::this_thread::sleep_for(std::chrono::hours(1));
            throw BackendError(Status::failed, fmt::format("{} woke up after an hour", name_));
        }
        // The default action (die by the signal), even where a sanitizer installed a handler.
        std::signal(SIGSEGV, SIG_DFL);
        std::raise(SIGSEGV);
        throw BackendError(Status::failed, fmt::format("{}: SIGSEGV did not end the process", name_));
    }
    void poison_outputs() override {}
    SdpaOutputs read_outputs() override { return {}; }

private:
    std::string name_;
    Misbehaviour m_;
};

class MisbehavingBackend final : public TestBackend {
public:
    MisbehavingBackend(std::string name, Misbehaviour m) : TestBackend(std::move(name)), m_(m) {}
    std::string version() const override { return name_ + ": test-only backend"; }
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::unique_ptr<Plan> prepare(const Problem&, const SdpaInputs&) override {
        return std::make_unique<MisbehavingPlan>(name_, m_);
    }

private:
    Misbehaviour m_;
};

/// The reference, except that every case after the first of a process FAILS: a vendor whose
/// state from earlier cases breaks later ones (what the fresh-process rerun of a FAILED case finds).
class StatefulBackend final : public TestBackend {
public:
    explicit StatefulBackend(std::string name) : TestBackend(std::move(name)), ref_(std::make_unique<RefBackend>()) {}
    std::string version() const override { return name_ + ": test-only backend"; }
    std::optional<Unsupported> support(const Problem& p) const override { return ref_->support(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        static int prepared = 0;  // per process
        if (++prepared > 1)
            throw BackendError(Status::failed, fmt::format("{}: every case after the first of a process fails", name_));
        return ref_->prepare(p, in);
    }

private:
    std::unique_ptr<Backend> ref_;
};

/// The environment knob of test:orphan: a file each grandchild's process id is appended to.
constexpr const char* kOrphanPidsVariable = "SDPABENCH_TEST_ORPHAN_PIDS";

/// The reference, but each prepare() first starts a process (fork) that sleeps for an hour with
/// every descriptor the case's process has, its stdio on /dev/null: a vendor that leaves a helper
/// process behind holding --isolate's pipe (or a worker's socket). Its pid is appended to the file
/// SDPABENCH_TEST_ORPHAN_PIDS names, when set.
class OrphanBackend final : public TestBackend {
public:
    using TestBackend::TestBackend;
    std::string version() const override { return name_ + ": test-only backend"; }
    std::optional<Unsupported> support(const Problem& p) const override { return ref_.support(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        std::fflush(nullptr);
        const pid_t pid = ::fork();
        if (pid == 0) {  // async-signal-safe calls only: the parent may have threads
            const int null = ::open("/dev/null", O_RDWR);
            for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
            ::sleep(3600);
            _exit(0);
        }
        if (pid < 0) throw BackendError(Status::failed, fmt::format("{}: fork: {}", name_, std::strerror(errno)));
        if (const char* path = std::getenv(kOrphanPidsVariable))
            if (std::FILE* f = std::fopen(path, "a")) {
                std::fprintf(f, "%d\n", static_cast<int>(pid));
                std::fclose(f);
            }
        return ref_.prepare(p, in);
    }

private:
    RefBackend ref_;
};

/// How often any test:device backend of this process was asked its device_name().
std::atomic<int> device_queries{0};

/// The environment knob of test:device: the simulated device's memory, bytes (default 64 MiB).
constexpr const char* kDeviceBytesVariable = "SDPABENCH_TEST_DEVICE_BYTES";

/// The reference, as if run on a device with SDPABENCH_TEST_DEVICE_BYTES of free memory: its
/// device memory is its strided buffers (vendor_buffer_bytes), and a case larger than the device
/// runs out of it in prepare() as a GPU backend does (out_of_device_memory): the device-memory
/// guard and a device out of memory, tested without a GPU.
class DeviceBackend final : public TestBackend {
public:
    using TestBackend::TestBackend;
    std::string version() const override { return name_ + ": test-only backend (the reference on a simulated device)"; }
    std::optional<Unsupported> support(const Problem& p) const override { return ref_.support(p); }
    std::vector<MemoryItem> device_memory(const Problem& p) const override {
        return {{name_ + " buffers (the strided inputs and guarded outputs)", vendor_buffer_bytes(p)}};
    }
    std::uint64_t device_free_bytes() const override {
        const char* v = std::getenv(kDeviceBytesVariable);
        std::uint64_t bytes = 0;
        const char* end = v ? v + std::strlen(v) : nullptr;
        if (v && std::from_chars(v, end, bytes).ptr == end && bytes > 0) return bytes;
        return 64ull << 20;  // unset, or not a whole positive number of bytes
    }
    /// Counted (test_device_queries): a GPU backend's device_name() starts its runtime.
    std::string device_name() const override {
        ++device_queries;
        return fmt::format("{} (simulated, {} free)", name_, format_bytes(static_cast<double>(device_free_bytes())));
    }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        if (const double need = vendor_buffer_bytes(p); need > static_cast<double>(device_free_bytes()))
            throw out_of_device_memory(fmt::format("{}: allocating {} with {} free", name_, format_bytes(need),
                    format_bytes(static_cast<double>(device_free_bytes()))));
        return ref_.prepare(p, in);
    }

private:
    RefBackend ref_;
};

/// The reference backend's plan on fp8 buffers too: the pipeline's fp8 path (fills, codes and
/// descales in the buffers, the reference's emulation, saturation, amax) end to end on the CPU.
/// A stand-in for an fp8 kernel in sdpabench's own tests, never a vendor (RefBackend refuses fp8).
class Fp8RefBackend final : public TestBackend {
public:
    using TestBackend::TestBackend;
    std::string version() const override { return name_ + ": test-only backend (the reference on fp8 buffers)"; }
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
    /// `name`: the backend's (its notes say who stretched the run).
    SlowPlan(std::string name, std::unique_ptr<Plan> inner, double factor)
        : name_(std::move(name)), inner_(std::move(inner)), factor_(factor) {}
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
        n.push_back(fmt::format("{}: every run stretched {}x ({})", name_, factor_, kSlowdownVariable));
        return n;
    }
    Implementation implementation() const override { return inner_->implementation(); }
    std::vector<BoundTensor> bound_tensors() const override { return inner_->bound_tensors(); }

private:
    std::string name_;
    std::unique_ptr<Plan> inner_;
    double factor_;
};

/// The reference backend with a planted slowdown of a known size: each run takes
/// SDPABENCH_TEST_SLOWDOWN (a factor >= 1; unset: 1) times the reference's time. One binary, one
/// environment knob: the A/B script's planted-slowdown test (scripts/ab_interleave.py).
class SlowBackend final : public TestBackend {
public:
    using TestBackend::TestBackend;
    std::string version() const override {
        return fmt::format("{}: test-only backend (the reference, each run stretched {}x by {})", name_, factor(),
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
            throw BackendError(Status::invalid_arguments, fmt::format("{}: {}='{}' is not a factor >= 1", name_,
                    kSlowdownVariable, std::getenv(kSlowdownVariable)));
        return std::make_unique<SlowPlan>(name_, make_reference_plan(p, in), f);
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
class IntermediatesBackend final : public TestBackend {
public:
    IntermediatesBackend(std::string name, bool vendor_rounds) : TestBackend(std::move(name)), rounds_(vendor_rounds) {}
    std::string version() const override {
        return name_ + (rounds_ ? ": test-only backend (the reference rounding P and dS to the io type, checked "
                                  "against one that keeps them in f32)"
                                : ": test-only backend (the reference keeping P and dS in f32, checked against one "
                                  "that rounds them to the io type)");
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

/// One test:KIND: its kind, what it is (--backend's help), whether it hangs or crashes a run
/// without --isolate, and its factory, given the backend's name.
struct TestKind {
    std::string_view kind;
    std::string what;
    bool needs_isolate = false;
    std::unique_ptr<Backend> (*make)(std::string name) = nullptr;
};

/// Every test kind, in --help order: the one place each is spelled.
const std::vector<TestKind>& test_kinds() {
    using B = std::unique_ptr<Backend>;
    static const std::vector<TestKind> kinds = {
        {"sleep", "a vendor call that hangs (--isolate's timeout)", true,
            [](std::string n) -> B { return std::make_unique<MisbehavingBackend>(std::move(n), Misbehaviour::sleep); }},
        {"segv", "a vendor call that crashes (--isolate)", true,
            [](std::string n) -> B { return std::make_unique<MisbehavingBackend>(std::move(n), Misbehaviour::segv); }},
        {"stateful", "the reference, FAILED on every case after a process's first (the fresh-process rerun)", false,
            [](std::string n) -> B { return std::make_unique<StatefulBackend>(std::move(n)); }},
        {"fp8", "the reference on fp8 buffers", false,
            [](std::string n) -> B { return std::make_unique<Fp8RefBackend>(std::move(n)); }},
        {"slow", fmt::format("the reference, each run stretched to {} times its time", kSlowdownVariable), false,
            [](std::string n) -> B { return std::make_unique<SlowBackend>(std::move(n)); }},
        {"ref_f32", "the reference keeping P and dS in f32, checked against one rounding them", false,
            [](std::string n) -> B { return std::make_unique<IntermediatesBackend>(std::move(n), false); }},
        {"ref_rounded", "the reference rounding P and dS, checked against one keeping them in f32", false,
            [](std::string n) -> B { return std::make_unique<IntermediatesBackend>(std::move(n), true); }},
        {"orphan", "the reference, leaving a process behind that holds the case's descriptors (--isolate's wait)",
            false, [](std::string n) -> B { return std::make_unique<OrphanBackend>(std::move(n)); }},
        {"device", fmt::format("the reference on a simulated device of {} bytes (the device-memory guard)",
                           kDeviceBytesVariable),
            false, [](std::string n) -> B { return std::make_unique<DeviceBackend>(std::move(n)); }},
    };
    return kinds;
}

}  // namespace

int test_device_queries() { return device_queries.load(); }

std::vector<std::string> test_backend_kinds() {
    std::vector<std::string> out;
    for (const TestKind& k : test_kinds()) out.emplace_back(k.kind);
    return out;
}

std::string test_backends_help() {
    std::vector<std::string> parts;
    for (const TestKind& k : test_kinds()) parts.push_back(fmt::format("{}{}: {}", kTestPrefix, k.kind, k.what));
    return fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<std::string> test_backends_needing_isolate() {
    std::vector<std::string> out;
    for (const TestKind& k : test_kinds())
        if (k.needs_isolate) out.push_back(fmt::format("{}{}", kTestPrefix, k.kind));
    return out;
}

std::unique_ptr<Backend> make_test_backend(std::string_view kind) {
    for (const TestKind& k : test_kinds())
        if (k.kind == kind) return k.make(fmt::format("{}{}", kTestPrefix, kind));
    return nullptr;
}

}  // namespace sdpa
