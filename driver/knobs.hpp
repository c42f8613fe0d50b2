// The knob table of the case language: the one place that knows each value knob's spelling,
// accepted values, default, description, setter and printer. Parsing and expansion
// (driver/case_parser.cpp), the repro line, --help, README's knob table (--list-knobs=md, checked
// by the README test) and the bad-input manifest's accepted-value lists (--list-knobs=tsv) all
// read it, and so do the random generator and the minimizer through each row's hooks (KnobHooks),
// so adding a knob is one row here plus the code that uses its value.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_table.hpp"
#include "driver/case.hpp"

namespace sdpa {

struct KnobDraw;   // driver/random_cases.hpp: one drawn case's value streams
struct KnobNeeds;  // driver/random_cases.hpp: a drawn case and the knobs its line gave

/// Every value knob of the case language, in the knob table's order. Code that names a knob
/// (the rows' hooks in driver/knobs.cpp, driver/case_parser.cpp) names it by id, and its spelling
/// lives here only: a renamed knob cannot leave a stale string behind.
enum class KnobId {
    dir, dt, mask, mask_shape, mask_dt, mask_fill, scale, scale_op, scale_dt, scale_property, mask_form,
    dmask, fill, seed, mb, in_shapes, op_kind, op_attrs, tensor_property, seq_len_q, seq_len_kv, layout,
    strides, deterministic, ragged, fp8_descale, expected_n_partitions, dropout, dropout_property, backend,
    mode, check, cpu_isa,
};

/// The spelling of each knob (without the leading "--"), in KnobId order.
inline constexpr auto kKnobNames = std::to_array<EnumName<KnobId>>({
    {KnobId::dir, "dir"},
    {KnobId::dt, "dt"},
    {KnobId::mask, "mask"},
    {KnobId::mask_shape, "mask-shape"},
    {KnobId::mask_dt, "mask-dt"},
    {KnobId::mask_fill, "mask-fill"},
    {KnobId::scale, "scale"},
    {KnobId::scale_op, "scale-op"},
    {KnobId::scale_dt, "scale-dt"},
    {KnobId::scale_property, "scale-property"},
    {KnobId::mask_form, "mask-form"},
    {KnobId::dmask, "dmask"},
    {KnobId::fill, "fill"},
    {KnobId::seed, "seed"},
    {KnobId::mb, "mb"},
    {KnobId::in_shapes, "in-shapes"},
    {KnobId::op_kind, "op-kind"},
    {KnobId::op_attrs, "op-attrs"},
    {KnobId::tensor_property, "tensor-property"},
    {KnobId::seq_len_q, "seq-len-q"},
    {KnobId::seq_len_kv, "seq-len-kv"},
    {KnobId::layout, "layout"},
    {KnobId::strides, "strides"},
    {KnobId::deterministic, "deterministic"},
    {KnobId::ragged, "ragged"},
    {KnobId::fp8_descale, "fp8-descale"},
    {KnobId::expected_n_partitions, "expected-n-partitions"},
    {KnobId::dropout, "dropout"},
    {KnobId::dropout_property, "dropout-property"},
    {KnobId::backend, "backend"},
    {KnobId::mode, "mode"},
    {KnobId::check, "check"},
    {KnobId::cpu_isa, "cpu-isa"},
});
inline std::string_view format_as(KnobId v) { return enum_name(kKnobNames, v); }

/// What a problem knob means to the random generator and the minimizer, beside its parser and
/// printer: each hook is optional, and a knob without hooks is never drawn (it keeps its default in
/// every --random case), never dropped, and shrunk toward its default.
struct KnobHooks {
    /// Draws the knob's value into a --random case (driver/random_cases.cpp random_problem() calls
    /// the hooks in table order, after the dims). A new knob draws from its own stream
    /// (KnobDraw::own), so that existing draws keep their values.
    void (*draw)(Problem& p, const KnobDraw& d) = nullptr;
    /// What the knob's given value needs in a drawn case (a --dmask=true a bias and a backward),
    /// brought unless the line gave that too (KnobNeeds::given); called when the line gave the knob.
    void (*needs)(Problem& p, const KnobNeeds& n) = nullptr;
    /// The simpler spellings the minimizer tries for `c`'s value, plainest first; nullptr: the
    /// default, when the value differs from it. The minimizer repairs a candidate with make_valid().
    std::vector<std::string> (*simpler)(const Case& c) = nullptr;
    /// make_valid()'s place for resetting the knob to its default when a drawn or shrunk problem is
    /// invalid: 1 first (the features that depend on others), 0 never.
    int drop = 0;
};

/// One value knob of the case language.
struct Knob {
    /// Which cases the knob means something for: a problem descriptor (and --random), an
    /// imported --case graph (benchdnn's graph rewrites), or both.
    enum class Scope { descriptor, graph, both };
    /// A numeric knob whose list elements may be ranges START:END[:STEP] (driver/ranges.hpp):
    /// none, whole numbers or f32 numbers.
    enum class Range { none, integer, real };

    /// Sets one parsed value on a case.
    using Setter = std::function<void(Case&)>;

    KnobId id;
    std::string choices;    ///< accepted values, for errors, --help and README
    std::string_view what;  ///< one-line description for --help and README
    /// Parses `v` once into the typed value and returns what sets it on a case; empty when `v` is
    /// not accepted. The parser keeps these per knob value, so an expansion parses nothing again.
    Setter (*parse)(std::string_view v);
    /// The spelling of `c`'s value, which parse() reads back to the same value. The default is
    /// print(Case{}); the repro line names the knob when print(c) differs from it.
    std::string (*print)(const Case& c);
    Scope scope = Scope::descriptor;
    bool run_knob = false;  ///< says how to run (backend, mode), not what: --reset keeps it
    /// Optional: why `v` was refused, when more can be said than "unknown value" (e.g. a
    /// number out of range); "" falls back to the generic message.
    std::string (*explain)(std::string_view v) = nullptr;
    Range range = Range::none;
    /// Optional: the values one spelled value stands for, in order (--cpu-isa=all: every level
    /// this CPU has); empty when `v` stands for itself. The parser expands it like a comma list.
    std::vector<std::string> (*expand)(std::string_view v) = nullptr;
    KnobHooks hooks{};    ///< the generator's and the minimizer's view of the knob; set with with()
    std::string def_{};  ///< set by knob_table() from print(Case{}); read through def()
    std::string_view name{};  ///< without the leading "--": kKnobNames's spelling of id, set by knob_table()

    /// The default spelling: print(Case{}), computed once when the table is built.
    const std::string& def() const { return def_; }
    /// parse(v) applied to `c`; false (c unchanged) when `v` is not accepted.
    bool apply(std::string_view v, Case& c) const;
    /// True when the knob means something for `c` (a --case graph or a descriptor case).
    bool applies_to(const Case& c) const;
    /// `p` with the knob at its default (apply(def()) on a case holding `p`).
    void reset(Problem& p) const;
    /// The row with its hooks: a row of knob_table() reads `Knob{...}.with({.draw = ...})`.
    Knob with(KnobHooks h) && {
        hooks = h;
        return std::move(*this);
    }
};

/// The value knobs in cross-product order (the first varies slowest) and repro order (run knobs
/// first there); row k is the knob kKnobNames[k] names.
const std::vector<Knob>& knob_table();

/// The row of knob `id`.
const Knob& knob(KnobId id);

/// The problem knobs of `p` that differ from their defaults, as "--dir=bwd --dt=bf16 ..." (the
/// descriptor scope's rows, table order); "" when all are at their defaults.
std::string knobs(const Problem& p);

/// The case with every knob that applies to it spelled, defaults included (--dt as the type, f32
/// for a descriptor case's default), in repro order (run knobs first), then its descriptor (or
/// --case=FILE): "--backend=onednn --mode=C --cpu-isa=default --dir=fwd_t --dt=f32 ... b1hq2sq64d64".
/// What --match searches besides the id.
std::string canonical(const Case& c);

/// The knob table for people: "md" a markdown table (knob, values, default, description; README's
/// knob table between its knob-table markers), "tsv" one line per knob NAME<TAB>CHOICES<TAB>DEFAULT
/// (the bad-input manifest's {choices:NAME} placeholders). nullopt for another format.
std::optional<std::string> knob_table_text(std::string_view format);

/// The knob table for scripts (--list-knobs=json): a JSON array, in table order, of one object per
/// knob, {"name": "dir", "choices": "fwd_i|fwd_t|bwd|fwd_bwd", "default": "fwd_t", "what": "...",
/// "run_knob": false, "scope": "descriptor"} (the tsv form's values; scope: descriptor, graph or both).
std::string knob_table_json();

}  // namespace sdpa
