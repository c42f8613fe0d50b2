// Running one case in a child process: --isolate (a crash costs one case) and
// --timeout-per-case (a hung vendor call cannot be interrupted in-process, so the parent kills
// the child at the deadline).
//
// Fork safety: fork() copies only the calling thread, so forking after oneDNN, SYCL or OpenMP
// have started worker threads can leave the child with locks held by threads that no longer
// exist. The driver therefore never touches a vendor in the parent when isolating: the parent
// only parses cases and reports; each child creates its own backend (and with it the engine and
// thread pools) from the case's backend name, runs the case, sends its CaseResult back and
// exits with _exit() (no static destructors of vendor libraries). make_backend() is cheap and
// touches no device, which is what makes this safe (backends/backend.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "driver/case.hpp"
#include "driver/run_case.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// Runs `c` in a forked child (its own backend from c.backend) and returns its result:
/// the child's CaseResult when it sends one; FAILED "timeout: ..." when `timeout_s` > 0 and
/// the child has not finished after that many seconds (it is killed with SIGKILL); FAILED
/// naming the signal (strsignal and SIG name) when it dies by one; FAILED with the exit
/// status when it exits without a result, or when pipe()/fork() fail. `ms` is the parent's wall
/// time around the child.
CaseResult run_case_isolated(const Case& c, std::size_t index, const TimingOptions& timing, const RunLimits& limits,
        double timeout_s);

/// Runs `c` in a fresh sdpabench process (a CaseWorker of its own, driver/worker.hpp: this
/// executable started with the run's command line `argv`, so the case runs under the run's
/// global options: timing, --max-memory, --impl, --skip-impl, --threads), so nothing an earlier
/// case left in this process (a vendor's caches, its thread pools, its fixed ISA) can change the
/// result, and safe after vendors ran here (exec, not a bare fork). Timeouts, crashes and failures
/// to start as run_case_isolated. The case must be one that its repro runs (a descriptor case, or
/// a --case graph by its file). --minimize runs its candidates this way, and a FAILED case of a
/// longer run is rerun alone this way.
CaseResult run_case_fresh_process(const Case& c, std::size_t index, double timeout_s, const std::vector<std::string>& argv);

/// Writes `r` to `fd` as its JSONL record (reports/jsonl_reporter.hpp json_record: the fields of
/// reports/result_fields.hpp, one set of key names) encoded as CBOR: what run_case_isolated's parent
/// and a --result-fd reader read back with result_from_record. False when the write fails.
bool write_result(int fd, const CaseResult& r);

/// For a child that leads its own process group (an --isolate child, a case worker): when the
/// parent dies, even by SIGKILL, the child gets SIGTERM (Linux's PR_SET_PDEATHSIG) and kills its
/// whole group with SIGKILL, itself and whatever its cases started included, so that nothing of
/// a killed run goes on running.
void die_with_parent();

/// A child's exit that carried no result, as a FAILED reason: "crashed: Segmentation fault
/// (SIGSEGV, signal 11)" for a signal, "exited with status N without a result" otherwise.
/// `wait_status` is as waitpid() returns it.
std::string child_failure_reason(int wait_status);

}  // namespace sdpa
