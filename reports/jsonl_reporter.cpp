#include "reports/jsonl_reporter.hpp"

#include "reports/result_fields.hpp"
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
    j["perf"] = r.perf ? json::object() : json(nullptr);
    j["phases_ms"] = json::object();
    for (const auto& f : result_fields()) {  // the scalar fields: reports/result_fields.hpp
        json* obj = f.group == FieldGroup::top ? &j : f.group == FieldGroup::perf ? &j["perf"] : &j["phases_ms"];
        if (obj->is_null()) continue;  // "perf": null for an untimed case
        const FieldValue v = f.get(r);
        if (const auto* d = std::get_if<double>(&v)) put_number(*obj, f.key, *d);
        else if (const auto* s = std::get_if<std::string>(&v)) (*obj)[f.key] = *s;
        else if (const auto* i = std::get_if<std::int64_t>(&v)) (*obj)[f.key] = *i;
        else if (const auto* b = std::get_if<bool>(&v)) (*obj)[f.key] = *b;
        else (*obj)[f.key] = nullptr;
    }
    if (r.perf) j["perf"]["samples_ms"] = r.perf->samples_ms;  // every timed run, in order
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
        o["ref_nonfinite"] = c.ref_nonfinite;
        put_number(o, "zero_fraction", c.zero_fraction);
        put_number(o, "got_zero_fraction", c.got_zero_fraction);
        o["structural_zeros"] = c.structural_zeros;
        put_number(o, "norm_worst", c.norm_worst);
        put_number(o, "norm_ratio", c.norm_ratio);
        o["norm_head"] = c.norm_head;
        put_number(o, "stats_sum_worst", c.stats_sum_worst);
        o["saturated"] = c.saturated;  // fp8: reference values past the output's range (compare/compare.hpp)
        o["unchecked"] = c.unchecked;  // ragged absent rows, rows a backend leaves unspecified
        o["mistrust"] = c.mistrust;    // why MISTRUSTED when not zero trust ("" otherwise)
        j["outputs"].push_back(std::move(o));
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
                                {"libraries", libs}, {"tags", tags}, {"start", ctx.start}, {"run_id", ctx.run_id},
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
