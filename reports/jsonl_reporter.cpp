#include "reports/jsonl_reporter.hpp"

#include "reports/result_fields.hpp"
#include "reports/report_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

namespace sdpa {

namespace {

using nlohmann::json;

/// obj[key] = v; a non-finite number as null plus obj[key + "_nonfinite"] = "nan" | "inf" | "-inf".
void put(json& obj, const std::string& key, const FieldValue& v) {
    std::visit([&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>) {
            obj[key] = nullptr;
        } else if constexpr (std::is_same_v<X, double>) {
            if (std::isfinite(x)) {
                obj[key] = x;
                return;
            }
            obj[key] = nullptr;
            obj[key + "_nonfinite"] = std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
        } else {
            obj[key] = x;
        }
    }, v);
}

/// The value put() wrote at obj[key]: null is absent unless a "_nonfinite" sibling names the number.
FieldValue value_at(const json& obj, const std::string& key) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        const auto nf = obj.find(key + "_nonfinite");
        if (nf == obj.end() || !nf->is_string()) return {};
        const std::string s = nf->get<std::string>();
        return s == "nan" ? std::numeric_limits<double>::quiet_NaN()
                          : (s == "-inf" ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
    }
    if (it->is_boolean()) return it->get<bool>();
    if (it->is_number_float()) return it->get<double>();
    if (it->is_number()) return it->get<std::int64_t>();
    if (it->is_string()) return it->get<std::string>();
    if (it->is_array()) {
        if (std::all_of(it->begin(), it->end(), [](const json& e) { return e.is_number_integer(); }))
            return it->get<std::vector<std::int64_t>>();
        if (std::all_of(it->begin(), it->end(), [](const json& e) { return e.is_number(); }))
            return it->get<std::vector<double>>();
        if (std::all_of(it->begin(), it->end(), [](const json& e) { return e.is_string(); }))
            return it->get<std::vector<std::string>>();
    }
    return {};
}

/// The JSON object of record `x` by its field table.
template <class R>
json object_of(const std::vector<Field<R>>& fields, const R& x) {
    json o = json::object();
    for (const auto& f : fields) put(o, f.key, f.get(x));
    return o;
}

/// Record `x` set back from object `o` by its field table (fields derived on demand are skipped).
template <class R>
R from_object(const std::vector<Field<R>>& fields, const json& o) {
    R x{};
    for (const auto& f : fields)
        if (f.set) f.set(x, value_at(o, f.key));
    return x;
}

/// The object of r's record that holds group g (null for "perf" of an untimed case).
template <class J>
J* group_object(J& j, FieldGroup g) {
    return g == FieldGroup::top ? &j : g == FieldGroup::perf ? &j["perf"] : &j["phases_ms"];
}

}  // namespace

nlohmann::json json_record(const CaseResult& r) {
    json j;
    j["perf"] = r.perf ? json::object() : json(nullptr);
    j["phases_ms"] = json::object();
    for (const auto& f : result_fields()) {  // reports/result_fields.hpp
        json* obj = group_object(j, f.group);
        if (!obj->is_null()) put(*obj, f.key, f.get(r));  // "perf": null for an untimed case
    }
    j["minimized"] = r.minimized ? object_of(minimize_fields(), *r.minimized) : json(nullptr);
    j["outputs"] = json::array();
    for (const auto& c : r.checks) j["outputs"].push_back(object_of(check_fields(), c));
    j["dropout_checks"] = r.dropout ? object_of(dropout_fields(), *r.dropout) : json(nullptr);
    j["impl_parts"] = json::array();  // the implementations inside the plan (core/implementation.hpp)
    for (const ImplPart& p : r.impl.parts) j["impl_parts"].push_back(object_of(impl_part_fields(), p));
    j["tensors"] = json::array();  // each tensor as bound to the vendor
    for (const BoundTensor& t : r.tensors) j["tensors"].push_back(object_of(tensor_fields(), t));
    return j;
}

CaseResult result_from_record(const nlohmann::json& j) {
    CaseResult r;
    for (const auto& f : result_fields()) {
        const auto it = f.group == FieldGroup::top ? j.end() : j.find(f.group == FieldGroup::perf ? "perf" : "phases_ms");
        const json* obj = f.group == FieldGroup::top ? &j : (it == j.end() ? nullptr : &*it);
        if (f.set && obj && obj->is_object()) f.set(r, value_at(*obj, f.key));
    }
    if (const auto m = j.find("minimized"); m != j.end() && m->is_object())
        r.minimized = from_object(minimize_fields(), *m);
    if (const auto o = j.find("outputs"); o != j.end() && o->is_array())
        for (const json& c : *o) r.checks.push_back(from_object(check_fields(), c));
    if (const auto d = j.find("dropout_checks"); d != j.end() && d->is_object())
        r.dropout = from_object(dropout_fields(), *d);
    if (const auto p = j.find("impl_parts"); p != j.end() && p->is_array())
        for (const json& x : *p) r.impl.parts.push_back(from_object(impl_part_fields(), x));
    if (const auto t = j.find("tensors"); t != j.end() && t->is_array())
        for (const json& x : *t) r.tensors.push_back(from_object(tensor_fields(), x));
    return r;
}

std::string json_line(const nlohmann::json& record) {
    return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json noise_record(const NoiseSample& s) {
    json o = json::object();
    put(o, "loadavg", s.loadavg ? FieldValue(*s.loadavg) : FieldValue{});
    put(o, "steal", s.steal ? FieldValue(*s.steal) : FieldValue{});
    put(o, "calib_ms", s.calib_ms);
    put(o, "calib_cv", s.calib_cv);
    put(o, "calib_slow", s.calib_slow);
    o["calib_reps"] = s.calib_reps;
    o["jiffies"] = s.steal_jiffies && s.total_jiffies
                       ? json{{"steal", *s.steal_jiffies}, {"total", *s.total_jiffies}}
                       : json(nullptr);
    return o;
}

nlohmann::json context_record(const RunContext& ctx) {
    nlohmann::json libs = nlohmann::json::object(), tags = nlohmann::json::object();
    for (const auto& [name, version] : ctx.libraries) libs[name] = version;
    for (const auto& [key, value] : ctx.tags) tags[key] = value;
    return {{"context", {{"sdpabench", ctx.sdpabench}, {"git_commit", ctx.git_commit}, {"build_type", ctx.build_type},
                                {"command", ctx.command}, {"host", ctx.host}, {"cpu", ctx.cpu},
                                {"cpu_governor", ctx.cpu_governor}, {"threads", ctx.threads}, {"cpus", ctx.cpus},
                                {"vendor_threads", ctx.vendor_threads}, {"isa", ctx.isa}, {"gpu", ctx.gpu},
                                {"libraries", libs}, {"tags", tags}, {"start", ctx.start}, {"run_id", ctx.run_id},
                                {"shard", ctx.shard_count == 0 ? nlohmann::json(nullptr)
                                                               : nlohmann::json{{"index", ctx.shard_index},
                                                                         {"count", ctx.shard_count},
                                                                         {"cases_total", ctx.cases_total},
                                                                         {"cases_fingerprint", ctx.cases_fingerprint}}},
                                {"noise", ctx.noise_start ? nlohmann::json{{"start", noise_record(*ctx.noise_start)}}
                                                          : nlohmann::json(nullptr)}}}};
}

nlohmann::json end_record(std::size_t cases, const Summary& s) {
    return {{"end", {{"cases", cases}, {"noise", s.noise_end ? nlohmann::json{{"end", noise_record(*s.noise_end)}}
                                                             : nlohmann::json(nullptr)}}}};
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
    start_report(f_, path_);
    fmt::print(f_, "{}\n", json_line(context_record(ctx)));
    flush_checked(f_, path_);
}

JsonlReporter::JsonlReporter(const std::string& path) : f_(open_report(path)), path_(path) {}

JsonlReporter::~JsonlReporter() {
    if (f_) std::fclose(f_);
}

void JsonlReporter::on_case(const CaseResult& r) {
    fmt::print(f_, "{}\n", json_line(json_record(r)));
    flush_checked(f_, path_);
    ++cases_;
}

void JsonlReporter::end(const Summary& s) {
    fmt::print(f_, "{}\n", json_line(end_record(cases_, s)));
    flush_checked(f_, path_);
}

}  // namespace sdpa
