// Internals of the oneDNN graph JSON import: the ops and tensors as the file gives them,
// parsing, topological order and producer/consumer lookups. Errors are thrown as ImportError
// and turned into a GraphImport by graph/json_import.cpp (the only catcher).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/problem.hpp"
#include "graph/sdpa_graph.hpp"
#include "core/status.hpp"

namespace sdpa::graph_json {

using nlohmann::json;
using dims_t = std::vector<std::int64_t>;

/// A rejected import: status and message (without the "FILE: error: " prefix). Thrown by the
/// import internals, caught only by import_onednn_json_text().
struct ImportError {
    Status status;
    std::string msg;
};

/// Throws INVALID_ARGUMENTS (the file is wrong or not an SDPA training graph).
[[noreturn]] inline void invalid(std::string msg) { throw ImportError{Status::invalid_arguments, std::move(msg)}; }
/// Throws UNIMPLEMENTED (an SDPA graph sdpabench cannot express).
[[noreturn]] inline void unimplemented(std::string msg) { throw ImportError{Status::unimplemented, std::move(msg)}; }

/// One logical tensor as the file gives it. `property` is its "property_type" ("undef" when
/// absent; "host_scalar" for the rank-0 scalars of the Dropout ops, "constant", ...).
struct RawTensor {
    std::size_t id = 0;
    std::string dtype, layout, property;
    dims_t shape, stride;
};

/// One op as the file gives it.
struct RawOp {
    std::size_t id = 0;
    std::string name, kind;
    json attrs;
    std::vector<RawTensor> ins, outs;

    /// "op ID (KIND 'NAME')", the way every import error names an op.
    std::string where() const { return fmt::format("op {} ({} '{}')", id, kind, name); }
};

/// The ops of root["graph"] (ids, kinds, names, attrs, tensors); fails on missing or
/// mistyped fields naming the op, and on an fpmath_mode other than strict (UNIMPLEMENTED).
std::vector<RawOp> parse_ops(const json& root);

/// The ops in topological order (Kahn's algorithm over producer -> consumer edges); fails on
/// a duplicate op id, a tensor produced twice or a cycle (naming an op on it).
std::vector<RawOp> topo_sort(std::vector<RawOp> ops);

/// Every occurrence of a tensor id (as one op's output and other ops' inputs) must give the same
/// dtype and shape; fails INVALID_ARGUMENTS naming the tensor and both ops.
void check_tensors(const std::vector<RawOp>& ops);

/// DType of "f32" / "bf16" / "f16"; nullopt for any other type name.
std::optional<DType> float_dtype(const std::string& s);

/// The property_type values oneDNN's graph JSON defines (undef, variable, constant, host_scalar),
/// as a set and as the list errors print ("undef, variable, constant, host_scalar").
const std::set<std::string>& property_types();
const std::string& property_type_list();

/// The op with id `id`; fails INVALID_ARGUMENTS "--KNOB: no op ID in the graph" without one.
RawOp& op_by_id(std::vector<RawOp>& ops, std::size_t id, std::string_view knob);

/// True for the op kinds the SDPA training patterns use.
bool known_kind(const std::string& k);

/// The graph with producer/consumer lookups and the set of ops the match used.
class Graph {
public:
    explicit Graph(std::vector<RawOp> ops) : ops_(std::move(ops)) {
        for (std::size_t i = 0; i < ops_.size(); ++i) {
            for (const auto& t : ops_[i].outs) producer_[t.id] = i;
            for (const auto& t : ops_[i].ins) consumers_[t.id].push_back(i);
        }
    }
    const std::vector<RawOp>& ops() const { return ops_; }
    bool is_input(const RawTensor& t) const { return !producer_.count(t.id); }
    /// The op that produces t (nullptr for a graph input).
    const RawOp* producer(const RawTensor& t) const {
        const auto it = producer_.find(t.id);
        return it == producer_.end() ? nullptr : &ops_[it->second];
    }
    std::vector<const RawOp*> consumers(const RawTensor& t) const {
        std::vector<const RawOp*> v;
        if (const auto it = consumers_.find(t.id); it != consumers_.end())
            for (const std::size_t i : it->second) v.push_back(&ops_[i]);
        return v;
    }
    /// The single consumer of t; fails naming `from` when there is none or several.
    const RawOp& sole_consumer(const RawTensor& t, const RawOp& from, std::string_view what) const {
        const auto c = consumers(t);
        if (c.size() != 1)
            invalid(fmt::format("{}: its output {} ({}) has {} consumers, the SDPA pattern needs exactly 1", from.where(),
                    t.id, what, c.size()));
        return *c.front();
    }
    void use(const RawOp& op) { used_.insert(op.id); }
    bool used(const RawOp& op) const { return used_.count(op.id) != 0; }

private:
    std::vector<RawOp> ops_;
    std::map<std::size_t, std::size_t> producer_;
    std::map<std::size_t, std::vector<std::size_t>> consumers_;
    std::set<std::size_t> used_;
};

}  // namespace sdpa::graph_json
