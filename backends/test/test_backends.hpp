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

/// The kinds of test:KIND (backends/registry.hpp kTestPrefix): "sleep" (execute() sleeps for an
/// hour: a hung vendor call), "segv" (execute() raises SIGSEGV: a crashing vendor call),
/// "stateful" (the reference, but every case after the first of a process FAILS: a vendor broken
/// by its own state), "fp8" (the reference backend's plan, fp8 cases included: the fp8 path
/// end to end without a GPU) and "slow" (the reference, each run stretched by busy waiting to
/// SDPABENCH_TEST_SLOWDOWN times its time: a planted slowdown for scripts/ab_interleave.py's
/// tests), "orphan" (the reference, but each prepare leaves a process behind that sleeps for an
/// hour holding the case's descriptors: what --isolate's wait must not hang on) and "device" (the
/// reference on a simulated device of SDPABENCH_TEST_DEVICE_BYTES: the device-memory guard and a
/// device out of memory without a GPU). Without --isolate, test:segv kills the whole run and test:sleep hangs it: that is what
/// they are for.
std::vector<std::string> test_backend_kinds();

/// "test:sleep: a vendor call that hangs (...); test:segv: ...": each test backend's name and
/// what it is, in test_backend_kinds() order (the --backend knob's help).
std::string test_backends_help();

/// The test backends that hang or crash a run without --isolate ("test:sleep", "test:segv").
std::vector<std::string> test_backends_needing_isolate();

/// How many times a test:device backend of this process was asked its device_name(): the check
/// that a run which forks children never queries a device first (driver/run_context.hpp).
int test_device_queries();

/// The test backend test:KIND for `kind`, called test:KIND (backends/registry.hpp kTestPrefix), or
/// nullptr when it is not one of test_backend_kinds().
std::unique_ptr<Backend> make_test_backend(std::string_view kind);

}  // namespace sdpa
