#!/usr/bin/env python3
"""README's knob table is generated from sdpabench's knob table (driver/knobs.cpp).

    scripts/readme_knobs.py SDPABENCH [README]          rewrite the table between the markers
    scripts/readme_knobs.py --check SDPABENCH [README]  exit 1 with a diff when README differs

The table sits between the lines '<!-- knob-table:begin -->' and '<!-- knob-table:end -->' and is
exactly what 'sdpabench --list-knobs=md' prints. CTest runs --check (docs.readme_knob_table), so a
knob added to the table and not to README fails the tests until this script is run.
"""
import argparse
import difflib
import pathlib
import subprocess
import sys

BEGIN, END = "<!-- knob-table:begin -->", "<!-- knob-table:end -->"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 with a diff when README differs")
    ap.add_argument("sdpabench", help="the sdpabench executable")
    ap.add_argument("readme", nargs="?", default=str(pathlib.Path(__file__).resolve().parent.parent / "README.md"))
    args = ap.parse_args()

    try:
        run = subprocess.run([args.sdpabench, "--list-knobs=md"], capture_output=True, text=True)
    except OSError as e:
        print(f"readme_knobs.py: cannot run '{args.sdpabench}': {e.strerror}", file=sys.stderr)
        return 2
    table = run.stdout
    if run.returncode != 0 or not table.startswith("| knob |"):
        print(f"readme_knobs.py: '{args.sdpabench} --list-knobs=md' did not print the knob table (exit "
              f"{run.returncode}): is it sdpabench?", file=sys.stderr)
        return 2
    path = pathlib.Path(args.readme)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        print(f"readme_knobs.py: cannot read '{path}': {e.strerror}", file=sys.stderr)
        return 2
    lines = text.splitlines(keepends=True)
    begins = [i for i, l in enumerate(lines) if l.strip() == BEGIN]
    ends = [i for i, l in enumerate(lines) if l.strip() == END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        print(f"{path}: needs exactly one '{BEGIN}' line and one '{END}' line after it (found {len(begins)} and "
              f"{len(ends)})", file=sys.stderr)
        return 2
    b, e = begins[0], ends[0]
    new = "".join(lines[: b + 1]) + table + "".join(lines[e:])
    if new == text:
        return 0
    if args.check:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                                   f"{path} (as is)", f"{path} (from --list-knobs=md)"))
        print(f"{path}: the knob table differs from 'sdpabench --list-knobs=md': run scripts/readme_knobs.py "
              f"{args.sdpabench}", file=sys.stderr)
        return 1
    path.write_text(new, encoding="utf-8")
    print(f"{path}: knob table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
