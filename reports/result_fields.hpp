// The one description of a case result (docs/perf_and_reports.md#result-fields): every field a
// report shows, with its key, its meaning, how to read it from the result and how to set it back.
// The CSV columns, the perf-template fields, the JSONL record and the --isolate pipe
// (driver/isolation.cpp, which sends the JSONL record and reads it back) are all these tables, so
// a field added here appears in every report and survives every pipe: one row.
//   result_fields()   the scalar fields of CaseResult (CSV columns, templates, JSONL keys) and its
//                     lists (JSONL only: notes, perf.samples_ms)
//   check_fields()    one OutputCheck: JSONL "outputs"[k]
//   dropout_fields()  the DropoutReport: JSONL "dropout_checks"
//   minimize_fields() the MinimizeReport: JSONL "minimized"
//   impl_part_fields() one implementation inside the plan (core/implementation.hpp): JSONL "impl_parts"[k]
//   tensor_fields()   one tensor as bound to the vendor: JSONL "tensors"[k]
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "reports/case_result.hpp"

namespace sdpa {

/// A field's value: absent (CSV and templates print nothing, JSONL null), text, an integer, a
/// number, a flag, or a list (an index such as (b,h,i,j), samples, notes).
using FieldValue = std::variant<std::monostate, std::string, std::int64_t, double, bool, std::vector<std::int64_t>,
        std::vector<double>, std::vector<std::string>>;

/// One field of a record of type R: its JSONL key, one line saying what it is (and its unit), how
/// to read it, and how to set it from what get() gave (null for a field derived on demand from
/// others, e.g. shown_status or tflops, which is recomputed rather than carried).
template <class R>
struct Field {
    std::string key;
    std::string what;
    std::function<FieldValue(const R&)> get;
    std::function<void(R&, const FieldValue&)> set;
};

/// Where a field sits in a JSONL record: at the top, or in the "perf" object (present when the
/// case was timed, else "perf": null), or in the "phases_ms" object.
enum class FieldGroup { top, perf, phases };

/// One field of a case result.
struct ResultField {
    std::string column;   ///< CSV column, perf-template %field%, JSONL key at the top level
    FieldGroup group;     ///< JSONL group
    std::string key;      ///< JSONL key inside the group (the column at the top level)
    std::string what;     ///< one line for the README and --help: meaning and unit
    std::function<FieldValue(const CaseResult&)> get;
    /// Sets the field from a value get() gave; null for a field derived from others.
    std::function<void(CaseResult&, const FieldValue&)> set;
    /// A CSV column and perf-template field; false for the lists only JSONL carries (notes, samples_ms).
    bool column_field = true;
};

/// Every field, in CSV column order (new fields are appended, so old columns keep their place);
/// the JSONL-only lists (column_field false) after them.
const std::vector<ResultField>& result_fields();

/// The field whose column is `column` (a column field), or nullptr.
const ResultField* find_result_field(std::string_view column);

/// The fields of one output's check (OutputCheck), in JSONL order.
const std::vector<Field<OutputCheck>>& check_fields();

/// The fields of the dropout checks (DropoutReport); the mask statistics are absent when there are
/// none (p = 0).
const std::vector<Field<DropoutReport>>& dropout_fields();

/// The fields of a --minimize report (MinimizeReport).
const std::vector<Field<MinimizeReport>>& minimize_fields();

/// The fields of one implementation inside a plan (ImplPart), in JSONL order.
const std::vector<Field<ImplPart>>& impl_part_fields();

/// The fields of one tensor as a plan bound it (BoundTensor), in JSONL order.
const std::vector<Field<BoundTensor>>& tensor_fields();

/// A value as CSV prints it: text as is, integers and flags (true/false) in decimal, numbers in
/// the shortest form that reads back equal, lists space-separated, nothing when absent.
std::string csv_text(const FieldValue& v);

}  // namespace sdpa
