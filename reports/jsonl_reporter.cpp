#include "reports/jsonl_reporter.hpp"
#include "reports/report_files.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace sdpa {

namespace {

/// obj[key] = v, or null plus obj[key + "_nonfinite"] = "nan" | "inf" | "-inf".
void put_number(nlohmann::json& obj, const std::string& key, double v) {
    if (std::isfinite(v)) {
        obj[key] = v;
        return;
    }
    obj[key] = nullptr;
    obj[key + "_nonfinite"] = std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

}  // namespace

nlohmann::json json_record(const CaseResult& r) {
    using nlohmann::json;
    json j;
    j["id"] = r.id;
    j["idx"] = r.index;
    j["status"] = fmt::format("{}", r.status);
    j["reason"] = r.reason;
    j["expect"] = r.expect.kind == Expected::none ? json(nullptr) : json(fmt::format("{}", r.expect.kind));
    j["expect_reason"] = r.expect.reason;
    j["timed_out"] = r.timed_out;
    j["crashed"] = r.crashed;
    j["repro"] = r.repro;
    j["backend"] = r.info.backend;
    j["engine"] = r.info.engine;
    j["mode"] = r.info.mode;
    j["dir"] = r.info.dir;
    j["dt"] = r.info.dt;
    j["mask"] = r.info.mask;
    j["dropout"] = r.info.dropout.empty() ? json(nullptr) : json(r.info.dropout);
    j["prb"] = r.info.prb;
    j["name"] = r.info.name;
    put_number(j, "case_ms", r.ms);
    j["phases_ms"] = json::object();
    for (const auto& ph : kPhaseNames) j["phases_ms"][std::string(ph.name)] = r.phases_ms[static_cast<std::size_t>(ph.value)];
    j["checked"] = r.checked;
    if (r.minimized)
        j["minimized"] = json{{"repro", r.minimized->repro}, {"signature", r.minimized->signature},
            {"runs", r.minimized->runs}, {"steps", r.minimized->steps}, {"hit_limit", r.minimized->hit_limit}};
    else
        j["minimized"] = nullptr;
    j["outputs"] = json::array();
    for (const auto& c : r.checks) {
        json o;
        o["output"] = fmt::format("{}", c.output);
        o["pass"] = c.pass;
        o["failure"] = fmt::format("{}", c.failure);
        o["mistrusted"] = c.mistrusted;
        o["reason"] = c.reason;
        put_number(o, "worst_ratio", c.worst_ratio);
        o["worst_index"] = c.worst_index;
        put_number(o, "got", c.got);
        put_number(o, "expected", c.expected);
        put_number(o, "err", c.err);
        put_number(o, "bound", c.bound);
        o["nonfinite"] = c.nonfinite;
        put_number(o, "zero_fraction", c.zero_fraction);
        j["outputs"].push_back(std::move(o));
    }
    j["flops"] = r.flops;
    j["bytes"] = r.bytes;
    if (r.perf) {
        const PerfResult& p = *r.perf;
        json t;
        t["runs"] = p.time.runs;
        put_number(t, "min_ms", p.time.min_ms);
        put_number(t, "median_ms", p.time.median_ms);
        put_number(t, "mean_ms", p.time.mean_ms);
        put_number(t, "max_ms", p.time.max_ms);
        put_number(t, "compile_ms", p.compile_ms);
        t["cold_cache"] = p.cold_cache;
        put_number(t, "gflops", p.gflops_at_median);
        put_number(t, "gflops_best", p.gflops_at_min);
        put_number(t, "gflops_worst", p.gflops_at_max);
        put_number(t, "gbytes_per_s", p.gbytes_per_s_at_median);
        t["samples_ms"] = p.samples_ms;  // every timed run, in order
        j["perf"] = std::move(t);
    } else {
        j["perf"] = nullptr;
    }
    if (r.dropout) {
        // The mask the reference was fed and the generator-free checks on it (core/dropout.hpp).
        const MaskStatistics& s = r.dropout->stats;
        json d{{"mask", r.dropout->mask}, {"failures", r.dropout->failures}};
        if (s.heads > 0) {
            d["heads"] = s.heads;
            d["threshold"] = s.threshold;
            d["keep_p_value"] = s.keep.p_value;
            d["keep_rate_worst"] = s.keep.rate;
            d["keep_worst_head"] = {s.keep.b, s.keep.h};
            d["pairs_worst_head"] = {s.pairs.b, s.pairs.h};
            d["pairs_p_value"] = s.pairs.p_value;
            d["pairs_rate_worst"] = s.pairs.rate;
            d["identical_heads"] = s.identical_heads;
            d["distinct_checked"] = s.distinct_checked;
        }
        j["dropout_checks"] = std::move(d);
    } else {
        j["dropout_checks"] = nullptr;
    }
    j["notes"] = r.notes;
    return j;
}

std::string json_line(const nlohmann::json& record) {
    return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json context_record(const RunContext& ctx) {
    nlohmann::json libs = nlohmann::json::object(), tags = nlohmann::json::object();
    for (const auto& [name, version] : ctx.libraries) libs[name] = version;
    for (const auto& [key, value] : ctx.tags) tags[key] = value;
    return {{"context", {{"sdpabench", ctx.sdpabench}, {"git_commit", ctx.git_commit}, {"command", ctx.command},
                                {"host", ctx.host}, {"cpu", ctx.cpu}, {"threads", ctx.threads}, {"gpu", ctx.gpu},
                                {"libraries", libs}, {"tags", tags}, {"start", ctx.start},
                                {"shard", ctx.shard_count == 0 ? nlohmann::json(nullptr)
                                                               : nlohmann::json{{"index", ctx.shard_index},
                                                                         {"count", ctx.shard_count},
                                                                         {"cases_total", ctx.cases_total},
                                                                         {"cases_fingerprint", ctx.cases_fingerprint}}}}}};
}

std::vector<std::pair<std::string, std::string>> context_fields(const RunContext& ctx) {
    std::vector<std::pair<std::string, std::string>> out;
    const nlohmann::json record = context_record(ctx);  // kept alive while its items are read
    for (const auto& [key, v] : record.at("context").items()) {
        if (v.is_object()) {
            for (const auto& [k2, v2] : v.items())
                out.emplace_back(key + "." + k2, v2.is_string() ? v2.get<std::string>() : v2.dump());
        } else {
            out.emplace_back(key, v.is_string() ? v.get<std::string>() : v.dump());
        }
    }
    return out;
}

void JsonlReporter::begin(const RunContext& ctx) {
    fmt::print(f_, "{}\n", json_line(context_record(ctx)));
    flush_checked(f_, path_);
}

JsonlReporter::JsonlReporter(const std::string& path) : f_(std::fopen(path.c_str(), "w")), path_(path) {
    if (!f_) throw std::runtime_error(fmt::format("cannot write report '{}': {}", path, std::strerror(errno)));
}

JsonlReporter::~JsonlReporter() {
    if (f_) std::fclose(f_);
}

void JsonlReporter::on_case(const CaseResult& r) {
    fmt::print(f_, "{}\n", json_line(json_record(r)));
    flush_checked(f_, path_);
}

void JsonlReporter::end(const Summary&) { flush_checked(f_, path_); }

}  // namespace sdpa
