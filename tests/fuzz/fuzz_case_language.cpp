// libFuzzer target for the case language (driver/case_parser.hpp): the input is written to a
// case file and parsed through --batch, then parsed again as command-line text. Whatever the
// bytes, parse_cases must return entries (cases or errors) without crashing, hanging or
// tripping ASan/UBSan; every error must be one printable line; every case's repro must parse
// back to the same problem.
//
// The JSON importer has its own target, fuzz_json_import.cpp.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "driver/case_parser.hpp"

namespace {

/// A private directory for this process's case file (parallel fuzzing jobs do not collide).
const std::filesystem::path& work_dir() {
    static const std::filesystem::path dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("sdpabench-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

void check(const std::vector<sdpa::CaseEntry>& entries) {
    for (const auto& e : entries) {
        if (e.c) {
            // Round trip: the repro of every case parses back to the same problem.
            const auto back = sdpa::parse_cases({sdpa::repro(*e.c)});
            if (back.size() != 1 || !back[0].c || !(back[0].c->prb == e.c->prb)) std::abort();
            continue;
        }
        if (e.error.empty()) std::abort();
        for (const char ch : e.error)  // escaped: no control bytes in a message
            if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto file = work_dir() / "input.cases";
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out << text;
    }
    check(sdpa::parse_cases({"--batch=" + file.string()}));
    // The same bytes as command-line text (whitespace-separated tokens, no comments).
    check(sdpa::parse_cases({text}));
    return 0;
}
