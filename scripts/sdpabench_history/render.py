"""scripts/history's text output: the findings as a table (tabulate) or a JSON list, and the exit
status that says whether something was flagged."""
import json


def fmt_num(v, digits=4):
    """v with `digits` significant digits; "" for None."""
    return "" if v is None else f"{v:.{digits}g}"


def table(items, columns, **options):
    """The items as a text table (tabulate), one column per (header, function of an item)."""
    from tabulate import tabulate
    return tabulate([[fn(i) for _, fn in columns] for i in items], headers=[h for h, _ in columns], **options)


def changed_text(f):
    """The "context changed" column: each changed field as "FIELD BEFORE -> AFTER", or "nothing"."""
    return "; ".join(f"{c['field']} {c['before']} -> {c['after']}" for c in f["context_changes"]) or "nothing"


def finding_text(f):
    """The finding column of `changes`: what kind of thing happened at f's revision."""
    if f["kind"] == "change":
        return f["finding"] + (f" (from {f['first_rev']} to {f['rev']}: outliers or noisy runs between)"
                               if f["first_rev"] != f["rev"] else "")
    if f["kind"] == "outlier":
        return "outlier" + (" (the latest: a change if it stays)" if f["latest"] else "")
    return f["kind"]


def size_text(f):
    """The size column of `changes`: a change's levels and ratio, an outlier's value against the
    typical one, a noisy run's reasons."""
    if f["kind"] == "change":
        return f"{fmt_num(f['before'])} -> {fmt_num(f['after'])} {f['metric']} (x{fmt_num(f['ratio'], 3)})"
    if f["kind"] == "outlier":
        return f"{fmt_num(f['value'])} {f['metric']}, typically {fmt_num(f['typical'])} (x{fmt_num(f['ratio'], 3)})"
    if f["kind"] == "noisy run":
        return "; ".join(f["reasons"])
    return ""


CHANGE_COLUMNS = [
    ("case", lambda f: {"noisy run": f"(run {f.get('run')}: {f.get('cases')} case(s))",
                        "context": "(run context)"}.get(f["kind"], f.get("case"))),
    ("backend", lambda f: f.get("backend", "")), ("machine", lambda f: f["machine"]),
    ("rev", lambda f: f["rev"]), ("finding", finding_text), ("size", size_text),
    ("p", lambda f: fmt_num(f.get("p"), 2)), ("scope", lambda f: f.get("scope", "")),
    ("noisy", lambda f: f"noisy runs at {', '.join(f['noisy_revs'])}" if f.get("noisy") else ""),
    ("context changed", lambda f: changed_text(f) if "context_changes" in f else ""),
]
MARGIN_COLUMNS = [
    ("case", lambda f: f["case"]), ("backend", lambda f: f["backend"]), ("machine", lambda f: f["machine"]),
    ("output", lambda f: f["output"]), ("rev", lambda f: f["rev"]), ("direction", lambda f: f["direction"]),
    ("worst_ratio", lambda f: f"{fmt_num(f['before'])} -> {fmt_num(f['after'])}"),
    ("rule", lambda f: f["rule"] if f["p"] is None else f"{f['rule']} p={fmt_num(f['p'], 2)}"),
    ("context changed", changed_text), ("repro", lambda f: f["repro"]),
]
FLAKY_COLUMNS = [
    ("case", lambda f: f["case"]), ("backend", lambda f: f["backend"]), ("machine", lambda f: f["machine"]),
    ("flips", lambda f: f["flips"]), ("same revision", lambda f: ", ".join(f["same_rev"])),
    ("statuses by revision", lambda f: " ".join(f"{r}:{s}" for r, s in f["statuses"])), ("repro", lambda f: f["repro"]),
]


def public(items):
    """The findings as --json prints them: without their internal "index"."""
    return [{k: v for k, v in i.items() if k != "index"} for i in items]


def report(a, items, columns, what, flagged):
    """Prints the findings `items` (a JSON list with --json, else a table of `columns`, or "no
    WHAT"); the exit status: 1 when flagged(item) holds for one, else 0."""
    if a.json:
        print(json.dumps(public(items), indent=1))
    elif items:
        print(table(items, columns))
    else:
        print(f"no {what}")
    return 1 if any(flagged(i) for i in items) else 0


