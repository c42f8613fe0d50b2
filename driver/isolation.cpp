#include "driver/isolation.hpp"

#include "backends/registry.hpp"
#include "reports/jsonl_reporter.hpp"
#include "driver/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sdpa {

void die_with_parent() {
    struct sigaction sa {};
    sa.sa_handler = [](int) { ::kill(-::getpgrp(), SIGKILL); };  // async-signal-safe
    ::sigaction(SIGTERM, &sa, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1) ::kill(-::getpgrp(), SIGKILL);  // the parent died before the line above
}

std::string child_failure_reason(int wait_status) {
    if (WIFSIGNALED(wait_status)) {
        const int sig = WTERMSIG(wait_status);
        const char* abbrev = sigabbrev_np(sig);
        return fmt::format("crashed: {} (SIG{}, signal {})", strsignal(sig), abbrev ? abbrev : "?", sig);
    }
    if (WIFEXITED(wait_status))
        return fmt::format("the case's child process exited with status {} without a result",
                WEXITSTATUS(wait_status));
    return fmt::format("the case's child process ended without a result (wait status {:#x})", wait_status);
}

namespace {

/// How often the parent, waiting for a child's result, checks whether the child has exited.
constexpr int kExitPollMs = 100;

/// Child side: runs the case with its own backend, writes the CBOR result, never returns. The
/// child leads a process group of its own (what a timeout kills, with anything the case started)
/// and dies with the parent, its group with it (die_with_parent: Ctrl-C on the run, whose group it
/// left, ends it too).
[[noreturn]] void child_main(const Case& c, std::size_t index, const TimingOptions& timing, const RunLimits& limits,
        int fd) {
    ::setpgid(0, 0);
    die_with_parent();
    int code = 0;
    try {
        const std::unique_ptr<Backend> backend = make_backend(c.backend);
        CaseResult r;
        if (!backend) {
            r.index = index;
            r.repro = repro(c);
            r.status = Status::invalid_arguments;
            r.reason = fmt::format("unknown backend '{}'", c.backend);
        } else {
            r = run_case(c, *backend, index, timing, limits);
        }
        if (!write_result(fd, r)) code = 3;
    } catch (...) {
        code = 4;
    }
    ::close(fd);
    _exit(code);
}

/// Parent side: reads the child's CBOR result from `fd` until EOF, the child's exit or the deadline
/// (killing the child's process group then), reaps it, kills what it left in its group, and turns
/// what came into r (a timeout, a crash, or the child's result). The child's exit ends the wait
/// even when a process it started still holds the pipe open (no EOF would come then).
void collect_child(pid_t pid, int fd, std::chrono::steady_clock::time_point t0, double timeout_s, CaseResult& r) {
    using clock = std::chrono::steady_clock;
    std::vector<std::uint8_t> bytes;
    bool timed_out = false, reaped = false;
    int st = 0;
    // Past a year, a timeout is no timeout (and t0 + 1e30 s would overflow the clock).
    if (timeout_s > 365.0 * 24 * 3600) timeout_s = 0;
    const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
    while (true) {  // read until EOF (the child exited or closed the pipe) or the deadline
        int wait_ms = kExitPollMs;
        if (timeout_s > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
            if (left <= 0) {
                timed_out = true;
                break;
            }
            wait_ms = static_cast<int>(std::min<long long>(left, kExitPollMs));
        }
        pollfd pfd{fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, reaped ? 0 : wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {
            if (reaped) break;  // exited, and nothing more is coming: whoever holds the pipe is not the child
            if (::waitpid(pid, &st, WNOHANG) == pid) reaped = true;  // read what it left, then stop
            continue;  // re-checks the deadline
        }
        std::uint8_t buf[65536];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        bytes.insert(bytes.end(), buf, buf + n);
    }
    ::close(fd);
    if (timed_out) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
    }
    while (!reaped && ::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    ::kill(-pid, SIGKILL);  // whatever the case started and left behind in the child's group
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    if (timed_out) {
        r.status = Status::failed;
        r.timed_out = true;
        r.reason = fmt::format("timeout: the case ran longer than --timeout-per-case={}s and was killed", timeout_s);
    } else if (WIFEXITED(st) && !bytes.empty()) {
        try {
            r = result_from_record(nlohmann::json::from_cbor(bytes));
        } catch (const nlohmann::json::exception& e) {
            r.status = Status::failed;
            r.crashed = true;
            r.reason = fmt::format("the case's child process sent an unreadable result: {}", e.what());
        }
    } else {
        r.status = Status::failed;
        r.crashed = true;
        r.reason = child_failure_reason(st);
    }
    // The child's phases account for its own time; what the process start, the pipe and the
    // waiting added is the parent's, counted as "other" so that the phases sum to the case time.
    r.phases_ms[static_cast<std::size_t>(Phase::other)] += std::max(0.0, ms - r.ms);
    r.ms = ms;
}

/// The result of case `c` before its process runs: its index and repro.
CaseResult unstarted(const Case& c, std::size_t index) {
    CaseResult r;
    r.index = index;
    r.repro = repro(c);
    r.info = case_info(c);  // kept when the child gives no result (a timeout, a crash)
    return r;
}

/// r as FAILED because `process` could not start: `what` (the call) failed with errno `e`.
CaseResult not_started(CaseResult& r, std::string_view process, const char* what, int e) {
    r.status = Status::failed;
    r.reason = fmt::format("cannot start {}: {}: {}", process, what, std::strerror(e));
    return r;
}

}  // namespace

bool write_result(int fd, const CaseResult& r) {
    const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(json_record(r));
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

CaseResult run_case_isolated(const Case& c, std::size_t index, const TimingOptions& timing, const RunLimits& limits,
        double timeout_s) {
    using clock = std::chrono::steady_clock;
    CaseResult r = unstarted(c, index);
    const auto cannot_start = [&r](const char* what, int e) { return not_started(r, "the case's child process", what, e); };
    int fds[2];
    // Close-on-exec: a program the child (or anything else this process starts) runs does not
    // hold the pipe open.
    if (::pipe2(fds, O_CLOEXEC) != 0) return cannot_start("pipe", errno);
    std::fflush(nullptr);  // nothing buffered may be written twice
    const auto t0 = clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int e = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        return cannot_start("fork", e);
    }
    if (pid == 0) {
        ::close(fds[0]);
        child_main(c, index, timing, limits, fds[1]);
    }
    ::setpgid(pid, pid);  // as the child does (whichever runs first)
    ::close(fds[1]);
    collect_child(pid, fds[0], t0, timeout_s, r);
    return r;
}

CaseResult run_case_fresh_process(const Case& c, std::size_t index, double timeout_s, const std::vector<std::string>& argv) {
    return CaseWorker(argv).run(c, index, timeout_s);
}

}  // namespace sdpa
