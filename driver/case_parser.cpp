#include "driver/case_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "core/geometry.hpp"
#include "core/parse_number.hpp"
#include "core/splitmix.hpp"
#include "driver/knobs.hpp"
#include "driver/random_cases.hpp"
#include "driver/ranges.hpp"
#include "driver/suggest.hpp"
#include "graph/json_import.hpp"
#include "reports/escape.hpp"

namespace sdpa {

namespace {

namespace fs = std::filesystem;

/// Per-batch lengths in [1, full] drawn from `seed` (splitmix64 per batch and tensor `salt`).
std::vector<std::int64_t> random_seq_lens(std::uint64_t seed, std::uint64_t salt, std::int64_t B, std::int64_t full) {
    std::vector<std::int64_t> out;
    for (std::int64_t b = 0; b < B; ++b) {
        const std::uint64_t z = mix64(seed * kGolden64 + salt * 0xBF58476D1CE4E5B9ull + static_cast<std::uint64_t>(b) + 1);
        out.push_back(1 + static_cast<std::int64_t>(z % static_cast<std::uint64_t>(full)));
    }
    return out;
}

/// One value of a knob's list: its spelling (for messages) and its setter, parsed once when the
/// knob was read (Knob::parse).
/// The literal values of a knob's accepted-values text ("none|causal_tl|...|window:L,R"): its
/// '|'-separated words without a placeholder (a '<' or ':' form), for "did you mean".
std::vector<std::string> value_names(std::string_view choices) {
    std::vector<std::string> out;
    for (std::size_t pos = 0; pos <= choices.size();) {
        const std::size_t bar = std::min(choices.find('|', pos), choices.size());
        const std::string_view w = choices.substr(pos, bar - pos);
        if (!w.empty() && w.find_first_of("<:[") == w.npos) out.emplace_back(w);
        pos = bar + 1;
    }
    return out;
}

/// benchdnn's options that sdpabench spells otherwise (docs/benchdnn.md's table), with what to
/// write here; nullopt for any other name.
std::optional<std::string> benchdnn_name(std::string_view name) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kSynonyms{{
        {"--engine", "the backend fixes the device: --backend=onednn (CPU), --backend=cudnn or torch:*:cuda (CUDA device 0)"},
        {"--cpu-isa-hints", "the environment variable ONEDNN_CPU_ISA_HINTS"},
        {"--ctx-init", "--threads=N (the vendor's and the reference's cores)"},
        {"--ctx-exe", "--threads=N (the vendor's and the reference's cores)"},
        {"--mem-check", "--max-memory=BYTES (0 turns the memory guard off)"},
    }};
    for (const auto& [b, here] : kSynonyms)
        if (name == b) return std::string(here);
    return std::nullopt;
}

struct KnobValue {
    std::string text;
    Knob::Setter set;
};

/// Current values of every knob (one list per row of knob_table()), and which knobs the input
/// gave (--random draws the others).
struct KnobState {
    std::vector<std::vector<KnobValue>> values;
    std::vector<bool> given;
    std::vector<KnobValue>& operator[](std::size_t k) { return values[k]; }
    const std::vector<KnobValue>& operator[](std::size_t k) const { return values[k]; }
    std::size_t size() const { return values.size(); }
};

KnobState default_state() {
    KnobState s;
    for (const Knob& k : knob_table()) {
        s.values.push_back({KnobValue{k.def(), k.parse(k.def())}});
        s.given.push_back(false);
    }
    return s;
}

/// Every name of the case language: the knobs of knob_table(), then --batch, --case, --random, --reset.
std::vector<std::string> case_language_names() {
    std::vector<std::string> names;
    for (const Knob& k : knob_table()) names.push_back(fmt::format("--{}", k.name));
    for (const char* n : {"--batch", "--case", "--random", "--reset"}) names.emplace_back(n);
    return names;
}

/// "--dir, --dt, ..., --batch, --reset": every knob name, for the unknown-knob error.
std::string all_knob_names() { return fmt::format("{}", fmt::join(case_language_names(), ", ")); }

/// Where a token came from: a file position, or the command line (file empty).
struct Loc {
    std::string file;
    std::size_t line = 0, col = 0;

    bool command_line() const { return file.empty(); }
    /// "FILE:LINE" (the id of a line that did not parse), or "command line".
    std::string where() const { return command_line() ? "command line" : fmt::format("{}:{}", file, line); }
    /// "FILE:LINE:COL" of a case from a file (the prefix of its validation errors), "" on the command line.
    std::string position() const { return command_line() ? std::string() : fmt::format("{}:{}:{}", file, line, col); }
};

/// Splits `line` at whitespace into (token, 1-based column) pairs.
std::vector<std::pair<std::string_view, std::size_t>> split_tokens(std::string_view line) {
    std::vector<std::pair<std::string_view, std::size_t>> out;
    auto space = [](char ch) {
        return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
    };
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && space(line[i])) ++i;
        const std::size_t b = i;
        while (i < line.size() && !space(line[i])) ++i;
        if (i > b) out.emplace_back(line.substr(b, i - b), b + 1);
    }
    return out;
}

/// Most cases one run may expand to: a few comma lists multiply quickly, and a run this long
/// is a typo (it also bounds the memory a hostile or fuzzed case file can make us take).
constexpr std::size_t kMaxCases = 1'000'000;

/// Parses tokens into entries; holds the --batch include chain for cycle detection.
class Parser {
public:
    std::vector<CaseEntry> entries;

    /// `options`: the global options' names (driver/cli.hpp GlobalOptions::option_names).
    explicit Parser(std::vector<std::string> options) : options_(std::move(options)) {}

    /// The message for an unknown knob or option `name` ("--maks"): "did you mean" the nearest
    /// knobs and global options (driver/suggest.hpp), and the knobs listed; a knob that is a
    /// global option (met where only the case language is read: a --batch file) is said to be
    /// one. `option_note` (for a single-dash option, not a knob) opens the parenthesis.
    std::string unknown_name(std::string_view what, std::string_view shown, std::string_view name,
            std::string_view option_note = {}) const {
        std::vector<std::string> names = case_language_names();
        const bool is_knob = option_note.empty();
        if (const auto here = benchdnn_name(name))  // benchdnn's spelling of something sdpabench names otherwise
            return fmt::format("{} '{}': {} is benchdnn's; here: {} (docs/benchdnn.md)", what, shown, name, *here);
        if (is_knob && std::find(options_.begin(), options_.end(), name) != options_.end())
            return fmt::format("{} '{}': {} is a global option, given on the command line, not in a --batch file "
                               "(the case language's knobs: {})", what, shown, name, all_knob_names());
        names.insert(names.end(), options_.begin(), options_.end());
        const auto near = did_you_mean(name, names);
        return fmt::format("{} '{}' ({}{}knobs: {}; global options: see --help)", what, shown, option_note,
                near.empty() ? std::string() : fmt::format("did you mean {}? ", fmt::join(near, " or ")),
                all_knob_names());
    }

    /// For "--NAME" (a value knob, no '=') followed by `next`, a value that knob accepts: the
    /// error that says to write --NAME=next. nullopt otherwise.
    static std::optional<std::string> spaced_value(std::string_view tok, std::string_view next) {
        if (!tok.starts_with("--") || tok.find('=') != tok.npos || next.starts_with("-")) return std::nullopt;
        if (tok == "--batch" || tok == "--case")
            return fmt::format("'{} {}': a knob and its value are joined by '=': write {}={}", tok, next, tok, next);
        for (const Knob& k : knob_table()) {
            Case scratch;
            if (k.name == tok.substr(2) && k.apply(next, scratch))
                return fmt::format("'{} {}': a knob and its value are joined by '=': write {}={}", tok, next, tok, next);
        }
        return std::nullopt;
    }

    /// Handles one token with the knob state of its file (or of the command line).
    void token(std::string_view tok, KnobState& st, const Loc& loc) {
        if (tok.starts_with('-') && !tok.starts_with("--")) {
            const std::string as_long = "-" + std::string(tok.substr(0, tok.find('=')));
            return error(loc, unknown_name("unknown option", tok, as_long, "the only short option is -v, or -vN; "));
        }
        if (!tok.starts_with("--")) return problem(tok, st, loc);
        const std::size_t eq = tok.find('=');
        const std::string_view name = tok.substr(2, eq == std::string_view::npos ? tok.npos : eq - 2);
        const bool has_value = eq != std::string_view::npos;
        const std::string_view value = has_value ? tok.substr(eq + 1) : std::string_view{};
        if (name == "reset") {
            if (has_value) return error(loc, fmt::format("--reset takes no value (got '{}')", tok));
            return reset(st);
        }
        if (name == "batch") {
            if (value.empty()) return error(loc, "--batch needs a file name (--batch=FILE)");
            return include(value, st, loc);
        }
        if (name == "random") {
            const auto n = parse_number<std::int64_t>(value);
            if (!has_value || !n || *n < 1 || *n > static_cast<std::int64_t>(kMaxCases))
                return error(loc, fmt::format("--random needs a case count from 1 to {} (--random=N), got '{}'",
                                      kMaxCases, value));
            return random(static_cast<std::size_t>(*n), st, loc);
        }
        if (name == "case") {
            if (value.empty()) return error(loc, "--case needs a graph file (--case=FILE.json)");
            return graph_case(value, st, loc);
        }
        const auto& table = knob_table();
        for (std::size_t k = 0; k < table.size(); ++k) {
            if (table[k].name != name) continue;
            if (!has_value)
                return error(loc, fmt::format("--{} needs a value (--{}={})", name, name, table[k].choices));
            auto values = knob_values(table[k], value, loc);
            if (!values) return;
            st[k] = std::move(*values);
            st.given[k] = true;
            return;
        }
        error(loc, unknown_name("unknown knob", tok.substr(0, eq), tok.substr(0, eq)));
    }

private:
    /// --reset: every problem knob back to its default; the run knobs keep their values.
    static void reset(KnobState& st) {
        KnobState fresh = default_state();
        const auto& table = knob_table();
        for (std::size_t k = 0; k < table.size(); ++k)
            if (table[k].run_knob) {
                fresh[k] = st[k];
                fresh.given[k] = st.given[k];
            }
        st = std::move(fresh);
    }

    /// The values of knob `knob`'s comma list `value`, in order: a range element gives each of its
    /// values, an expanding one (--cpu-isa=all) the values it stands for. Every element must be
    /// accepted: else nullopt, after the error of the first one that is not (the knob stays as it
    /// was). A bad value costs only the problems after it, on the command line too (parse_cases).
    std::optional<std::vector<KnobValue>> knob_values(const Knob& knob, std::string_view value, const Loc& loc) {
        std::vector<KnobValue> values;
        std::size_t pos = 0;
        while (true) {
            std::size_t comma = value.find(',', pos);
            const std::string_view v = value.substr(pos, comma == value.npos ? value.npos : comma - pos);
            if (knob.range != Knob::Range::none && v.find(':') != v.npos) {  // a range: its values
                if (!range_values(knob, v, loc, values)) return std::nullopt;
            } else if (const auto xs = knob.expand ? knob.expand(v) : std::vector<std::string>{}; !xs.empty()) {
                for (const std::string& x : xs) values.push_back({x, knob.parse(x)});  // --cpu-isa=all
            } else if (!one_value(knob, value, pos, comma, loc, values)) {
                return std::nullopt;
            }
            if (comma == value.npos) break;
            pos = comma + 1;
        }
        return values;
    }

    /// Appends the values of the range `v` (START:END[:STEP]) of `knob` to `values`; false after
    /// the error when the range or one of its values is not accepted.
    bool range_values(const Knob& knob, std::string_view v, const Loc& loc, std::vector<KnobValue>& values) {
        std::string why;
        const auto range = expand_range(v, knob.range == Knob::Range::integer, &why);
        if (!range) {
            error(loc, fmt::format("--{}: {}", knob.name, why), false);
            return false;
        }
        for (const std::string& x : *range) {
            Knob::Setter set = knob.parse(x);
            if (!set) {
                const std::string e = knob.explain ? knob.explain(x) : std::string();
                error(loc, !e.empty() ? e : fmt::format("--{}: range '{}' gives '{}', which is not a "
                        "value (accepted: {})", knob.name, v, x, knob.choices), false);
                return false;
            }
            values.push_back({x, std::move(set)});
        }
        return true;
    }

    /// Appends the value of `knob`'s list `value` that starts at `pos` and ends at `comma` to
    /// `values`. A value may itself hold commas (window:L,R): pieces are joined until one is
    /// accepted, and `comma` moves past them. False after the error when none is accepted.
    bool one_value(const Knob& knob, std::string_view value, std::size_t pos, std::size_t& comma, const Loc& loc,
            std::vector<KnobValue>& values) {
        std::string_view v = value.substr(pos, comma == value.npos ? value.npos : comma - pos);
        Knob::Setter set = knob.parse(v);
        for (std::size_t c2 = comma; !set && c2 != value.npos;) {
            c2 = value.find(',', c2 + 1);
            v = value.substr(pos, c2 == value.npos ? value.npos : c2 - pos);
            if ((set = knob.parse(v))) comma = c2;
        }
        if (!set) {
            v = value.substr(pos, comma == value.npos ? value.npos : comma - pos);
            if (v.starts_with("window:") && comma != value.npos) {  // the whole window:L,R that was meant
                const std::size_t next = value.find(',', comma + 1);
                v = value.substr(pos, next == value.npos ? value.npos : next - pos);
            }
            error(loc, unknown_value(knob, v), false);
            return false;
        }
        values.push_back({std::string(v), std::move(set)});
        return true;
    }

    /// Why `knob` refused `v`: its own explanation when it has one, else "unknown value" with the
    /// nearest accepted values (one or two) and the accepted ones.
    static std::string unknown_value(const Knob& knob, std::string_view v) {
        if (knob.explain)
            if (std::string why = knob.explain(v); !why.empty()) return why;
        auto near = did_you_mean(v, value_names(knob.choices));
        if (near.size() > 2) near.clear();  // 'Q' is as near to C, L, P and B: no suggestion
        return fmt::format("unknown value '{}' for --{} ({}accepted: {})", v, knob.name,
                near.empty() ? std::string() : fmt::format("did you mean {}? ", fmt::join(near, " or ")), knob.choices);
    }

public:
    /// Reads one file with its own copy of the knob state (changes end with the file). Tokens
    /// are joined as benchdnn's batch reader joins them: a token ending in '\' is continued by
    /// the next token (the '\' dropped; a lone '\' joins the tokens either side of it), over
    /// line ends and comment lines, and the joined token is located at its first piece. A logical
    /// line runs to the end of the first physical line that does not continue. A bad token costs
    /// only itself: a problem descriptor (or --batch, --case, --random) that does not parse is
    /// its own error and the rest of the line goes on. A knob that does not parse is its error,
    /// and every problem, --batch, --case or --random after it on its logical line is an error
    /// of its own that names the knob ("not run"): it would run with a knob value the author did
    /// not ask for. Nothing is dropped unreported.
    void file(const std::string& path, KnobState st) {
        FileReading f{std::move(st)};
        std::ifstream in(path);
        std::string line;
        for (std::size_t n = 1; std::getline(in, line); ++n) {
            std::string_view text = line;
            if (n == 1 && text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
            if (const auto hash = text.find('#'); hash != text.npos) text = text.substr(0, hash);
            for (const auto& [tok, col] : split_tokens(text)) file_token(f, tok, Loc{path, n, col});
        }
        if (f.cont && f.pend) {  // reported even when the logical line had an error before
            const std::string_view t = f.pend->text;
            f.pend->err = fmt::format("the file ends in a line continuation: nothing follows to be joined with '{}'",
                    t.size() > 60 ? fmt::format("{}...", t.substr(0, 60)) : std::string(t));
            f.pend->loc = f.cont_at;
            f.pend->group = ++f.group;
        }
        flush(f);
        if (f.dangling)  // the same rule as on the command line, as an error of this file
            error(f.dangling->loc, fmt::format("'{}' comes after the last problem of the file and would apply to "
                                               "nothing (knobs apply to the problems, --case and --batch files after "
                                               "them, and end with the file)", f.dangling->text));
    }

private:
    /// A token of a file, joined over its line continuations, waiting to be handled.
    struct Pending {
        std::string text;
        Loc loc;
        std::size_t group = 0;  ///< the logical line
        std::string err;        ///< when set, the token is this error instead
    };

    /// What file() carries from one token of its file to the next.
    struct FileReading {
        KnobState st;                       ///< the file's own copy of the knob state
        std::optional<Pending> pend{};      ///< the token being joined
        std::optional<Pending> dangling{};  ///< the last knob after the last problem, --case or --batch
        bool cont = false;                  ///< the pending token continues into the next one
        Loc cont_at{};                      ///< where its last '\' is
        std::size_t group = 0, last_line = 0;
        std::optional<Pending> bad_knob{};  ///< the knob error of the logical line being read
    };

    /// Takes the token `tok` at `at` of a file: joins it to the pending token (a continuation),
    /// or handles the pending one (flush) and makes `tok` the pending one.
    void file_token(FileReading& f, std::string_view tok, const Loc& at) {
        const bool lone = tok == "\\";
        if (f.cont) {
            f.pend->text += tok;
        } else if (!lone || !f.pend) {
            if (f.pend && f.pend->err.empty() && at.line == f.last_line && !lone)
                if (auto m = spaced_value(f.pend->text, tok)) {  // the value is part of its knob's error
                    f.pend->err = *m;
                    f.pend->text += " " + std::string(tok);
                    flush(f);
                    f.pend.reset();
                    f.last_line = at.line;
                    return;
                }
            flush(f);
            if (at.line != f.last_line) ++f.group;
            f.pend = Pending{lone ? std::string() : std::string(tok), at, f.group,
                lone ? "a line continuation with no token before it in the file to continue" : ""};
        }
        f.last_line = at.line;
        if (lone && !f.cont) {
            f.cont = true;  // a lone '\' joins the pending token with the next one
        } else {
            f.cont = f.pend->text.ends_with('\\');
            if (f.cont) f.pend->text.pop_back();
        }
        if (f.cont) f.cont_at = Loc{at.file, at.line, at.col + tok.size() - 1};
    }

    /// Handles the pending token of a file: as a token, or as its error; a problem, --batch,
    /// --case or --random after a knob of its logical line that did not parse is an error that
    /// names that knob instead.
    void flush(FileReading& f) {
        if (!f.pend) return;
        const Pending& pend = *f.pend;
        const std::string_view t = pend.text;
        const bool target = !t.starts_with("--") || t.starts_with("--batch=") || t.starts_with("--case=") ||
                            t.starts_with("--random=");
        if (f.bad_knob && f.bad_knob->group != pend.group) f.bad_knob.reset();
        if (f.bad_knob && target) {
            error(pend.loc, fmt::format("'{}' not run: the knob '{}' before it on its line ({}) did not parse",
                    t, f.bad_knob->text, f.bad_knob->loc.position()));
            f.dangling.reset();
            return;
        }
        const std::size_t before = errors_;
        if (!pend.err.empty()) error(pend.loc, pend.err);
        else token(pend.text, f.st, pend.loc);
        if (errors_ != before && !target && !t.empty()) f.bad_knob = pend;
        if (!pend.err.empty() || errors_ != before || !t.starts_with("--") || t.starts_with("--batch=") ||
                t.starts_with("--case=") || t.starts_with("--random="))
            f.dangling.reset();
        else
            f.dangling = pend;
    }

    std::vector<std::string> chain_;  ///< display paths of the files being read
    std::vector<fs::path> canon_;     ///< the same, canonical, for cycle detection
    std::size_t errors_ = 0;          ///< errors of the line being read (not of its includes)
    std::size_t cases_ = 0;           ///< cases emitted so far (bounded by kMaxCases)
    std::vector<std::string> options_;  ///< the global options' names, for "did you mean"

    /// An error entry at `loc`. On the command line it is a usage error (exit 2, nothing runs)
    /// unless `usage` is false: a bad problem descriptor costs only its own case there too.
    void error(const Loc& loc, const std::string& msg, bool usage = true) {
        CaseEntry e;
        e.usage = usage && loc.command_line();
        e.where = loc.where();
        e.error = escape_for_message(loc.command_line()
                        ? fmt::format("command line: error: {}", msg)
                        : fmt::format("{}:{}:{}: error: {}", loc.file, loc.line, loc.col, msg));
        entries.push_back(std::move(e));
        ++errors_;
    }

    /// "a -> b -> c": the include chain ending with `last`.
    std::string chain_with(const std::string& last) const {
        std::string s;
        for (const auto& p : chain_) s += p + " -> ";
        return s + last;
    }

    /// Where `name` (a --batch or --case path) is looked for, first match wins: as given when
    /// absolute or on the command line (the current directory); inside a file, relative to the
    /// including file's folder, then to each folder above it (benchdnn's convention: its batch
    /// files name cases from its inputs root, e.g. --case=complex_fusion/mha/X.json from
    /// complex_fusion/harness_mha_ci).
    static std::vector<fs::path> candidates(std::string_view name, const Loc& loc) {
        const fs::path n{std::string(name)};
        if (n.is_absolute() || loc.command_line()) return {n};
        std::vector<fs::path> out;
        std::error_code ec;
        fs::path rel = fs::path(loc.file).parent_path();  // spelled as the user spelled the file
        fs::path dir = fs::absolute(rel.empty() ? fs::path(".") : rel, ec).lexically_normal();
        if (dir.filename().empty()) dir = dir.parent_path();  // "a/b/" -> "a/b"
        while (true) {
            out.push_back((rel / n).lexically_normal());
            if (!dir.has_relative_path()) break;  // the filesystem root
            dir = dir.parent_path();
            rel /= "..";
        }
        return out;
    }

    /// A regular file or pipe that opens (a device such as /dev/zero would never end a line).
    static bool readable(const fs::path& p) {
        std::error_code ec;
        const auto type = fs::status(p, ec).type();
        return (type == fs::file_type::regular || type == fs::file_type::fifo) && std::ifstream(p).good();
    }

    /// The first readable candidate of `name`, or nullopt with `tried` listing them all.
    static std::optional<fs::path> resolve(std::string_view name, const Loc& loc, std::string& tried) {
        const auto places = candidates(name, loc);
        for (const auto& c : places)
            if (readable(c)) return c;
        tried.clear();
        for (const auto& c : places) tried += fmt::format("{}'{}'", tried.empty() ? "" : ", ", c.string());
        return std::nullopt;
    }

    /// "cannot open --KIND file 'NAME'" with the places tried when there were several.
    static std::string cannot_open(std::string_view kind, std::string_view name, const Loc& loc,
            const std::string& tried) {
        const auto places = candidates(name, loc);
        std::error_code ec;
        if (fs::is_directory(places[0], ec))
            return fmt::format("cannot open --{} file '{}': it is a directory", kind, places[0].string());
        if (places.size() == 1) return fmt::format("cannot open --{} file '{}'", kind, places[0].string());
        return fmt::format("cannot open --{} file '{}' (tried, relative to the including file and each folder above "
                           "it: {})", kind, name, tried);
    }

    /// Resolves `name` (candidates()), rejects cycles and unreadable files, then reads it.
    void include(std::string_view name, const KnobState& st, const Loc& loc) {
        std::string tried;
        const auto found = resolve(name, loc, tried);
        if (!found) {
            const std::string msg = cannot_open("batch", name, loc, tried);
            if (chain_.empty()) return error(loc, msg);
            return error(loc, fmt::format("{} (include chain: {})", msg,
                                  chain_with(candidates(name, loc).front().string())));
        }
        const fs::path& p = *found;
        const std::string shown = p.lexically_normal().string();
        std::error_code ec;
        fs::path canon = fs::weakly_canonical(p, ec);
        if (ec) canon = fs::absolute(p, ec).lexically_normal();
        for (const auto& c : canon_)
            if (c == canon) return error(loc, fmt::format("--batch cycle: {}", chain_with(shown)));
        chain_.push_back(shown);
        canon_.push_back(canon);
        const std::size_t errors_before = errors_;
        file(shown, st);
        errors_ = errors_before;  // the included file's own errors do not end the including line
        chain_.pop_back();
        canon_.pop_back();
    }

    /// --case=FILE.json: one case per combination of knob values, each imported from the file
    /// with its rewrites (--dt, --in-shapes, --mb) and seed. Path resolved like --batch.
    void graph_case(std::string_view name, const KnobState& st, const Loc& loc) {
        std::string tried;
        const auto found = resolve(name, loc, tried);
        if (!found) return error(loc, cannot_open("case", name, loc, tried));
        const std::string shown = found->lexically_normal().string();
        const auto& table = knob_table();
        // Only the knobs an imported case reads expand it (the rewrites, the fill, the dropout
        // values, the run knobs); the other problem knobs come from the graph, so their lists
        // would only repeat the same case.
        std::vector<std::size_t> span(table.size(), 1);
        for (std::size_t k = 0; k < table.size(); ++k)
            if (table[k].scope != Knob::Scope::descriptor)
                span[k] = st[k].size();
        std::vector<std::size_t> idx(table.size(), 0);
        while (true) {
            Case c;
            for (std::size_t k = 0; k < table.size(); ++k) st[k][idx[k]].set(c);
            c.graph_dropout = c.prb.dropout;
            GraphImport imp = import_onednn_json(shown,
                    GraphRewrites{c.graph_dt, c.in_shapes, c.mb, c.prb.dropout, c.dt_ids, c.op_kinds, c.properties,
                            c.op_attrs},
                    c.prb.seed);
            if (imp.prb) {
                imp.prb->fill = c.prb.fill;
                imp.prb->fp8 = c.prb.fp8;  // --dt=e4m3|e5m2 makes the graph fp8: its descales (validated)
                // A graph without Dropout ops ignores --dropout, and so does its repro.
                if (!imp.prb->dropout) c.graph_dropout.reset();
                c.prb = std::move(*imp.prb);
                c.graph_file = shown;
                c.where = loc.position();
                entries.push_back(CaseEntry{std::move(c), {}, false});
            } else {
                CaseEntry e;
                e.error = imp.error;
                e.status = imp.status;
                e.where = loc.where();
                c.graph_file = shown;
                e.repro = repro(c);
                entries.push_back(std::move(e));
            }
            std::size_t k = table.size();
            while (k > 0 && ++idx[k - 1] == span[k - 1]) idx[--k] = 0;
            if (k == 0) return;
        }
    }

    /// The error for a --case graph rewrite in force for `target` (a descriptor or --random=N),
    /// which has no graph: a graph-scope knob (--mb, --in-shapes, --op-kind, ...) off its default, or
    /// benchdnn's per-tensor --dt=ID:DT; nullopt when none is.
    static std::optional<std::string> graph_rewrite_given(const KnobState& st, std::string_view target) {
        const auto& table = knob_table();
        const std::string_view what =
                target.starts_with("--random=") ? "draws problem descriptors" : "is a problem descriptor";
        for (std::size_t k = 0; k < st.size(); ++k)
            for (const auto& [v, set] : st[k]) {
                if (table[k].id == KnobId::dt && v.find(':') != std::string::npos)
                    return fmt::format("--dt={} rewrites tensors of a --case graph by id; '{}' {} (use --reset, or a "
                                       "plain --dt)", v, target, what);
                if (table[k].scope == Knob::Scope::graph && v != table[k].def())
                    return fmt::format("--{}={} rewrites a --case graph; '{}' {} (use --reset)", table[k].name, v,
                            target, what);
            }
        return std::nullopt;
    }

    /// Which knobs --random draws and which the input gave (st.given), as rows of knob_table().
    struct RandomKnobs {
        std::size_t seed_k = 0;            ///< --seed's row: N problems per value
        std::vector<std::size_t> run_k;    ///< the run knobs' rows: expanded as for a descriptor
        std::size_t runs = 1;              ///< the run knobs' combinations
        std::vector<std::size_t> given_k;  ///< the problem knobs the input gave: one of their values per case
        std::vector<KnobId> given;         ///< the same knobs, by id
    };

    /// The rows of `st` as --random reads them (the graph-scope ones are refused before it:
    /// graph_rewrite_given).
    static RandomKnobs random_knobs(const KnobState& st) {
        const auto& table = knob_table();
        RandomKnobs rk;
        for (std::size_t k = 0; k < table.size(); ++k) {
            if (table[k].id == KnobId::seed) {
                rk.seed_k = k;
            } else if (table[k].run_knob) {
                rk.run_k.push_back(k);
                rk.runs *= st[k].size();
            } else if (st.given[k] && table[k].scope != Knob::Scope::graph) {  // graph ones: checked above
                rk.given_k.push_back(k);
                rk.given.push_back(table[k].id);
            }
        }
        return rk;
    }

    /// --random=N (driver/random_cases.hpp): for each --seed value, N problems drawn from it; a
    /// problem knob the input gave takes one of its values (drawn per case) instead of a drawn
    /// one; the run knobs (--backend, --mode) expand as for a descriptor.
    void random(std::size_t n, const KnobState& st, const Loc& loc) {
        const std::string tok = fmt::format("--random={}", n);
        if (auto why = graph_rewrite_given(st, tok)) return error(loc, *why);
        const RandomKnobs rk = random_knobs(st);
        std::size_t expands = n, total = 0;
        bool over = __builtin_mul_overflow(expands, st[rk.seed_k].size(), &expands) ||
                    __builtin_mul_overflow(expands, rk.runs, &expands) || __builtin_add_overflow(cases_, expands, &total);
        if (over || total > kMaxCases)
            return error(loc, fmt::format("'{}' draws {} cases with the current --seed, --backend and --mode lists, "
                                          "which brings the run to {} cases, past the limit of {} cases per run", tok,
                                          over ? std::string("too many") : fmt::format("{}", expands),
                                          over ? std::string("more than that") : fmt::format("{}", total), kMaxCases));
        cases_ = total;
        for (const KnobValue& seed_value : st[rk.seed_k]) {
            Case seeded;
            seed_value.set(seeded);
            const std::uint64_t seed = seeded.prb.seed;
            const RandomDraws draws(seed, n);
            for (std::size_t i = 0; i < n; ++i) {
                Case c = drawn_case(seed, n, i, draws, st, rk);
                if (auto why = make_valid(c.prb, rk.given)) {
                    error(loc, fmt::format("{} (--seed={}): draw {} with the given knobs is not a valid problem: {}",
                                  tok, seed, i, *why));
                    continue;
                }
                canonicalize_layouts(c.prb);
                c.where = loc.position();
                emit_runs(c, st, rk.run_k);
            }
        }
    }

    /// Draw `i` of `n` from `seed` with the given knobs' values (one of each list, drawn per case)
    /// in place of drawn ones, their prerequisites brought, and what the mask kind does not use
    /// cleared: not yet made valid (make_valid).
    static Case drawn_case(std::uint64_t seed, std::size_t n, std::size_t i, const RandomDraws& draws,
            const KnobState& st, const RandomKnobs& rk) {
        Case c;
        c.prb = random_problem(seed, n, i);
        const Mask drawn_mask = c.prb.mask;
        const auto apply_given = [&] {  // a given list: one of its values, drawn per case
            for (const std::size_t k : rk.given_k) {
                const auto v = draws.uniform(i, 0x1000 + k, 0, static_cast<std::int64_t>(st[k].size()) - 1);
                st[k][static_cast<std::size_t>(v)].set(c);
            }
        };
        apply_given();
        Problem& p = c.prb;
        bring_prerequisites(p, rk.given, draws, i);
        if (p.mask != drawn_mask) {  // the mask kind changed: its own knobs drawn for it, the given ones kept
            draw_mask_details(seed, n, i, p);
            apply_given();
        }
        fit_seq_lens(c, st);
        if (p.mask != Mask::window) p.window_left = p.window_right = 0;
        if (p.mask != Mask::bias) {  // the bias knobs mean nothing without a bias
            p.bias_shape = Problem{}.bias_shape;
            p.mask_fill = Problem{}.mask_fill;
        }
        canonicalize_layouts(p);
        return c;
    }

    /// The padding lengths of a drawn case: a given list of lengths sets B (and S at least its
    /// longest), drawn lengths follow that B and S, and --seq-len-*=random ones are drawn now.
    static void fit_seq_lens(Case& c, const KnobState& st) {
        Problem& p = c.prb;
        for (const bool q : {true, false}) {  // a given list of lengths sets B (and S at least its longest)
            const auto& lens = q ? p.seq_len_q : p.seq_len_kv;
            if (lens.empty() || !st.given[static_cast<std::size_t>(q ? KnobId::seq_len_q : KnobId::seq_len_kv)] ||
                    (q ? c.random_seq_len_q : c.random_seq_len_kv))
                continue;
            p.dims.B = static_cast<std::int64_t>(lens.size());
            std::int64_t& full = q ? p.dims.S_q : p.dims.S_kv;
            full = std::max(full, *std::max_element(lens.begin(), lens.end()));
        }
        for (auto* lens : {&p.seq_len_q, &p.seq_len_kv}) {  // drawn lengths follow that B and S
            if (lens->empty()) continue;
            const std::int64_t full = lens == &p.seq_len_q ? p.dims.S_q : p.dims.S_kv;
            lens->resize(static_cast<std::size_t>(p.dims.B), full);
            for (auto& v : *lens) v = std::min(v, full);
        }
        if (c.random_seq_len_q) p.seq_len_q = random_seq_lens(p.seed, 1, p.dims.B, p.dims.S_q);
        if (c.random_seq_len_kv) p.seq_len_kv = random_seq_lens(p.seed, 2, p.dims.B, p.dims.S_kv);
        c.random_seq_len_q = c.random_seq_len_kv = false;
    }

    /// Emits `c` once per combination of the values of the run knobs (rows `run_k`; the last
    /// varies fastest).
    void emit_runs(const Case& c, const KnobState& st, const std::vector<std::size_t>& run_k) {
        std::vector<std::size_t> idx(run_k.size(), 0);
        while (true) {
            Case run = c;
            for (std::size_t j = 0; j < run_k.size(); ++j) st[run_k[j]][idx[j]].set(run);
            entries.push_back(CaseEntry{std::move(run), {}, false});
            std::size_t j = run_k.size();
            while (j > 0 && ++idx[j - 1] == st[run_k[j - 1]].size()) idx[--j] = 0;
            if (j == 0) break;
        }
    }

    /// Emits the cases of a problem descriptor whose sizes may be ranges (driver/ranges.hpp): one
    /// descriptor after the other, in the range's order.
    void problem(std::string_view tok, const KnobState& st, const Loc& loc) {
        std::string why;
        const auto descriptors = expand_descriptor(tok, &why);
        if (!descriptors) return error(loc, fmt::format("bad problem descriptor {}", why), false);
        for (const std::string& d : *descriptors) {
            const std::size_t before = entries.size();
            one_problem(d, st, loc);
            if (entries.size() > before && !entries.back().c) return;  // an error: the rest would repeat it
        }
    }

    /// Emits one case per combination of knob values (the last knob varies fastest).
    void one_problem(std::string_view tok, const KnobState& st, const Loc& loc) {
        std::string name, err;
        const auto dims = parse_descriptor(tok, &name, &err);
        if (!dims) return error(loc, fmt::format("bad problem descriptor {}", err), false);
        if (auto why = graph_rewrite_given(st, tok)) return error(loc, *why, false);
        const auto& table = knob_table();
        std::size_t expands = 1;  // saturates at the limit
        for (const auto& values : st.values) expands = std::min(expands * values.size(), kMaxCases + 1);
        if (cases_ + expands > kMaxCases)
            return error(loc, fmt::format("'{}' expands to {}{} cases with the current knob lists, past the limit "
                                          "of {} cases per run", tok, expands > kMaxCases ? "more than " : "",
                                          std::min(expands, kMaxCases), kMaxCases), false);
        cases_ += expands;
        std::vector<std::size_t> idx(table.size(), 0);
        while (true) {
            Case c;
            for (std::size_t k = 0; k < table.size(); ++k) st[k][idx[k]].set(c);
            c.prb.dims = *dims;
            c.prb.name = name;
            if (c.random_seq_len_q) c.prb.seq_len_q = random_seq_lens(c.prb.seed, 1, dims->B, dims->S_q);
            if (c.random_seq_len_kv) c.prb.seq_len_kv = random_seq_lens(c.prb.seed, 2, dims->B, dims->S_kv);
            c.random_seq_len_q = c.random_seq_len_kv = false;
            // The bias shape means nothing without a bias; keep it canonical so the repro
            // (which omits it) gives back an equal problem.
            if (c.prb.mask != Mask::bias) c.prb.bias_shape = Problem{}.bias_shape;
            if (c.prb.mask != Mask::bias) c.prb.mask_fill = Problem{}.mask_fill;
            canonicalize_layouts(c.prb);  // one spelling per geometry, so the repro parses back equal
            c.where = loc.position();
            entries.push_back(CaseEntry{std::move(c), {}, false});
            std::size_t k = table.size();
            while (k > 0 && ++idx[k - 1] == st[k - 1].size()) idx[--k] = 0;
            if (k == 0) return;
        }
    }
};

}  // namespace

std::string case_language_help() {
    std::string s =
        "Case language (the same on the command line and in --batch files):\n"
        "  Knobs apply to the problem descriptors after them; a comma list (--dt=f32,bf16) expands\n"
        "  to the cross product over all knobs (the first knob below varies slowest). In files, '#'\n"
        "  starts a comment, and a token ending in '\\' is joined with the next one (benchdnn's line\n"
        "  continuation: the '\\' dropped, comment lines in between skipped).\n\n"
        "Knobs:\n";
    for (const Knob& k : knob_table())
        s += fmt::format("  --{}={}\n      {} (default: {})\n", k.name, k.choices, k.what,
                k.def().empty() ? std::string("\"\"") : k.def());
    s += "  Strides and layouts (--layout, --strides): every tensor is 4-D in the logical order\n"
         "  [B,H,S,D] (stats [B,H_q,S_q,1], bias [1|B,1|H_q,1|S_q,S_kv]); --layout sets the memory order\n"
         "  of the io tensors, --strides that of single tensors (strides in elements, [B,H,S,D] order).\n"
         "  Vendor buffers follow them; the gaps between strided rows are NaN-prefilled in outputs (a\n"
         "  write there FAILS) and hold a canary in inputs; an output must not overlap itself, an input\n"
         "  may (stride 0 broadcasts a dimension). Examples:\n"
         "    --layout=bshd                               [B,S,H,D] views (PyTorch's transposed tensors)\n"
         "    --strides=Q:qkv+K:qkv+V:qkv                 strides of views into one packed QKV buffer\n"
         "    --layout=bshd --strides=dO:bhsd+stats:bshd  dO unlike O; stats in [B,S_q,H_q] order\n"
         "    --strides=K:bhds                            K given transposed ([B,H,D,S] memory)\n"
         "    --strides=K:0x8192x64x1+V:0x8192x64x1       one K and V for every batch (stride 0 over B)\n";
    s += "  Dropout (--dropout=P:SEED:OFFSET): P_d = Z o P / (1-p) with Z the keep mask; O = P_d V; stats\n"
         "  of the undropped softmax; dS = P o (Z o dP / (1-p) - D). The reference is fed the vendor's own\n"
         "  mask (oneDNN: its Philox generator bit for bit; ref: sdpabench's). Each case also checks the\n"
         "  mask's keep rate and neighbour independence per head (binomial, false-alarm rate 1e-6 per\n"
         "  case), that no two heads share a mask, that seed + 1 changes the outputs, that p = 0 is bitwise\n"
         "  no dropout (with --fill=exact), and for fwd_bwd that the backward regenerated the forward's mask\n"
         "  (docs/knobs_dropout.md).\n";
    s += "  --random=N\n"
         "      N valid problems drawn from --seed across every knob (sizes with S = 1 and tails, GQA ratios\n"
         "      up to 8 and 7, D_qk != D_v, masks, bias shapes, padding, windows, scales, dtypes, directions,\n"
         "      layouts and strides, dMask, dropout), stratified so that every value of every knob appears\n"
         "      N/k times; problem knobs given before it are not drawn (a list: drawn from it); each case's\n"
         "      repro runs it alone (docs/knobs_run.md).\n";
    s += "  --case=FILE.json\n"
         "      import a oneDNN graph JSON file (benchdnn --graph format, path resolved like --batch):\n"
         "      an SDPA training forward or backward graph; --dt, --in-shapes, --mb rewrite it, --fill and\n"
         "      --seed fill it, --dropout gives its Dropout ops' values (default 0.1:SEED:1: the file has\n"
         "      none), the other problem knobs are taken from the graph\n"
         "  --batch=FILE\n"
         "      read FILE (in a file: relative to the including file, then to each folder above it, as\n"
         "      benchdnn resolves its inputs; on the command line: the current directory); knob changes\n"
         "      inside it end with it\n"
         "  --reset\n";
    std::string kept;  // the run knobs, from the knob table
    for (const Knob& k : knob_table())
        if (k.run_knob) kept += fmt::format("{}--{}", kept.empty() ? "" : ", ", k.name);
    s += fmt::format("      restore every problem knob to its default; the run knobs ({}) are kept,\n"
         "      so a file that starts with --reset still runs on the backend chosen on the command line\n\n", kept);
    s += "Problem descriptor: b<B>hq<H_q>hkv<H_kv>sq<S_q>skv<S_kv>dqk<D_qk>dv<D_v>[n=<name>]\n"
         "  sq and d (or dqk) are required; defaults: b1 hq1, hkv = hq, skv = sq, dv = dqk; d sets both\n"
         "  head sizes. Example: --dir=fwd_t,bwd --dt=bf16 --mask=causal_br b1hq32hkv8sq4096d128n=llama3-8b\n"
         "  Ranges: a size may be START:END[:STEP], STEP N or +N (add) or xN (multiply), expanded like a\n"
         "  comma list (b1hq32hkv8sq512:8192:x2d128: five problems); so may --seed, --scale and --mb.\n"
         "  The padding lists (--seq-len-q=N0:N1:...) use ':' too, as a list of lengths, not a range.\n";
    return s;
}

std::vector<CaseEntry> parse_cases(const std::vector<std::string>& tokens, const std::vector<std::string>& options) {
    Parser p(options);
    KnobState st = default_state();
    std::string dangling;               // last knob after the last problem, --case or --batch
    std::vector<std::string> batches;   // --batch files named on the command line that held no problem
    bool targets = false;               // a problem or --batch was given
    std::vector<std::string_view> toks;
    for (const std::string& arg : tokens)
        for (const auto& [tok, col] : split_tokens(arg)) toks.push_back(tok);
    std::string bad_knob;  // a knob whose value did not parse: the problems after it are not run
    for (std::size_t i = 0; i < toks.size(); ++i) {
        const std::string_view tok = toks[i];
        if (i + 1 < toks.size())
            if (auto m = Parser::spaced_value(tok, toks[i + 1])) {
                p.entries.push_back(CaseEntry{std::nullopt, escape_for_message("command line: error: " + *m), true});
                ++i;
                continue;
            }
        const bool target = tok.starts_with("--batch=") || tok.starts_with("--case=") || tok.starts_with("--random=") ||
                            !tok.starts_with("-");
        if (target && !bad_knob.empty()) {  // as in a batch file: the bad value costs these, not the run
            CaseEntry e;
            e.where = "command line";
            e.error = escape_for_message(fmt::format("command line: error: '{}' not run: the knob '{}' before it did "
                                                     "not parse", tok, bad_knob));
            p.entries.push_back(std::move(e));
            dangling.clear();
            targets = true;
            continue;
        }
        {
            const std::size_t before = p.entries.size();
            p.token(tok, st, Loc{});
            if (!target && p.entries.size() > before && !p.entries.back().usage) {  // a knob's bad value
                bad_knob = std::string(tok);
                continue;
            }
            const auto knob_name = [](std::string_view t) { return t.substr(0, t.find('=')); };
            const auto run_knob = [&](std::string_view t) {
                for (const Knob& k : knob_table())
                    if (k.run_knob && "--" + std::string(k.name) == knob_name(t)) return true;
                return false;
            };
            // The same knob given again with a good value, or --reset of a problem knob (back to its
            // default): the problems after it run.
            if (!target && p.entries.size() == before && !bad_knob.empty() &&
                    (knob_name(tok) == knob_name(bad_knob) || (tok == "--reset" && !run_knob(bad_knob))))
                bad_knob.clear();
            if (tok.starts_with("--batch=") && p.entries.size() == before)  // a file without a problem
                batches.emplace_back(std::string(tok.substr(8)));
            if (tok.starts_with("--batch=") || tok.starts_with("--case=") || tok.starts_with("--random=") ||
                    !tok.starts_with("-")) {
                dangling.clear();
                targets = true;
            } else if (tok.starts_with("--")) {
                dangling = std::string(tok);
            }
        }
    }
    if (!dangling.empty() && targets)
        p.entries.push_back(CaseEntry{std::nullopt,
                escape_for_message(fmt::format("command line: error: '{}' comes after the last problem and would "
                                               "apply to nothing (knobs apply to the problems, --case and --batch "
                                               "files after them)", dangling)),
                true});
    // --mode=L on the command line lists the whole run, whatever mode a batch file sets (each
    // listed case keeps the mode it would run in, which its repro names).
    if (std::find(toks.begin(), toks.end(), std::string_view("--mode=L")) != toks.end())
        for (CaseEntry& e : p.entries)
            if (e.c) e.c->list_only = true;
    if (!batches.empty())  // a usage error even beside other problems: a file meant to hold cases holds none
        p.entries.push_back(CaseEntry{std::nullopt,
                escape_for_message(fmt::format("command line: error: {}--batch file '{}' holds no problem descriptor",
                        p.entries.empty() ? "no problem given: " : "", fmt::join(batches, "', '"))),
                true});
    return std::move(p.entries);
}

}  // namespace sdpa
