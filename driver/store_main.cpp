// sdpabench-store: the results store's own tool (docs/tracking.md). `ingest` loads JSONL reports
// (--report=jsonl:PATH, shards and merged shards alike) into a store through the same writer as
// --report=sqlite|postgresql; `migrate` creates or upgrades a store's schema. scripts/history
// ingest runs it.
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/results_store.hpp"

namespace {

using sdpa::ResultsStore;
using sdpa::StoreError;

/// Where each case id of a run was first read ("FILE:LINE"), over every file of one ingest.
using SeenCases = std::map<std::string, std::map<std::string, std::string>>;

/// What the records after a report's context held: the cases stored, and how the report ends.
struct PartRead {
    std::size_t stored = 0;
    bool cut = false;          ///< its last line is cut (a killed run)
    bool ended = false;        ///< it has an end record
    long long end_cases = -1;  ///< the end record's case count (-1: none given)
    nlohmann::json end;        ///< the end record's object: the part's end_record
};

/// A line of the report that is refused: its number (from 1) and why.
struct Refused {
    std::size_t line;
    std::string why;
};

/// Stores the case records of `lines` after the context record (line 1) into the store's current
/// part of run `key`; `ids` holds where each case id of the run was first read. The first refused
/// line, if any (then the caller rolls back).
std::optional<Refused> store_cases(ResultsStore& store, const std::vector<std::string>& lines, const std::string& path,
        const std::string& key, std::map<std::string, std::string>& ids, PartRead& part) {
    for (std::size_t k = 1; k < lines.size(); ++k) {
        if (lines[k].find_first_not_of(" \t\r") == std::string::npos) continue;
        const nlohmann::json rec = nlohmann::json::parse(lines[k], nullptr, false);
        if (rec.is_discarded() || !rec.is_object()) {
            if (k + 1 == lines.size() && !rec.is_object()) {  // the last line, cut by a kill
                part.cut = true;
                break;
            }
            return Refused{k + 1, "not a JSON object"};
        }
        if (rec.contains("context"))
            return Refused{k + 1, "a second context record (reports concatenated?): give each report as its own file"};
        if (rec.contains("end")) {  // the run ended (a report's or a spool's last record), with its case count
            part.ended = true;
            part.end = rec["end"];
            const nlohmann::json& end = part.end;
            const auto n = end.is_object() ? end.find("cases") : end.end();
            part.end_cases = end.is_object() && n != end.end() && n->is_number_integer() ? n->get<long long>() : -1LL;
            continue;
        }
        if (part.ended) return Refused{k + 1, "a case after the end record"};
        const auto id_field = rec.find("id");
        if (id_field == rec.end() || !id_field->is_string()) return Refused{k + 1, "a case record without a string \"id\""};
        const std::string id = id_field->get<std::string>();
        const std::string here = fmt::format("{}:{}", path, k + 1);
        if (const auto it = ids.find(id); it != ids.end() && !id.empty())
            return Refused{k + 1, fmt::format("case '{}' of run '{}' is given twice (first at {})", id, key, it->second)};
        store.add_case(rec);
        ids.emplace(id, here);
        ++part.stored;
    }
    return std::nullopt;
}

/// Stores one JSONL report as one part of its run, in one transaction: all of it, or nothing when
/// a line is refused (the message names FILE:LINE). A cut last line (a killed run) leaves the
/// part incomplete; every other part is marked complete, except a results store's spool
/// (reports/store_reporter.hpp: its first record has "spool"), which is complete only when it ends
/// with its end record ({"end": ...}: the run ended). The end record's object, when there is one,
/// is the part's end_record. Cases the store already holds for the same part of the same
/// invocation are stored again in place, so a spool loaded after its cases partly reached the
/// store adds each case once; a part another invocation wrote is replaced whole (a line on stderr
/// says so: ResultsStore::begin_part). Returns false after printing why.
bool ingest_file(ResultsStore& store, const std::string& path, SeenCases& seen) {
    std::ifstream in(path);
    if (!in) {
        fmt::print(stderr, "{}: cannot read the file\n", path);
        return false;
    }
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
    const auto fail = [&](std::size_t n, const std::string& why) {
        fmt::print(stderr, "{}:{}: {}; nothing of this file was stored\n", path, n, why);
        return false;
    };
    if (lines.empty()) return fail(1, "an empty report");
    const nlohmann::json first = nlohmann::json::parse(lines[0], nullptr, false);
    if (first.is_discarded() || !first.is_object() || !first.contains("context") || !first["context"].is_object())
        return fail(1, "no context record (a report from before context records, or not an sdpabench JSONL report): "
                       "a store keeps every case with its run's context");
    const bool spool = first.contains("spool");
    store.begin();
    try {
        const std::string key = store.begin_part(first["context"]);
        PartRead r;
        if (const std::optional<Refused> refused = store_cases(store, lines, path, key, seen[key], r)) {
            store.rollback();
            return fail(refused->line, refused->why);
        }
        // A spool holds the cases its store did not take: the part is whole once the store holds
        // as many as the run had (a spool loaded into another store than its own is not).
        const long long held = spool && r.ended ? store.part_cases() : 0;
        const bool short_of_cases = spool && r.ended && r.end_cases >= 0 && held < r.end_cases;
        const bool complete = !r.cut && (!spool || r.ended) && !short_of_cases;
        if (complete) store.finish_part(r.ended ? r.end : nlohmann::json());
        else if (r.ended) store.note_end(r.end);
        store.commit();
        if (!store.replaced().empty()) fmt::print(stderr, "{}: {}: {}\n", path, store.where(), store.replaced());
        fmt::print("{}: run '{}': {} case(s) stored{}\n", path, key, r.stored,
                r.cut ? "; its last line is cut (a killed run): the run stays incomplete"
                    : !(spool && r.ended) && spool ? "; the spool has no end record (its run was killed): the run stays incomplete"
                    : short_of_cases ? fmt::format("; the store holds {} of the run's {} case(s) (the others went to the store "
                                                   "the spool was written for, {}): the run stays incomplete here",
                                               held, r.end_cases,
                                               first["spool"].is_object() ? first["spool"].value("store", "?") : "?")
                    : "");
        return true;
    } catch (const StoreError& e) {
        store.rollback();
        fmt::print(stderr, "{}: {}; nothing of this file was stored\n", path, e.what());
        return false;
    } catch (const nlohmann::json::exception& e) {  // a field of another type than a report's
        store.rollback();
        fmt::print(stderr, "{}: a record with a field of the wrong type ({}); nothing of this file was stored\n", path,
                   e.what());
        return false;
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"sdpabench-store: sdpabench's results store (docs/tracking.md)"};
    app.require_subcommand(1);
    std::string db;
    std::vector<std::string> files;
    CLI::App* ingest = app.add_subcommand("ingest",
            "Store JSONL reports (--report=jsonl:PATH): each file is one run, or one shard of a run (the shards of one "
            "run must carry the same --tags=run:ID); a file is stored whole or not at all, a case given twice for "
            "one run is refused, and storing a file again replaces its rows");
    ingest->add_option("--db", db, "The store: sqlite:PATH or postgresql:URL")->required();
    ingest->add_option("files", files, "JSONL reports")->required()->check(CLI::ExistingFile);
    CLI::App* migrate = app.add_subcommand("migrate", "Create the store's schema, or upgrade an older one, and print its version");
    migrate->add_option("--db", db, "The store: sqlite:PATH or postgresql:URL")->required();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Bad usage (a missing file, an unknown option) exits 2 like every other refusal; --help 0.
        return app.exit(e) == 0 ? 0 : 2;
    }

    std::string err;
    const auto url = sdpa::parse_store_url(db, &err);
    if (!url) {
        fmt::print(stderr, "--db: {}\n", err);
        return 2;
    }
    try {
        ResultsStore store(*url);
        if (*migrate) {
            fmt::print("{}: schema version {}\n", store.where(), store.schema_version());
            return 0;
        }
        SeenCases seen;
        std::size_t ok = 0;
        for (const std::string& f : files) ok += ingest_file(store, f, seen);
        if (ok < files.size()) fmt::print(stderr, "{} of {} file(s) refused\n", files.size() - ok, files.size());
        return ok == files.size() ? 0 : 1;
    } catch (const StoreError& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 1;
    }
}
