// Sharding a run (--shard=I/N): each of N processes (CTest tests, a Slurm job array, a CI matrix)
// takes a deterministic part of the same expanded case list, balanced by estimated cost, and
// scripts/merge_reports.py puts the parts back together (docs/ci.md#shards---shardin-scriptsmerge_reportspy).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/case_parser.hpp"

namespace sdpa {

/// Shard `index` of `count` (0 <= index < count); count 0: the run is not sharded.
struct Shard {
    std::size_t index = 0, count = 0;
};

/// Parses "I/N" (0 <= I < N, N >= 1). nullopt with `err` naming the rule otherwise.
std::optional<Shard> parse_shard(std::string_view text, std::string* err);

/// The positions in `entries` that shard `s` runs, ascending (all of them when s.count is 0).
/// Every entry is in exactly one shard; with more shards than entries the last ones are empty.
/// Balanced by cost (core/flops.hpp flops() of a valid problem, 1 for anything else):
/// longest first, each to the shard with the least cost so far (lowest shard on ties), so the
/// split depends only on the case list and N.
std::vector<std::size_t> shard_cases(const std::vector<CaseEntry>& entries, const Shard& s);

/// A fingerprint of the whole run's case list (FNV-1a 64 over the ids, in order, as 16 hex
/// digits): shards of one run share it (scripts/merge_reports.py checks).
std::string cases_fingerprint(const std::vector<std::string>& ids);

}  // namespace sdpa
