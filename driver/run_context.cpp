#include "driver/run_context.hpp"

#include <chrono>

#include <omp.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "backends/registry.hpp"
#include "core/host_cpu.hpp"
#include "core/noise_probe.hpp"
#include "core/redact.hpp"

// CMakeLists.txt defines it for this file: CMAKE_BUILD_TYPE.
#ifndef SDPABENCH_BUILD_TYPE
#define SDPABENCH_BUILD_TYPE ""
#endif

namespace sdpa {

RunContext run_context(const GlobalOptions& opts, const std::vector<std::string>& backends, bool timed) {
    RunContext ctx;
    ctx.tags = opts.tags;
    for (const std::string& a : opts.argv) ctx.command += (ctx.command.empty() ? "" : " ") + a;
    // Nothing the run writes carries a store's password (core/redact.hpp).
    ctx.command = redact_secrets(ctx.command);
    for (auto& [key, value] : ctx.tags) value = redact_secrets(value);
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) ctx.host = host;
    ctx.cpu = cpu_model_name();
    ctx.threads = omp_get_max_threads();
    ctx.cpus = process_cpus();
    const bool forks = opts.isolate || opts.timeout_per_case > 0;  // driver/isolation.hpp: fork() per case
    for (const auto& name : backends) {
        const auto be = make_backend(name);
        if (!be) continue;
        if (const std::string v = be->library_version(); !v.empty()) ctx.libraries.emplace_back(name, v);
        if (!forks)
            if (const std::string d = be->device_name(); !d.empty() && ctx.gpu.find(d) == std::string::npos)
                ctx.gpu += (ctx.gpu.empty() ? "" : "; ") + d;
        if (const Threading t = be->threading(); !t.runtime.empty())
            ctx.vendor_threads.push_back(fmt::format("{}: {} {} ({})", name, t.runtime, t.threads, t.source));
    }
    if (const auto isa = best_cpu_isa()) ctx.isa = fmt::format("{}", *isa);
    ctx.build_type = SDPABENCH_BUILD_TYPE;
    ctx.cpu_governor = cpu_scaling_governor();
    if (timed) ctx.noise_start = noise_sample(ctx.threads);
    const auto now = std::chrono::system_clock::now();
    const auto tm = fmt::gmtime(std::chrono::system_clock::to_time_t(now));
    ctx.start = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", tm);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    ctx.run_id = fmt::format("{}-{:%Y%m%dT%H%M%S}.{:03}Z-{}", ctx.host, tm, ms, ::getpid());
    return ctx;
}

}  // namespace sdpa
