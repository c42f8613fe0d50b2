// Test-only backends that misbehave on purpose, so the end-to-end tests can prove that
// --timeout-per-case and --isolate turn a hang or a crash into one FAILED case. Their names
// start with "test:"; --help lists them under a "test-only" heading, never as real backends.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace sdpa {

/// "test:sleep" (execute() sleeps for an hour: a hung vendor call), "test:segv" (execute()
/// raises SIGSEGV: a crashing vendor call), "test:stateful" (the reference, but every case
/// after the first of a process FAILS: a vendor broken by its own state) and "test:fp8" (the
/// reference backend's plan, fp8 cases included: the fp8 path end to end without a GPU) and
/// "test:slow" (the reference, each run stretched by busy waiting to SDPABENCH_TEST_SLOWDOWN
/// times its time: a planted slowdown for scripts/ab_interleave.py's tests). Without --isolate,
/// test:segv kills the whole run and test:sleep hangs it: that is what they are for.
std::vector<std::string> test_backend_names();

/// The test backend called `name`, or nullptr when `name` is not one of test_backend_names().
std::unique_ptr<Backend> make_test_backend(std::string_view name);

}  // namespace sdpa
