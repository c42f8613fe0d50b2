// The case language (benchdnn-like, docs/case_language.md): knobs apply to the problem descriptors after
// them, comma lists expand to cross products, --batch=FILE includes a file, --reset restores
// defaults, '#' starts a comment. The same syntax on the command line and in files.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "driver/case.hpp"

namespace sdpa {

/// One result of parsing: a case, or an error. Errors read
/// "FILE:LINE:COL: error: MESSAGE" for file input and "command line: error: MESSAGE" for
/// command-line tokens; `usage` is true for the latter (the driver exits 2 on those).
struct CaseEntry {
    std::optional<Case> c;
    std::string error;
    bool usage = false;
    /// Status of an error entry: INVALID_ARGUMENTS, or UNIMPLEMENTED for a --case graph
    /// sdpabench cannot express.
    Status status = Status::invalid_arguments;
    /// For a --case graph that failed to import: the repro of the case it would have been (its
    /// rewrite knobs and file), so the expanded cases of one line can be told apart.
    std::string repro{};
    /// For an error entry: "FILE:LINE" of the token ("command line" there), the id of a parse error.
    std::string where{};
};

/// Knobs accepted by the case language with their values, for --help.
std::string case_language_help();

/// Parses command-line tokens (argv after the global options) in order. `--batch=FILE` paths
/// are relative to the current directory on the command line and to the including file
/// inside files; a knob set inside a batch file lasts until the end of that file. Parsing
/// goes on after an error, so one bad line costs only its own cases. A file that cannot be
/// opened, or a --batch cycle, is one error entry naming the include chain. A bad token costs
/// only itself: a problem descriptor that does not parse is its own error entry (on the command
/// line too, where it is not a usage error), and the problems after a bad knob on its line in a
/// file are error entries that name it (Parser::file). Command-line usage errors (usage = true):
/// a bad knob or value, a knob after the last problem/--batch (it would apply to nothing),
/// --batch files that hold no problem at all, an unknown single-dash option. An unknown knob or
/// option is answered with the nearest names, `options` (the global options' names,
/// driver/cli.hpp) among them (driver/suggest.hpp). At most 1,000,000 cases per run (an error
/// names the descriptor that goes past it).
std::vector<CaseEntry> parse_cases(const std::vector<std::string>& tokens, const std::vector<std::string>& options = {});

}  // namespace sdpa
