// libFuzzer target for the oneDNN graph JSON importer (graph/json_import.hpp): the
// input bytes are imported as a graph file, as they are and with the benchdnn rewrites --dt
// and --mb. Whatever the bytes, the importer must return a problem or a status with a
// one-line error, without crashing, hanging or tripping ASan/UBSan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "graph/json_import.hpp"

namespace {

void check(const sdpa::GraphImport& g) {
    if (g.prb) return;
    if (g.error.empty() || !sdpa::is_error(g.status)) std::abort();  // a refusal must say why
    for (const char ch : g.error)
        if (ch == '\n' || ch == '\0') std::abort();  // one line
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    check(sdpa::import_onednn_json_text(text, "fuzz.json", {}, 1));
    sdpa::GraphRewrites rw;
    rw.dt = sdpa::DType::bf16;
    rw.mb = 2;
    check(sdpa::import_onednn_json_text(text, "fuzz.json", rw, 7));
    return 0;
}
