// The only place that knows which backends are compiled in.
#include "backends/backend.hpp"
#include "backends/onednn/onednn_backend.hpp"
#include "backends/ref/ref_backend.hpp"
#ifdef SDPABENCH_HAVE_CUDNN
#include "backends/cudnn/cudnn_backend.hpp"
#endif

namespace sdpa {

std::vector<std::string> backend_names() {
#ifdef SDPABENCH_HAVE_CUDNN
    return {"onednn", "cudnn", "ref"};
#else
    return {"onednn", "ref"};
#endif
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
    if (name == "onednn") return make_onednn_backend();
    if (name == "ref") return std::make_unique<RefBackend>();
#ifdef SDPABENCH_HAVE_CUDNN
    if (name == "cudnn") return make_cudnn_backend();
#endif
    return nullptr;
}

}  // namespace sdpa
