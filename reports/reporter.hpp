// The reporter interface: the driver fans every result out to each reporter. Reporters
// format and write; they never compute verdicts.
#pragma once

#include "reports/case_result.hpp"

namespace sdpa {

class Reporter {
public:
    virtual ~Reporter() = default;
    /// Called once per finished case, in batch order; must write (and flush) before returning.
    virtual void on_case(const CaseResult& r) = 0;
    /// Called once after the last case.
    virtual void end(const Summary& s) = 0;
};

}  // namespace sdpa
