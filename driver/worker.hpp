// Case workers: fresh sdpabench processes that run the cases the driver sends them.
//
// A vendor library fixes some choices once per process: oneDNN its CPU ISA (--cpu-isa), and the
// state its caches and thread pools keep. The driver therefore runs each --cpu-isa level's cases
// in a worker of that level (one per level, reused from case to case, in the order the run lists
// them), and reruns a FAILED case alone in a worker of its own. A worker is this executable,
// started (posix_spawn, so safe after vendors ran in the parent) with the run's own command line
// plus --serve-cases=FD: it reads the global options from it as the run did (timing, --max-memory,
// --impl, --threads, ...) but not its cases; it gets one case at a time over a socket as its repro
// line, runs it and sends the result back. Protocol, over one AF_UNIX stream socket:
//   parent -> worker: "INDEX<TAB>WHERE<TAB>REPRO\n" per case (WHERE: the case's FILE:LINE:COL, or "")
//   worker -> parent: per case, an 8-byte little-endian length, then the result's JSONL record
//                     (reports/jsonl_reporter.hpp json_record) encoded as CBOR.
// A worker's stdin is /dev/null; its stdout and stderr are the run's (it prints nothing there but
// what a vendor prints under -v4).
// The worker ends when the parent closes its end. It runs in a process group of its own, so that
// a timeout kills whatever the case started too.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "driver/case.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

struct GlobalOptions;

/// One worker process, started on its first case and again after one that killed it.
class CaseWorker {
public:
    /// `argv`: the run's command line (GlobalOptions::argv, argv[0] first) the worker is started
    /// with, --serve-cases=FD appended.
    explicit CaseWorker(std::vector<std::string> argv);
    ~CaseWorker();
    CaseWorker(const CaseWorker&) = delete;
    CaseWorker& operator=(const CaseWorker&) = delete;

    /// Runs `c` (by its repro) as case `index` of the run and returns its result: the worker's
    /// when it sends one; FAILED "timeout: ..." with timed_out when `timeout_s` > 0 and the result
    /// has not come after that many seconds (the worker's process group is killed); FAILED with
    /// crashed and child_failure_reason when the worker dies first; FAILED "cannot start ..." when
    /// it cannot be started. A worker that did not answer is gone: the next case starts a new one.
    /// `ms` is the parent's wall time around the case.
    CaseResult run(const Case& c, std::size_t index, double timeout_s);

    /// Closes the worker's socket and reaps it (it exits at the end of its input).
    void stop();

private:
    std::string start();  ///< "" when the worker runs, else why it could not start
    void kill_now();      ///< SIGKILL to its process group, reaped

    std::vector<std::string> argv_;
    pid_t pid_ = -1;
    int sock_ = -1;
};

/// The worker's side (--serve-cases=FD): serves cases from FD until the parent closes it, each run
/// with run_case under `opts`' timing and limits, the vendor capped at the first case's --cpu-isa
/// level (every later case must have the same level). Returns the process's exit code: 0 after
/// the input ended, 3 when a result could not be sent.
int serve_cases(const GlobalOptions& opts);

}  // namespace sdpa
