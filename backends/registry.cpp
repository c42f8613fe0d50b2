// The only place that knows which backends are compiled in.
#include "backends/backend.hpp"

#include <fmt/format.h>

#include "backends/faulty/faulty_backend.hpp"
#ifdef SDPABENCH_HAVE_ONEDNN
#include "backends/onednn/onednn_backend.hpp"
#endif
#include "backends/ref/ref_backend.hpp"
#ifdef SDPABENCH_HAVE_CUDNN
#include "backends/cudnn/cudnn_backend.hpp"
#endif
#include "backends/test/test_backends.hpp"
#include "backends/torch/torch_backend.hpp"

namespace sdpa {

std::vector<std::string> backend_names() {
    std::vector<std::string> names;
#ifdef SDPABENCH_HAVE_ONEDNN
    names.push_back("onednn");
#endif
#ifdef SDPABENCH_HAVE_CUDNN
    names.push_back("cudnn");
#endif
#ifdef SDPABENCH_HAVE_TORCH
    for (const TorchVariantInfo& v : kTorchVariants) names.push_back(fmt::format("torch:{}", v.name));
#endif
    names.push_back("ref");
    return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
#ifdef SDPABENCH_HAVE_ONEDNN
    if (name == "onednn") return make_onednn_backend();
#endif
    if (name == "ref") return std::make_unique<RefBackend>();
#ifdef SDPABENCH_HAVE_CUDNN
    if (name == "cudnn") return make_cudnn_backend();
#endif
#ifdef SDPABENCH_HAVE_TORCH
    if (auto torch = make_torch_backend(name)) return torch;  // "torch:VARIANT"
#endif
    if (auto faulty = make_faulty_backend(name)) return faulty;  // "faulty:KIND"
    return make_test_backend(name);  // test-only kinds ("test:*"), not in backend_names(); else nullptr
}

}  // namespace sdpa
