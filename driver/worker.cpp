#include "driver/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/registry.hpp"
#include "driver/case_parser.hpp"
#include "driver/cli.hpp"
#include "driver/isolation.hpp"
#include "driver/case_info.hpp"
#include "driver/run_case.hpp"
#include "reports/jsonl_reporter.hpp"

namespace sdpa {

namespace {

using Clock = std::chrono::steady_clock;

/// Sends all of `bytes` on socket `fd` (no SIGPIPE when the peer is gone). False on failure.
bool send_all(int fd, const void* bytes, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(bytes);
    while (n > 0) {
        const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
}

/// How a read with a deadline ended.
enum class ReadEnd { done, eof, timeout };

/// How often the parent, waiting for a worker's result, checks whether the worker has exited.
constexpr int kExitPollMs = 100;

/// Reads exactly `n` bytes from `fd` into `out`, waiting at most until `deadline` when `timed`.
/// The end of process `pid` ends the wait too (eof, `*reaped` set and its wait status in
/// `*status`) once nothing more can be read: a process it started may hold the socket open.
ReadEnd read_exact(int fd, std::uint8_t* out, std::size_t n, bool timed, Clock::time_point deadline, pid_t pid,
        bool* reaped, int* status) {
    while (n > 0) {
        int wait_ms = kExitPollMs;
        if (timed) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (left <= 0) return ReadEnd::timeout;
            wait_ms = static_cast<int>(std::min<long long>(left, kExitPollMs));
        }
        pollfd pfd{fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, *reaped ? 0 : wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {
            if (*reaped) return ReadEnd::eof;
            if (::waitpid(pid, status, WNOHANG) == pid) *reaped = true;
            continue;  // re-checks the deadline
        }
        const ssize_t k = ::read(fd, out, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return ReadEnd::eof;
        out += k;
        n -= static_cast<std::size_t>(k);
    }
    return ReadEnd::done;
}

/// `s` with tabs and line ends turned into spaces (one request is one line of three fields).
std::string one_field(std::string s) {
    for (char& ch : s)
        if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
    return s;
}

/// Sends `r` as one framed result: its length as 8 little-endian bytes, then its CBOR record.
bool send_result(int fd, const CaseResult& r) {
    const std::vector<std::uint8_t> body = nlohmann::json::to_cbor(json_record(r));
    std::uint8_t len[8];
    for (int k = 0; k < 8; ++k) len[k] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(body.size()) >> (8 * k));
    return send_all(fd, len, sizeof len) && send_all(fd, body.data(), body.size());
}

}  // namespace

CaseWorker::CaseWorker(std::vector<std::string> argv) : argv_(std::move(argv)) {}

CaseWorker::~CaseWorker() { stop(); }

std::string CaseWorker::start() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return fmt::format("socketpair: {}", std::strerror(errno));
    ::fcntl(sv[0], F_SETFD, FD_CLOEXEC);  // only the worker's end reaches it
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // stdout is the run's: a worker writes nothing there but the vendor's own log under -v4 (oneDNN's
    // verbose lines, passed through), which belongs beside the case's status line.
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // a group of its own: a timeout kills it all
    posix_spawnattr_setpgroup(&attr, 0);
    std::vector<std::string> args = argv_;
    args.push_back(fmt::format("--serve-cases={}", sv[1]));
    std::vector<char*> ptrs;
    for (std::string& a : args) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    std::fflush(nullptr);
    pid_t pid = 0;
    const int e = ::posix_spawn(&pid, "/proc/self/exe", &actions, &attr, ptrs.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(sv[1]);
    if (e != 0) {
        ::close(sv[0]);
        return fmt::format("posix_spawn: {}", std::strerror(e));
    }
    pid_ = pid;
    sock_ = sv[0];
    return "";
}

void CaseWorker::kill_now() {
    if (pid_ > 0) {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
        int st = 0;
        while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
        ::kill(-pid_, SIGKILL);
    }
    if (sock_ >= 0) ::close(sock_);
    pid_ = -1;
    sock_ = -1;
}

void CaseWorker::stop() {
    if (sock_ >= 0) ::close(sock_);
    sock_ = -1;
    if (pid_ > 0) {
        int st = 0;
        while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
        ::kill(-pid_, SIGKILL);  // whatever its cases started and left behind in its group
    }
    pid_ = -1;
}

CaseResult CaseWorker::run(const Case& c, std::size_t index, double timeout_s) {
    CaseResult r;
    r.index = index;
    r.repro = repro(c);
    r.info = case_info(c);  // kept when the worker gives no result (a timeout, a crash)
    const auto t0 = Clock::now();
    const auto finish = [&] {
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        // The worker's phases account for its own time; its start and the socket are "other" here.
        r.phases_ms[static_cast<std::size_t>(Phase::other)] += std::max(0.0, ms - r.ms);
        r.ms = ms;
        return r;
    };
    if (pid_ < 0)
        if (const std::string why = start(); !why.empty()) {
            r.status = Status::failed;
            r.reason = fmt::format("cannot start a worker process: {}", why);
            return finish();
        }
    const std::string request = fmt::format("{}\t{}\t{}\n", index, one_field(c.where), one_field(r.repro));
    // Past a year, a timeout is no timeout (and t0 + 1e30 s would overflow the clock).
    const bool timed = timeout_s > 0 && timeout_s <= 365.0 * 24 * 3600;
    const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timed ? timeout_s : 0));
    std::uint8_t len[8];
    bool reaped = false;
    int st = 0;
    ReadEnd end = send_all(sock_, request.data(), request.size())
            ? read_exact(sock_, len, sizeof len, timed, deadline, pid_, &reaped, &st)
            : ReadEnd::eof;
    std::vector<std::uint8_t> body;
    if (end == ReadEnd::done) {
        std::uint64_t n = 0;
        for (int k = 0; k < 8; ++k) n |= static_cast<std::uint64_t>(len[k]) << (8 * k);
        if (n > (1ULL << 32)) end = ReadEnd::eof;  // not a result: treat the worker as broken
        else {
            body.resize(n);
            end = read_exact(sock_, body.data(), body.size(), timed, deadline, pid_, &reaped, &st);
        }
    }
    if (end == ReadEnd::done) {
        try {
            r = result_from_record(nlohmann::json::from_cbor(body));
            if (reaped) {  // it sent its result and exited: the next case starts a new one
                ::close(sock_);
                sock_ = -1;
                ::kill(-pid_, SIGKILL);
                pid_ = -1;
            }
            return finish();
        } catch (const nlohmann::json::exception& e) {
            kill_now();
            r.status = Status::failed;
            r.crashed = true;
            r.reason = fmt::format("the worker process sent an unreadable result: {}", e.what());
            return finish();
        }
    }
    r.status = Status::failed;
    if (end == ReadEnd::timeout) {
        kill_now();
        r.timed_out = true;
        r.reason = fmt::format("timeout: the case ran longer than --timeout-per-case={}s and was killed", timeout_s);
        return finish();
    }
    ::close(sock_);
    sock_ = -1;
    while (!reaped && ::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    ::kill(-pid_, SIGKILL);  // what it left behind in its group
    pid_ = -1;
    r.crashed = true;
    r.reason = child_failure_reason(st);
    return finish();
}

int serve_cases(const GlobalOptions& opts) {
    const int fd = opts.serve_fd;
    // The socket stays this process's: a program a case runs does not inherit it. And this
    // process, in a group of its own, ends with the run (Ctrl-C reaches the run's group only).
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    die_with_parent();
    const RunLimits limits = run_limits(opts);
    std::map<std::string, std::unique_ptr<Backend>> backends;
    std::optional<CpuIsa> level;  // set by the first case
    std::string capped;           // why the cap failed ("" when it held)
    std::string buf;
    char chunk[4096];
    while (true) {
        std::size_t nl;
        while ((nl = buf.find('\n')) == std::string::npos) {
            const ssize_t k = ::read(fd, chunk, sizeof chunk);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) return 0;  // the parent closed its end
            buf.append(chunk, static_cast<std::size_t>(k));
        }
        const std::string line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        const auto tab1 = line.find('\t'), tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
        CaseResult r;
        r.status = Status::failed;
        if (tab2 == std::string::npos) {
            r.reason = fmt::format("worker: a request that is not INDEX<TAB>WHERE<TAB>REPRO: '{}'", line);
        } else {
            r.index = std::strtoull(line.c_str(), nullptr, 10);
            r.repro = line.substr(tab2 + 1);
            std::vector<CaseEntry> entries = parse_cases({r.repro}, opts.option_names);
            if (entries.size() != 1 || !entries.front().c) {
                r.reason = fmt::format("worker: the repro '{}' does not give one case{}", r.repro,
                        entries.empty() || entries.front().c ? "" : ": " + entries.front().error);
            } else {
                Case c = *entries.front().c;
                c.where = line.substr(tab1 + 1, tab2 - tab1 - 1);
                if (!level) {
                    level = c.cpu_isa;
                    if (*level != CpuIsa::none) capped = cap_cpu_isa(*level);
                }
                auto& be = backends[c.backend];
                if (c.cpu_isa != *level)
                    r.reason = fmt::format("worker: a case of --cpu-isa={} sent to the worker of --cpu-isa={}", c.cpu_isa, *level);
                else if (!capped.empty())
                    r.reason = fmt::format("--cpu-isa={}: {}", c.cpu_isa, capped);
                else if (!be && !(be = make_backend(c.backend)))
                    r.reason = fmt::format("unknown backend '{}'", c.backend);
                else
                    r = run_case(c, *be, r.index, opts.timing, limits);
            }
        }
        if (!send_result(fd, r)) return 3;
    }
}

}  // namespace sdpa
