// Per-case statuses, benchdnn-compatible (docs/output.md#statuses).
#pragma once

#include <array>
#include <string_view>

#include "core/enum_table.hpp"

namespace sdpa {

/// Outcome of one case. Exactly one per case, on every path. PASSED only ever means "checked
/// and right"; a case that ran without a check (--mode=P) is EXECUTED (benchdnn's name for it).
enum class Status { passed, mistrusted, skipped, unimplemented, invalid_arguments, failed, listed, executed };

inline constexpr std::array<EnumName<Status>, 8> kStatusNames{{{Status::passed, "PASSED"},
    {Status::mistrusted, "MISTRUSTED"}, {Status::skipped, "SKIPPED"},
    {Status::unimplemented, "UNIMPLEMENTED"}, {Status::invalid_arguments, "INVALID_ARGUMENTS"},
    {Status::failed, "FAILED"}, {Status::listed, "LISTED"}, {Status::executed, "EXECUTED"}}};

inline std::string_view format_as(Status v) { return enum_name(kStatusNames, v); }

/// True for the statuses of a case that is wrong or was not tested as asked (FAILED, UNIMPLEMENTED,
/// INVALID_ARGUMENTS): CP times no such case. The run's exit code is exit_code()'s table
/// (driver/exit_code.hpp).
constexpr bool is_error(Status s) {
    return s == Status::failed || s == Status::unimplemented || s == Status::invalid_arguments;
}

}  // namespace sdpa
