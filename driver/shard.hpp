// Sharding a run (--shard=I/N): each of N processes (CTest tests, a Slurm job array, a CI matrix)
// takes a deterministic part of the same expanded case list, balanced by estimated cost, and
// scripts/merge_reports.py puts the parts back together (README "Shards").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/case_parser.hpp"

namespace sdpa {

/// Shard `index` of `count` (0 <= index < count).
struct Shard {
    std::size_t index = 0, count = 1;
};

/// Parses "I/N" (0 <= I < N, N >= 1). nullopt with `err` naming the rule otherwise.
std::optional<Shard> parse_shard(std::string_view text, std::string* err);

/// The positions in `entries` that shard `s` runs, ascending. Every entry is in exactly one
/// shard. Balanced by cost (core/flops.hpp flops() of a valid problem, 1 for anything else):
/// longest first, each to the shard with the least cost so far (lowest shard on ties), so the
/// split depends only on the case list and N.
std::vector<std::size_t> shard_cases(const std::vector<CaseEntry>& entries, const Shard& s);

}  // namespace sdpa
