"""Series of scripts/history: points selected by --case and --backend, grouped (a series is one
case, backend and machine, in run order), one value per revision; findings shown by --machine;
what else changed in the run context between two points."""
import fnmatch
import statistics
from collections import defaultdict


def select(points, a):
    """The points the --case and --backend filters (globs) keep. --machine filters what is shown
    (shown), never what is computed: which machines saw a change needs the others."""
    return [p for p in points if fnmatch.fnmatchcase(p.case, a.case) and fnmatch.fnmatchcase(p.backend, a.backend)]


def shown(findings, a):
    """The findings of machines matching --machine (a glob)."""
    return [f for f in findings if fnmatch.fnmatchcase(f["machine"], a.machine)]


def series(points, key):
    """Points grouped by key(point), each group in run order (points are sorted already)."""
    out = defaultdict(list)
    for p in points:
        k = key(p)
        if k is not None:
            out[k].append(p)
    return out


def moving_with_revision(pts):
    """Attributes that change at every new revision of a series (a commit time, a build number):
    they tell nothing about what else changed at one revision."""
    steps = [(a.attributes, b.attributes) for a, b in zip(pts, pts[1:]) if a.rev != b.rev]
    names = {k for p in pts for k in p.attributes}
    return {k for k in names if steps and all(x.get(k, "") != y.get(k, "") for x, y in steps)}


def context_changes(before, after, ignore=()):
    """[{field, before, after}] of the attributes that differ between two points."""
    return [{"field": k, "before": before.get(k, ""), "after": after.get(k, "")}
            for k in sorted(set(before) | set(after)) if k not in ignore and before.get(k, "") != after.get(k, "")]


def revisions(pts):
    """[(rev, [points at that revision])] in run order: a series has one value per revision."""
    out = []
    for p in pts:
        if out and out[-1][0] == p.rev:
            out[-1][1].append(p)
        else:
            out.append((p.rev, [p]))
    return out


def revision_levels(pts, metric):
    """[(rev, [points], value)]: each revision's value of `metric`, the median over its runs that
    were not judged noisy (a revision whose runs all were is left out)."""
    out = []
    for rev, group in revisions(pts):
        kept = [p for p in group if not p.noisy_run and getattr(p, metric) is not None]
        if kept:
            out.append((rev, group, statistics.median(getattr(p, metric) for p in kept)))
    return out


