#include "reports/junit_reporter.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "reports/escape.hpp"

namespace sdpa {

namespace {

std::string perf_text(const CaseResult& r) {
    if (!r.perf) return "";
    const PerfResult& p = *r.perf;
    return fmt::format("perf: runs {} min {} ms median {} ms mean {} ms max {} ms compile {} ms {} GFLOP/s (median)\n",
            p.time.runs, p.time.min_ms, p.time.median_ms, p.time.mean_ms, p.time.max_ms, p.compile_ms,
            p.gflops_at_median);
}

}  // namespace

std::string junit_document(const std::vector<CaseResult>& results, const Summary& s, const RunContext* ctx) {
    const std::size_t failures = s[Status::failed] + (s[Expected::xpass] - s.allowed_xpass);
    const std::size_t errors = s[Status::unimplemented] + s[Status::invalid_arguments];
    const std::size_t skipped = s[Status::skipped] + s[Status::listed] + s[Expected::xfail] + s[Expected::not_applicable];
    double total_s = 0;
    for (const auto& r : results) total_s += r.ms * 1e-3;
    std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    const std::string counts = fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.6f}\"",
            results.size(), failures, errors, skipped, total_s);
    x += fmt::format("<testsuites name=\"sdpabench\" {}>\n", counts);
    x += fmt::format("  <testsuite name=\"sdpabench\" {}>\n", counts);
    if (ctx) {  // the run context (context_fields), as JUnit's suite properties
        x += "    <properties>\n";
        for (const auto& [key, value] : context_fields(*ctx))
            x += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(key), xml_escape(value));
        x += "    </properties>\n";
    }
    for (const auto& r : results) {
        const std::string classname = r.info.backend.empty()
                ? std::string("sdpabench")
                : fmt::format("sdpabench.{}.{}", r.info.backend, r.info.dir);
        // The name is the case's canonical id, so a test keeps its name (and its history in the
        // CI system) when cases are added before it.
        x += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.6f}\">\n", xml_escape(classname),
                xml_escape(r.id), r.ms * 1e-3);
        std::string message = fmt::format("{}{}", r.status, r.reason.empty() ? std::string() : fmt::format(" ({})", r.reason));
        if (r.expect.kind != Expected::none) message = fmt::format("{}: {}; {}", r.expect.kind, message, r.expect.reason);
        message += " __REPRO: " + r.repro;
        if (r.minimized) message += " __MINIMIZED: " + r.minimized->repro;
        const auto element = [&](const char* tag, std::string_view type) {
            return fmt::format("      <{} type=\"{}\" message=\"{}\">{}</{}>\n", tag, type, xml_escape(message),
                    xml_escape(message), tag);
        };
        bool shown = true;
        if (r.expect.kind == Expected::xpass && !r.expect.allow_xpass) x += element("failure", "XPASS");
        else if (r.expect.kind == Expected::xfail || r.expect.kind == Expected::not_applicable)
            x += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(message));
        else if (r.expect.kind != Expected::none) shown = false;
        else switch (r.status) {
            case Status::failed: x += element("failure", "FAILED"); break;
            case Status::unimplemented:
            case Status::invalid_arguments: x += element("error", fmt::format("{}", r.status)); break;
            case Status::skipped:
            case Status::listed: x += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(message)); break;
            default: shown = false; break;
        }
        std::string out = perf_text(r);
        // MISTRUSTED, EXECUTED, an allowed XPASS: said, not failed.
        if (!shown && !(r.status == Status::passed && r.expect.kind == Expected::none)) out = message + "\n" + out;
        if (!out.empty()) x += fmt::format("      <system-out>{}</system-out>\n", xml_escape(out));
        x += "    </testcase>\n";
    }
    x += "  </testsuite>\n</testsuites>\n";
    return x;
}

JunitReporter::JunitReporter(std::string path) : path_(std::move(path)) {
    // Fail now, before any case runs, when the final path cannot be written (a directory, no
    // such folder); leave it as it was, since the document is written only at the end.
    std::error_code ec;
    const bool existed = std::filesystem::exists(path_, ec);
    std::FILE* f = std::fopen(path_.c_str(), "a");
    if (!f) throw std::runtime_error(fmt::format("cannot write report '{}': {}", path_, std::strerror(errno)));
    std::fclose(f);
    if (!existed) std::filesystem::remove(path_, ec);
    partial_ = std::make_unique<JsonlReporter>(path_ + ".partial");
}

void JunitReporter::begin(const RunContext& ctx) {
    ctx_ = ctx;
    partial_->begin(ctx);
}

void JunitReporter::on_case(const CaseResult& r) {
    partial_->on_case(r);
    results_.push_back(r);
}

void JunitReporter::end(const Summary& s) {
    std::FILE* f = std::fopen(path_.c_str(), "w");
    if (!f) throw std::runtime_error(fmt::format("cannot write report '{}': {}", path_, std::strerror(errno)));
    fmt::print(f, "{}", junit_document(results_, s, ctx_ ? &*ctx_ : nullptr));
    const bool failed = std::fflush(f) != 0 || std::ferror(f);
    std::fclose(f);
    if (failed) throw std::runtime_error(fmt::format("cannot write report '{}': {}", path_, std::strerror(errno)));
    partial_.reset();
    std::remove((path_ + ".partial").c_str());
}

}  // namespace sdpa
