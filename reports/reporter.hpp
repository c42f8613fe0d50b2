// The reporter interface: the driver fans every result out to each reporter. Reporters
// format and write; they never compute verdicts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "reports/case_result.hpp"

namespace sdpa {

class Reporter {
public:
    virtual ~Reporter() = default;
    /// Called once before the first case. Default: nothing.
    virtual void begin(const RunContext& ctx) { (void)ctx; }
    /// Called before case `index` (0-based) starts; `label` is its repro ("" when it did not
    /// parse). Default: nothing (only the progress line uses it).
    virtual void on_start(std::size_t index, std::string_view label) {
        (void)index;
        (void)label;
    }
    /// Called once per finished case, in batch order; must write (and flush) before returning.
    virtual void on_case(const CaseResult& r) = 0;
    /// Called once after the last case.
    virtual void end(const Summary& s) = 0;
    /// After end(): "" when the report holds every case it was given; else what it lacks and how
    /// to complete it (the results store's spool: reports/store_reporter.hpp). Default "".
    virtual std::string incomplete() const { return ""; }
};

}  // namespace sdpa
