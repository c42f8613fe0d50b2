// The cuDNN backend: SDPA forward (fwd_i, fwd_t) and backward (bwd) through the cuDNN frontend
// graph API on an NVIDIA GPU. libcudnn is loaded at run time (the frontend's dynamic loading) and
// the CUDA runtime is linked statically, so the binary starts on machines without a GPU or
// driver; there, support() answers SKIPPED with the CUDA runtime's reason.
#pragma once

#include <memory>
#include <string_view>

#include "backends/backend.hpp"

namespace sdpa {

/// A new cuDNN backend (cheap: touches no device until support()/prepare()) called `name`, its
/// registry row's (backends/registry.cpp), the one place that spells it.
std::unique_ptr<Backend> make_cudnn_backend(std::string_view name);

}  // namespace sdpa
