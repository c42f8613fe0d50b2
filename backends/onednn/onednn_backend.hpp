// oneDNN Graph API backend (CPU engine).
#pragma once

#include <memory>
#include <string_view>

#include "backends/backend.hpp"

namespace sdpa {

/// The oneDNN backend. Creating it touches no library state; the CPU engine is created on the
/// first run(). With the SYCL CPU runtime of Intel's wheels, the OpenCL ICD loader is pointed
/// at the wheel's CPU runtime (OCL_ICD_FILENAMES) unless the user already set it. `name`: its
/// registry row's (backends/registry.cpp), the one place that spells it.
std::unique_ptr<Backend> make_onednn_backend(std::string_view name);

}  // namespace sdpa
