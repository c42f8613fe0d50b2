// The one description of a case result's scalar fields: the CSV columns, the JSONL keys and the
// perf-template fields are all this table (docs/perf_and_reports.md#result-fields), so a field added here appears in
// every report. Structured parts (per-output checks, dropout statistics, samples, notes) are the
// JSONL reporter's own; the --isolate pipe carries the whole CaseResult (driver/isolation.cpp),
// and Isolation.IsolatedResultEqualsInProcessFieldByField holds it to every JSONL field.
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
/// number or a flag.
using FieldValue = std::variant<std::monostate, std::string, std::int64_t, double, bool>;

/// Where a field sits in a JSONL record: at the top, or in the "perf" object (present when the
/// case was timed, else "perf": null), or in the "phases_ms" object.
enum class FieldGroup { top, perf, phases };

/// One scalar field of a case result.
struct ResultField {
    std::string column;   ///< CSV column, perf-template %field%, JSONL key at the top level
    FieldGroup group;     ///< JSONL group
    std::string key;      ///< JSONL key inside the group (the column at the top level)
    std::string what;     ///< one line for the README and --help: meaning and unit
    std::function<FieldValue(const CaseResult&)> get;
};

/// Every field, in CSV column order (new fields are appended, so old columns keep their place).
const std::vector<ResultField>& result_fields();

/// The field whose column is `column`, or nullptr.
const ResultField* find_result_field(std::string_view column);

/// A value as CSV prints it: text as is, integers and flags (true/false) in decimal, numbers in
/// the shortest form that reads back equal, nothing when absent.
std::string csv_text(const FieldValue& v);

}  // namespace sdpa
