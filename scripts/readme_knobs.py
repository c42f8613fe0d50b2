#!/usr/bin/env python3
"""README's generated tables: the knob table (driver/knobs.cpp) and the PyTorch variant table
(backends/torch/torch_backend.cpp kTorchVariants).

    scripts/readme_knobs.py SDPABENCH [README]          rewrite the tables between their markers
    scripts/readme_knobs.py --check SDPABENCH [README]  exit 1 with a diff when README differs

The knob table sits between the lines '<!-- knob-table:begin -->' and '<!-- knob-table:end -->'
and is exactly what 'sdpabench --list-knobs=md' prints; the variant table between
'<!-- torch-table:begin -->' and '<!-- torch-table:end -->' is what 'sdpabench
--list-torch-variants' prints. CTest runs --check (docs.readme_knob_table), so a knob or variant
row changed in the code and not in README fails the tests until this script is run.
"""
import argparse
import difflib
import pathlib
import subprocess
import sys

# (marker name, sdpabench's arguments, how the printed table starts)
TABLES = [("knob-table", ["--list-knobs=md"], "| knob |"), ("torch-table", ["--list-torch-variants"], "| backend |")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 with a diff when README differs")
    ap.add_argument("sdpabench", help="the sdpabench executable")
    ap.add_argument("readme", nargs="?", default=str(pathlib.Path(__file__).resolve().parent.parent / "README.md"))
    args = ap.parse_args()

    path = pathlib.Path(args.readme)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        print(f"readme_knobs.py: cannot read '{path}': {e.strerror}", file=sys.stderr)
        return 2
    new = text
    for name, flags, head in TABLES:
        try:
            run = subprocess.run([args.sdpabench, *flags], capture_output=True, text=True)
        except OSError as e:
            print(f"readme_knobs.py: cannot run '{args.sdpabench}': {e.strerror}", file=sys.stderr)
            return 2
        table = run.stdout
        if run.returncode != 0 or not table.startswith(head):
            print(f"readme_knobs.py: '{args.sdpabench} {' '.join(flags)}' did not print its table (exit "
                  f"{run.returncode}): is it sdpabench?", file=sys.stderr)
            return 2
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        lines = new.splitlines(keepends=True)
        begins = [i for i, l in enumerate(lines) if l.strip() == begin]
        ends = [i for i, l in enumerate(lines) if l.strip() == end]
        if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
            print(f"{path}: needs exactly one '{begin}' line and one '{end}' line after it (found {len(begins)} and "
                  f"{len(ends)})", file=sys.stderr)
            return 2
        b, e = begins[0], ends[0]
        new = "".join(lines[: b + 1]) + table + "".join(lines[e:])
    if new == text:
        return 0
    if args.check:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                                   f"{path} (as is)", f"{path} (from sdpabench)"))
        print(f"{path}: a generated table differs from what sdpabench prints (--list-knobs=md, "
              f"--list-torch-variants): run scripts/readme_knobs.py {args.sdpabench}", file=sys.stderr)
        return 1
    path.write_text(new, encoding="utf-8")
    print(f"{path}: tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
