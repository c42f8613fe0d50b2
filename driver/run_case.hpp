// The per-case pipeline: validate -> support -> fill -> displace -> vendor run -> reference ->
// compare, yielding exactly one CaseResult on every path.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backends/backend.hpp"
#include "driver/case.hpp"
#include "driver/case_info.hpp"
#include "driver/timing.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// Limits of one run, from the global options.
struct RunLimits {
    /// Memory guard: a case whose estimate_host_memory() exceeds this many bytes is SKIPPED
    /// (with the estimate and the limit) before anything is filled; 0: no limit.
    std::uint64_t max_memory_bytes = 0;
    /// --impl / --skip-impl (core/implementation.hpp): a case whose vendor implementation they
    /// leave out is SKIPPED with the name it got, once the plan names it (after prepare for
    /// --skip-impl, after the plan's first run for both; in P mode that run is an extra,
    /// untimed one).
    ImplSelection impls;
    /// Device-memory guard of a backend whose kernels run on a device with its own memory
    /// (Backend::device_memory): a case whose device estimate exceeds this many bytes is SKIPPED
    /// before anything is filled; 0: kDeviceMemoryShare of the device's free memory then
    /// (core/memory_estimate.hpp device_memory_limit_from).
    std::uint64_t max_device_memory_bytes = 0;
};

/// One step of a case: check a direction against the reference, time the last checked (or a
/// freshly prepared) plan, or rerun it and require bitwise-equal outputs (--mode=B).
struct Step {
    enum class Kind { check, time, rerun } kind;
    Dir dir;  ///< fwd_i, fwd_t or bwd: what the backend sees (never fwd_bwd)
    bool operator==(const Step&) const = default;
};

/// The problem of one step of a case: p with the step's direction d (fwd_i, fwd_t or bwd, one of
/// directions(p.dir)), without --dmask unless d is bwd (dMask is the backward's). Every problem a
/// backend sees is made here, so no backend ever sees fwd_bwd; throws std::logic_error for
/// d = fwd_bwd.
Problem step_problem(const Problem& p, Dir d);

/// The steps run_case takes for `c`, in order. C: a check per direction (fwd_bwd: fwd_t, then bwd
/// fed the forward's own O and stats); P: time; CP: check, then time; B: check, then rerun; L:
/// none. fwd_bwd is checked in C only: nullopt in P, CP and B (the case is SKIPPED).
std::optional<std::vector<Step>> case_steps(const Case& c);

/// Runs case `c` on `backend` (which must be the backend c.backend names) and returns its
/// result; `index` is its 0-based position in the batch. Never throws for a vendor or
/// reference failure: BackendError and std::exception become statuses. Modes P and CP time the
/// prepared plan with `timing` (driver/timing.hpp) and fill r.perf; P skips the reference.
/// `limits` holds the memory guard (a case estimated above it is SKIPPED before filling).
CaseResult run_case(const Case& c, Backend& backend, std::size_t index, const TimingOptions& timing = {},
        const RunLimits& limits = {});

/// The prefix of what one step of a fwd_bwd case says ("fwd: ", "bwd: " by step direction d),
/// before its notes and its reasons; a case of one direction says none.
std::string step_tag(Dir d);

/// `reason` without a leading step_tag(): what a step's failure says, whichever case it is a
/// step of (the minimizer shrinks fwd_bwd to the failing direction by it).
std::string_view without_step_tag(std::string_view reason);

/// The FAILED reason for one output check: "dQ: <reason> at (b,h,i,j): got G expected E
/// (|err| X > bound B)".
std::string failure_reason(const OutputCheck& c);

}  // namespace sdpa
