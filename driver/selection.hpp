// Which cases of the expanded list a run runs, beyond its shard: benchdnn's --start, --match and
// --repeats-per-prb (docs/benchdnn.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "driver/case_parser.hpp"

namespace sdpa {

/// `entries` with every entry repeated `n` times in a row (n >= 1): --repeats-per-prb. The
/// repeats are entries of their own, so the run's case ids tell them apart (" #2", ...).
std::vector<CaseEntry> repeat_entries(const std::vector<CaseEntry>& entries, std::size_t n);

/// The positions of `indices` (ascending positions into the run's case list) that --start and
/// --match keep: index >= start, and `match` (an ECMAScript regular expression; "" keeps all)
/// found anywhere in ids[index] or in canonical[index] (the case with every knob spelled, defaults
/// included: driver/knobs.hpp canonical; "" for a line that did not parse), so that a filter on a
/// default value (--match=--dt=f32) finds the cases that have it (std::regex_search, as benchdnn's
/// --match searches its problem string). Throws std::regex_error for a bad expression
/// (driver/cli.cpp checks it first).
std::vector<std::size_t> select_cases(const std::vector<std::size_t>& indices, const std::vector<std::string>& ids,
        const std::vector<std::string>& canonical, std::size_t start, const std::string& match);

}  // namespace sdpa
