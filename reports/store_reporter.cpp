#include "reports/store_reporter.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "core/redact.hpp"
#include "reports/escape.hpp"
#include "reports/jsonl_reporter.hpp"

namespace sdpa {

namespace {

/// `s` on one line: each run of line ends and tabs (libpq's messages have them) becomes one blank.
std::string one_line(const std::string& s) {
    std::string out;
    for (const char c : s) {
        const bool blank = c == '\n' || c == '\r' || c == '\t';
        if (!blank) out += c;
        else if (!out.empty() && out.back() != ' ') out += ' ';
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

/// `s` with every character outside [A-Za-z0-9._-] turned into '_': a file name part.
std::string file_name_part(std::string s) {
    for (char& c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    return s;
}

/// `s` seconds as the steady clock's duration.
std::chrono::steady_clock::duration seconds(double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

StoreReporter::StoreReporter(const StoreUrl& url, const ReportOptions& opts)
    : url_(url), opts_(opts), where_(store_where(url)) {
    // Known now rather than when the store fails: where its cases would wait.
    std::error_code ec;
    if (!std::filesystem::is_directory(opts_.spool_dir, ec) || ::access(opts_.spool_dir.c_str(), W_OK) != 0)
        say(fmt::format("warning: the spool folder '{}' is not a folder this process can write: the cases the store "
                        "cannot take would be in the other reports only (--store-spool=DIR)", opts_.spool_dir));
    if (!reach(Clock::now() + seconds(opts_.store_wait_s)))
        say(fmt::format("cannot reach the results store for {} s ({}): the run goes on, its cases wait in a spool file "
                        "in {} and the store is tried again every {} s", opts_.store_wait_s, last_error_, opts_.spool_dir,
                std::max(1.0, opts_.store_wait_s)));
}

StoreReporter::~StoreReporter() {
    if (spool_) std::fclose(spool_);
}

void StoreReporter::say(const std::string& message) const { fmt::print(stderr, "{}: {}\n", where_, message); }

std::string StoreReporter::text_of(const StoreError& e) const {
    std::string s = one_line(e.what());
    if (s.rfind(where_ + ": ", 0) == 0) s.erase(0, where_.size() + 2);
    return s;
}

void StoreReporter::try_once(double wait_s) {
    try {
        if (!store_) store_ = std::make_unique<ResultsStore>(url_, wait_s);
        if (begun_ && !part_started_) {
            store_->begin_part(context_);
            part_started_ = true;
            if (!store_->replaced().empty()) say(store_->replaced());
        }
        std::size_t sent = 0;
        for (; sent < pending_.size(); ++sent) {
            try {
                store_->add_case(pending_[sent]);
            } catch (const StoreError& e) {
                if (e.transient()) throw;
                refused_.push_back(text_of(e));
                say(refused_.back());
            }
        }
        pending_.clear();
    } catch (const StoreError& e) {
        if (e.transient()) {
            store_.reset();
            part_started_ = false;
        }
        throw;
    }
}

bool StoreReporter::reach(Clock::time_point deadline) {
    double backoff = 0.25;
    while (true) {
        // A lock wait of what is left of the deadline; a single try (deadline passed) waits 1 s.
        const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
        try {
            try_once(std::max(1.0, left));
            last_try_ = Clock::now();
            return true;
        } catch (const StoreError& e) {
            last_try_ = Clock::now();  // the next try is an interval after this one ended
            if (!e.transient()) throw;
            last_error_ = text_of(e);
        }
        if (last_try_ + seconds(backoff) > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
        backoff = std::min(2 * backoff, 8.0);
    }
}

bool StoreReporter::spool(const nlohmann::json& record) {
    if (!spool_ && spool_error_.empty()) {
        spool_path_ = (std::filesystem::path(opts_.spool_dir) /
                fmt::format("sdpabench-spool-{}-{}-{:08x}.jsonl", file_name_part(run_id_), format_as(url_.kind),
                        static_cast<std::uint32_t>(std::hash<std::string>{}(redact_secrets(url_.target))))).string();
        spool_ = std::fopen(spool_path_.c_str(), "w");
        nlohmann::json first{{"context", context_}, {"spool", {{"store", where_}}}};
        if (!spool_) spool_error_ = std::strerror(errno);
        else if (std::fprintf(spool_, "%s\n", json_line(first).c_str()) < 0 || std::fflush(spool_) != 0)
            spool_error_ = std::strerror(errno);
        if (!spool_error_.empty()) say(fmt::format("cannot write the spool file {}: {}", spool_path_, spool_error_));
    }
    if (!spool_error_.empty()) return false;
    if (std::fprintf(spool_, "%s\n", json_line(record).c_str()) < 0 || std::fflush(spool_) != 0) {
        spool_error_ = std::strerror(errno);
        say(fmt::format("cannot write the spool file {}: {}", spool_path_, spool_error_));
        return false;
    }
    return true;
}

void StoreReporter::begin(const RunContext& ctx) {
    context_ = context_record(ctx).at("context");
    run_id_ = ctx.run_id;
    begun_ = true;
    if (!store_) return;
    try {
        store_->begin_part(context_);
        part_started_ = true;
        if (!store_->replaced().empty()) say(store_->replaced());
    } catch (const StoreError& e) {
        if (!e.transient()) throw;
        store_.reset();
        last_error_ = text_of(e);
        say(fmt::format("{}; the store is tried again with the first case", last_error_));
    }
}

void StoreReporter::on_case(const CaseResult& r) {
    ++cases_;
    nlohmann::json record = json_record(r);
    const auto wait = seconds(opts_.store_wait_s);
    if (store_ && part_started_ && pending_.empty()) {
        try {
            store_->add_case(record);
            return;
        } catch (const StoreError& e) {
            if (!e.transient()) {
                refused_.push_back(text_of(e));
                say(refused_.back());
                return;
            }
            store_.reset();
            part_started_ = false;
            last_error_ = text_of(e);
        }
        if (!spool(record)) ++spool_lost_;
        pending_.push_back(std::move(record));
        say(fmt::format("{}; retrying for up to {} s (the case waits in {})", last_error_, opts_.store_wait_s, spool_path_));
        if (reach(Clock::now() + wait))
            say("the store is back: the waiting case is stored");
        else
            say(fmt::format("the store is still away after {} s: this case and the next go to the spool {} (the store "
                            "is tried again every {} s)", opts_.store_wait_s, spool_path_, std::max(1.0, opts_.store_wait_s)));
        return;
    }
    if (!spool(record)) ++spool_lost_;
    pending_.push_back(std::move(record));
    const double since = std::chrono::duration<double>(Clock::now() - last_try_).count();
    if (since >= std::max(1.0, opts_.store_wait_s)) {
        const std::size_t waiting = pending_.size();
        if (reach(Clock::now())) say(fmt::format("the store is back: the {} spooled case(s) are stored", waiting));
    }
}

void StoreReporter::end(const Summary& s) {
    const nlohmann::json end = end_record(cases_, s);
    if (begun_ && !(store_ && part_started_ && pending_.empty())) {  // one last wait for a store that is away
        const std::size_t waiting = pending_.size();
        if (reach(Clock::now() + seconds(opts_.store_wait_s)))
            say(fmt::format("the store is back: the {} spooled case(s) are stored", waiting));
    }
    if (store_ && part_started_ && pending_.empty()) {
        try {
            store_->finish_part(end.at("end"));
            finished_ = true;
        } catch (const StoreError& e) {
            if (!e.transient()) throw;
            last_error_ = text_of(e);
        }
    }
    if (finished_) {
        if (spool_) {  // everything it holds reached the store
            std::fclose(spool_);
            spool_ = nullptr;
            std::filesystem::remove(spool_path_);
            say(fmt::format("every spooled case is in the store now; {} removed", spool_path_));
            spool_path_.clear();
        }
        return;
    }
    // The part stays incomplete in the store: the spool says the run ended (ingest marks the part
    // complete only after this record), even with no case in it.
    if (spool(end))
        say(fmt::format("{} case(s) are not in the store ({}): they are in {}", pending_.size(), last_error_, spool_path_));
}

std::string StoreReporter::incomplete() const {
    std::vector<std::string> what;
    if (!finished_) {
        const std::string ingest = fmt::format("sdpabench-store ingest --db={} {}",
                shell_word(redact_secrets(fmt::format("{}:{}", format_as(url_.kind), url_.target))), shell_word(spool_path_));
        if (spool_error_.empty())
            what.push_back(fmt::format("{} of {} case(s) and the run's end are not in the store ({}); they are in the "
                                       "spool: load it with `{}`", pending_.size(), cases_, last_error_, ingest));
        else
            what.push_back(fmt::format("{} of {} case(s) and the run's end are not in the store ({}), and the spool {} "
                                       "cannot be written ({}): {} case(s) are only in the other reports",
                    pending_.size(), cases_, last_error_, spool_path_, spool_error_, spool_lost_));
    }
    if (!refused_.empty())
        what.push_back(fmt::format("{} case(s) refused by the store (first: {})", refused_.size(), refused_.front()));
    std::string s;
    for (const std::string& w : what) s += (s.empty() ? "" : "; ") + w;
    return s;
}

}  // namespace sdpa
