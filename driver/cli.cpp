#include "driver/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/faulty/faulty_backend.hpp"
#include "driver/case_parser.hpp"

namespace sdpa {

namespace {

std::string footer() {
    return fmt::format(
            "\n{}\n"
            "BACKENDS: {}\n"
            "FAULT INJECTION (the reference with one bug, for self-tests): {}\n\n"
            "OUTPUT: one line per case, '<idx>:<STATUS>[ (reason)] (<ms> ms) __REPRO: <repro>', then\n"
            "  'tests:N passed:N skipped:N mistrusted:N unimplemented:N invalid_arguments:N failed:N listed:N'.\n"
            "  Statuses: PASSED, MISTRUSTED (matches, but the reference is mostly zeros), SKIPPED (platform\n"
            "  cannot run it), UNIMPLEMENTED (library has no kernel), INVALID_ARGUMENTS (case breaks a rule),\n"
            "  FAILED (mismatch: output, worst element (b,h,i,j), got, expected, |err| and bound), LISTED.\n"
            "EXIT: 0 when no case FAILED/UNIMPLEMENTED/INVALID_ARGUMENTS, 1 otherwise, 2 for bad usage.\n",
            case_language_help(), fmt::join(backend_names(), ", "), faulty_backend_names());
}

}  // namespace

CliOutcome parse_command_line(int argc, char** argv) {
    CliOutcome out;
    CLI::App app{"sdpabench: correctness harness for scaled dot-product attention training kernels\n"
                 "(oneDNN Graph API on the CPU) against an independent f32 reference.\n"
                 "Examples:\n"
                 "  sdpabench --dir=bwd --dt=bf16 --mask=causal_br b2hq8hkv2sq128skv256d64\n"
                 "  sdpabench --backend=onednn --batch=cases/ci/smoke.cases",
            "sdpabench"};
    app.allow_extras();
    app.footer(footer());
    app.add_flag("-v,--verbose", out.opts.verbose, "Per case: backend notes (oneDNN partitions) and the worst |err|/bound of every output, even when it passes");
    app.add_flag("--version", out.opts.version, "Print sdpabench's version, each backend's library version, runtime and CPU ISA, and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        out.exit_code = app.exit(e);
        return out;
    } catch (const CLI::ParseError& e) {
        fmt::print(stderr, "command line: error: {}\n", e.what());
        out.exit_code = 2;
        return out;
    }
    out.opts.case_tokens = app.remaining();
    return out;
}

}  // namespace sdpa
