#include "driver/run_case.hpp"

#include <chrono>
#include <algorithm>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "compare/compare.hpp"
#include "core/memory_estimate.hpp"
#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

std::string failure_reason(const OutputCheck& c) {
    const auto& w = c.worst_index;
    return fmt::format("{}: {} at ({},{},{},{}): got {} expected {} (|err| {:.3g} vs bound {:.3g})", c.output,
            c.reason, w[0], w[1], w[2], w[3], c.got, c.expected, c.err, c.bound);
}

namespace {

/// The SKIPPED reason when the case's host memory estimate exceeds the limit, else nullopt.
std::optional<std::string> memory_guard(const Problem& p, const Backend& backend, const RunLimits& limits) {
    if (limits.max_memory_bytes == 0) return std::nullopt;
    const MemoryEstimate est = estimate_host_memory(p, backend.name(), std::thread::hardware_concurrency());
    if (est.total <= static_cast<double>(limits.max_memory_bytes)) return std::nullopt;
    const auto largest = std::max_element(est.items.begin(), est.items.end(),
            [](const MemoryItem& a, const MemoryItem& b) { return a.bytes < b.bytes; });
    return fmt::format("not enough memory: the case needs about {} of host memory, more than --max-memory={} "
                       "(largest part: {}, {})", format_bytes(est.total),
            format_bytes(static_cast<double>(limits.max_memory_bytes)), largest->what, format_bytes(largest->bytes));
}

/// Status and reason from the output checks: INVALID_ARGUMENTS when the reference itself is
/// non-finite (the case overflows f32), FAILED if any check failed, else MISTRUSTED if any
/// output was mistrusted, else PASSED.
void judge(CaseResult& r) {
    for (const auto& c : r.checks)
        if (c.ref_nonfinite > 0) {
            r.status = Status::invalid_arguments;
            r.reason = fmt::format("{}: {}", c.output, c.reason);
            return;
        }
    std::string failed, mistrusted;
    for (const auto& c : r.checks) {
        if (!c.pass) failed += (failed.empty() ? "" : "; ") + failure_reason(c);
        else if (c.mistrusted)
            mistrusted += fmt::format("{}{}: {:.0f}% of the reference is zero", mistrusted.empty() ? "" : "; ",
                    c.output, 100.0 * c.zero_fraction);
    }
    if (!failed.empty()) {
        r.status = Status::failed;
        r.reason = failed;
    } else if (!mistrusted.empty()) {
        r.status = Status::mistrusted;
        r.reason = mistrusted;
    } else {
        r.status = Status::passed;
    }
}

void run_checked(const Case& c, Backend& backend, CaseResult& r, const RunLimits& limits) {
    const Problem& p = c.prb;
    if (auto err = validate(p)) {
        r.status = Status::invalid_arguments;
        r.reason = *err;
        return;
    }
    if (c.mode == Mode::L) {
        r.status = Status::listed;
        return;
    }
    if (auto no = backend.support(p)) {
        r.status = no->status;
        r.reason = no->reason;
        return;
    }
    if (auto over = memory_guard(p, backend, limits)) {
        r.status = Status::skipped;
        r.reason = *over;
        return;
    }
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    std::unique_ptr<Plan> plan = backend.prepare(p, in);
    r.notes = plan->notes();
    plan->execute();
    const SdpaOutputs out = plan->read_outputs();
    const RefOptions opt = default_ref_options(p);
    if (p.dir == Dir::bwd) {
        const RefBackward ref = ref_backward(p, in, opt);
        r.checks = check_outputs(p, out, nullptr, &ref, backend.conventions());
    } else {
        const RefForward ref = ref_forward(p, in, opt);
        r.checks = check_outputs(p, out, &ref, nullptr, backend.conventions());
    }
    judge(r);
}

}  // namespace

CaseResult run_case(const Case& c, Backend& backend, std::size_t index, const RunLimits& limits) {
    CaseResult r;
    r.index = index;
    r.repro = repro(c);
    const auto t0 = std::chrono::steady_clock::now();
    try {
        run_checked(c, backend, r, limits);
    } catch (const BackendError& e) {
        r.status = e.status;
        r.reason = e.what();
    } catch (const std::bad_alloc&) {
        r.status = Status::skipped;
        r.reason = "out of host memory";
    } catch (const std::exception& e) {
        r.status = Status::failed;
        r.reason = fmt::format("exception: {}", e.what());
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace sdpa
