#include "driver/isolation.hpp"

#include "backends/registry.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

// std::optional as null or its value (nlohmann-json 3.11.2 has no serializer of its own; the
// adl_serializer specialisation is its documented way to add one).
NLOHMANN_JSON_NAMESPACE_BEGIN
template <typename T>
struct adl_serializer<std::optional<T>> {
    static void to_json(json& j, const std::optional<T>& o) {
        if (o) j = *o;
        else j = nullptr;
    }
    static void from_json(const json& j, std::optional<T>& o) {
        if (j.is_null()) o.reset();
        else o = j.get<T>();
    }
};
NLOHMANN_JSON_NAMESPACE_END

namespace sdpa {

// Every field of every struct a CaseResult holds: a field left out here is silently lost by
// --isolate (Isolation.IsolatedResultEqualsInProcessFieldByField compares the reports).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OutputCheck, output, pass, failure, mistrusted, reason, located, worst_ratio, worst_index, got,
        expected, err, bound, nonfinite, ref_nonfinite, zero_fraction, norm_worst, norm_ratio, norm_head,
        stats_sum_worst, got_zero_fraction, structural_zeros, saturated, unchecked, mistrust)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorstHead, p_value, rate, b, h)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MaskStatistics, heads, keep, pairs, identical_heads, first_dup_b, first_dup_h,
        first_dup_of_b, first_dup_of_h, distinct_checked, threshold, failure)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DropoutReport, mask, stats, failures)

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TimingStats, runs, min_ms, median_ms, mean_ms, max_ms, cv)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PerfResult, time, compile_ms, cold_cache, gflops_at_min, gflops_at_median,
        gflops_at_max, gbytes_per_s_at_median, samples_ms, peak_tflops, noisy)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MinimizeReport, repro, signature, runs, steps, hit_limit)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CaseInfo, backend, engine, mode, dir, dt, mask, prb, name, dropout)

void to_json(nlohmann::json& j, const CaseResult& r) {
    j = nlohmann::json{{"index", r.index}, {"status", r.status}, {"reason", r.reason}, {"ms", r.ms},
        {"repro", r.repro}, {"checks", r.checks}, {"notes", r.notes}, {"info", r.info}, {"checked", r.checked},
        {"flops", r.flops}, {"bytes", r.bytes}, {"phases_ms", r.phases_ms}, {"alone_status", r.alone_status}};
    if (r.perf) j["perf"] = *r.perf;
    if (r.dropout) j["dropout"] = *r.dropout;
    if (r.minimized) j["minimized"] = *r.minimized;
}

void from_json(const nlohmann::json& j, CaseResult& r) {
    j.at("index").get_to(r.index);
    j.at("status").get_to(r.status);
    j.at("reason").get_to(r.reason);
    j.at("ms").get_to(r.ms);
    j.at("repro").get_to(r.repro);
    j.at("checks").get_to(r.checks);
    j.at("notes").get_to(r.notes);
    j.at("info").get_to(r.info);
    j.at("checked").get_to(r.checked);
    j.at("flops").get_to(r.flops);
    j.at("bytes").get_to(r.bytes);
    j.at("phases_ms").get_to(r.phases_ms);
    j.at("alone_status").get_to(r.alone_status);
    if (j.contains("perf")) r.perf = j.at("perf").get<PerfResult>();
    if (j.contains("dropout")) r.dropout = j.at("dropout").get<DropoutReport>();
    if (j.contains("minimized")) r.minimized = j.at("minimized").get<MinimizeReport>();
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

/// Child side: runs the case with its own backend, writes the CBOR result, never returns.
[[noreturn]] void child_main(const Case& c, std::size_t index, const TimingOptions& timing, const RunLimits& limits,
        int fd) {
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

/// Parent side: reads the child's CBOR result from `fd` until EOF or the deadline (killing the
/// child then), reaps it, and turns what came into r (a timeout, a crash, or the child's result).
void collect_child(pid_t pid, int fd, std::chrono::steady_clock::time_point t0, double timeout_s, CaseResult& r) {
    using clock = std::chrono::steady_clock;
    std::vector<std::uint8_t> bytes;
    bool timed_out = false;
    // Past a year, a timeout is no timeout (and t0 + 1e30 s would overflow the clock).
    if (timeout_s > 365.0 * 24 * 3600) timeout_s = 0;
    const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
    while (true) {  // read until EOF (the child exited or closed the pipe) or the deadline
        int wait_ms = -1;
        if (timeout_s > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
            if (left <= 0) {
                timed_out = true;
                break;
            }
            wait_ms = static_cast<int>(std::min<long long>(left, 1000 * 60 * 60));
        }
        pollfd pfd{fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) continue;  // re-checks the deadline
        std::uint8_t buf[65536];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        bytes.insert(bytes.end(), buf, buf + n);
    }
    ::close(fd);
    if (timed_out) ::kill(pid, SIGKILL);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    if (timed_out) {
        r.status = Status::failed;
        r.timed_out = true;
        r.reason = fmt::format("timeout: the case ran longer than --timeout-per-case={}s and was killed", timeout_s);
    } else if (WIFEXITED(st) && !bytes.empty()) {
        try {
            r = nlohmann::json::from_cbor(bytes).get<CaseResult>();
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
    r.ms = ms;
}

/// The result of case `c` before its process runs: its index and repro.
CaseResult unstarted(const Case& c, std::size_t index) {
    CaseResult r;
    r.index = index;
    r.repro = repro(c);
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
    const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(nlohmann::json(r));
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
    if (::pipe(fds) != 0) return cannot_start("pipe", errno);
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
    ::close(fds[1]);
    collect_child(pid, fds[0], t0, timeout_s, r);
    return r;
}

CaseResult run_case_fresh_process(const Case& c, std::size_t index, double timeout_s) {
    CaseResult r = unstarted(c, index);
    const auto cannot_start = [&r](const char* what, int e) { return not_started(r, "a fresh sdpabench process", what, e); };
    int fds[2];
    if (::pipe(fds) != 0) return cannot_start("pipe", errno);
    ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);  // only the write end reaches the child
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    const std::string result_fd = fmt::format("--result-fd={}", fds[1]);
    const std::string line = repro(c);
    std::string self = "/proc/self/exe";
    const char* argv[] = {"sdpabench", "--no-progress", result_fd.c_str(), line.c_str(), nullptr};
    std::fflush(nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    pid_t pid = 0;
    const int e = ::posix_spawn(&pid, self.c_str(), &actions, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (e != 0) {
        ::close(fds[0]);
        return cannot_start("posix_spawn", e);
    }
    collect_child(pid, fds[0], t0, timeout_s, r);
    return r;
}

}  // namespace sdpa
