// The run's context, the first record of every report (reports/case_result.hpp RunContext): what
// ran where, gathered once before the first case.
#pragma once

#include <string>
#include <vector>

#include "driver/cli.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// The context of a run under `opts` (its command line opts.argv, secrets masked by
/// core/redact.hpp; its tags, host, CPU, threads, start and run id; the build type, the CPU's
/// frequency governor and a noise sample, core/noise_probe.hpp noise_sample on the run's OpenMP
/// threads: some 45 ms), with the library version, device and threading of each backend of
/// `backends` (backend_names() in a run). The caller sets
/// sdpabench and git_commit (the executable's own). When the run forks a child per case
/// (--isolate, --timeout-per-case) no backend's device_name() is called: the first CUDA call
/// starts the runtime in the calling process, and a CUDA runtime does not survive fork(), so every
/// child's first CUDA call would fail; `gpu` stays "" then (each case's `device` names its device).
/// `timed`: some case of the run is timed (Case timed()): only then is the machine's noise sampled
/// (core/noise_probe.hpp, ~45 ms), which says how far timings can be trusted; else noise_start
/// stays empty.
RunContext run_context(const GlobalOptions& opts, const std::vector<std::string>& backends, bool timed = true);

}  // namespace sdpa
