#include "reports/store_reporter.hpp"

#include "reports/jsonl_reporter.hpp"

namespace sdpa {

StoreReporter::StoreReporter(const StoreUrl& url) : store_(url) {}

void StoreReporter::begin(const RunContext& ctx) { store_.begin_part(context_record(ctx).at("context")); }

void StoreReporter::on_case(const CaseResult& r) { store_.add_case(json_record(r)); }

void StoreReporter::end(const Summary&) { store_.finish_part(); }

}  // namespace sdpa
