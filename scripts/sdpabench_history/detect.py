"""Changes and outliers in one short timing series: scripts/history's detection (docs/tracking.md#detection).

A series is one value per revision (a case's median time on one machine, in run order), often
6-60 values, one run a night. Apache Otava's E-divisive analysis is made for long series; on such
short ones one point 1% high just before a 70% step hides the step from its t-test merge, and one
slow run becomes a change. `detect` keeps Otava as a source of candidates and decides with
robust statistics of the points themselves:

1. The noise scale sigma of the series: first from the lower quartile of the absolute
   differences of consecutive values (in log space, so a change is a ratio), then from their
   median over the pairs that cross no change and touch no outlier, as the standard deviation
   of one value (the normal's factors), at least SIGMA_FLOOR; everything below is found again
   with each new sigma (at most PASSES times, until it settles).
2. Outliers: a value off from the median of up to OUTLIER_SIDE values before it and of up to
   OUTLIER_SIDE after it (the nearest values of one level on each side), on the same side, by at
   least OUTLIER_Z sigmas and at least the minimum magnitude (a slow run, a fast one); the most
   deviant first, each taken out before the next is looked for. The newest value, with nothing after it, is an outlier when
   it is off from the values before it (`latest`: a change starting there is told apart only
   MIN_AFTER revisions later). Outliers take no part in the step test.
3. Steps, by binary segmentation: in a segment, the split with the least sum of absolute
   deviations from the medians on each side is a change when n_before >= MIN_BEFORE,
   n_after >= MIN_AFTER, its z (the difference of the medians over its standard error
   sigma sqrt(pi/2 (1/n_before + 1/n_after)), the median's asymptotic variance) is at least
   Z_MIN, the ratio of the medians is at least the minimum magnitude away from 1, at least
   DOMINANCE of the (before, after) pairs are ordered the way the medians are (a rank
   condition: the Mann-Whitney U statistic over its maximum), and the two values next to the
   split are each nearer their own side's median (a new level only two values long does not
   pass as a change one value early); then each side is searched again. Otava's change points of the series with its
   outliers replaced by their neighbours' median are added where the same test confirms them.
   Each change's revision is then the split nearest to it (two either way) with the least sum
   of absolute deviations from the two medians. Outliers between the last value before a change
   and the first after it leave its revision uncertain: `first` is the earliest revision it may
   start at.

The thresholds were chosen on bench.py's synthetic series (docs/tracking.md#detection
gives its table); scipy.stats.mannwhitneyu gives each change's p-value.
"""
import math
import statistics
from dataclasses import dataclass

SIGMA_FLOOR = 0.002   # sigma is never taken below 0.2%: run-to-run timings are not more precise
OUTLIER_SIDE = 3      # values on each side an outlier is compared with
OUTLIER_Z = 5.0       # sigmas an outlier is off from both sides
MIN_BEFORE = 2        # values a change needs before it
MIN_AFTER = 3         # values a change needs after it (it lasts at least this many revisions)
Z_MIN = 3.5           # the step test's threshold on z
DOMINANCE = 0.9       # the share of (before, after) pairs ordered as the medians are
REFINE = 2            # a change's revision is searched this far either way
PASSES = 3            # sigma, outliers and steps estimated this many times


@dataclass
class Change:
    """A change starting at value `index` (the first after it; `first` <= index the earliest it
    may start at, when outliers lie between): medians `before` and `after` (the series' units),
    z of the step test, `p` of the Mann-Whitney U test of the values on each side (two-sided,
    scipy)."""
    index: int
    first: int
    before: float
    after: float
    z: float
    p: float


@dataclass
class Outlier:
    """Value `index` is an outlier: `typical` is the median of its neighbours' values; `latest`
    when it is the newest value (or one of the two newest) and may be the start of a change."""
    index: int
    value: float
    typical: float
    latest: bool


def _median(xs):
    return statistics.median(xs) if xs else None


def _sigma(logs, clean, bounds):
    """The noise scale of log values: median |difference| of consecutive clean values within
    each segment (bounds: the change indexes), as one value's standard deviation."""
    diffs = []
    cuts = set(bounds)
    prev = None
    for i in range(len(logs)):
        if i in cuts:
            prev = None
        if not clean[i]:
            prev = None
            continue
        if prev is not None:
            diffs.append(abs(logs[i] - logs[prev]))
        prev = i
    if not diffs:
        return SIGMA_FLOOR
    return max(statistics.median(diffs) / (0.6745 * math.sqrt(2)), SIGMA_FLOOR)


def _side(logs, flagged, i, step, thr):
    """Up to OUTLIER_SIDE values on one side of i (step -1 before, +1 after), nearest first,
    skipping `flagged` ones, while they stay within thr of the nearest: one level."""
    out = []
    j = i + step
    while 0 <= j < len(logs) and len(out) < OUTLIER_SIDE:
        if j not in flagged:
            if out and abs(logs[j] - out[0]) >= thr:
                break
            out.append(logs[j])
        j += step
    return out


def _first_sigma(logs):
    """A first noise scale before anything is known: the lower quartile of |difference| of
    consecutive log values as one value's standard deviation (x 1/(0.3186 sqrt 2), the normal's),
    which a step and an outlier (three large differences in five) do not inflate."""
    diffs = sorted(abs(b - a) for a, b in zip(logs, logs[1:]))
    if not diffs:
        return SIGMA_FLOOR
    q = statistics.quantiles(diffs, n=4, method="inclusive")[0] if len(diffs) > 1 else diffs[0]
    return max(q / (0.3186 * math.sqrt(2)), SIGMA_FLOOR)


def _outliers(logs, sigma, min_log):
    """{index: latest} of the outliers of log values (rule 2 of the module's comment), the most
    deviant first, each taken out before the next is looked for (an outlier does not make its
    neighbours look like outliers). A side is the values of one level nearest the value (_side);
    a value at either end needs two values on its one side."""
    thr = max(OUTLIER_Z * sigma, min_log)
    out = {}
    while True:
        best = None
        for i in range(len(logs)):
            if i in out:
                continue
            sides = [s for s in (_side(logs, out, i, -1, thr), _side(logs, out, i, 1, thr)) if s]
            if not sides or (len(sides) == 1 and len(sides[0]) < 2):
                continue
            d = [logs[i] - _median(s) for s in sides]
            if all(x >= thr for x in d) or all(x <= -thr for x in d):
                score = min(abs(x) for x in d)
                if best is None or score > best[0]:
                    best = (score, i)
        if best is None:
            return out
        i = best[1]
        out[i] = all(j in out for j in range(i + 1, len(logs)))


def _latest(logs, outliers, changes, sigma, min_log):
    """Adds to `outliers` the two newest values when they are off from the clean values of their
    segment before them (after the last change): a change of fewer than MIN_AFTER revisions, or
    one slow night, told apart later."""
    n = len(logs)
    thr = max(OUTLIER_Z * sigma, min_log)
    last = max(changes, default=0)
    before = [logs[j] for j in range(last, n - 2) if j not in outliers][-2 * OUTLIER_SIDE:]
    if len(before) < MIN_BEFORE:
        return
    for i in range(max(n - 2, last + 1), n):
        if i not in outliers and abs(logs[i] - _median(before)) >= thr:
            outliers[i] = True


def _test(left, right, sigma, min_log):
    """(z, accepted) of the step test between clean log values `left` and `right`."""
    if len(left) < MIN_BEFORE or len(right) < MIN_AFTER:
        return 0.0, False
    d = _median(right) - _median(left)
    z = abs(d) / (sigma * math.sqrt(math.pi / 2 * (1 / len(left) + 1 / len(right))))
    if z < Z_MIN or abs(d) < min_log:
        return z, False
    ordered = sum((r > l) if d > 0 else (r < l) for l in left for r in right)
    # Each value next to the split is nearer its own side's median: a split one value early (the
    # new level only two values long, one old value taken with them) is not a change.
    ml, mr = _median(left), _median(right)
    edges = abs(left[-1] - ml) < abs(left[-1] - mr) and abs(right[0] - mr) < abs(right[0] - ml)
    return z, edges and ordered >= DOMINANCE * len(left) * len(right)


def _values(logs, clean, a, b):
    return [logs[i] for i in range(a, b) if clean[i]]


def _segment(logs, clean, a, b, sigma, min_log, found):
    """Binary segmentation of logs[a:b]: the split with the least sum of absolute deviations
    from the medians on each side (a median's place is blurred by a few values of the other
    level, the deviations are not), added to `found` when the step test accepts it; then each
    side again."""
    costs = [(_cost(logs, clean, a, k, b), k) for k in range(a + 1, b) if clean[k]]
    costs = [c for c in costs if c[0] < math.inf]
    if not costs:
        return
    k = min(costs)[1]
    if not _test(_values(logs, clean, a, k), _values(logs, clean, k, b), sigma, min_log)[1]:
        return
    found.add(k)
    _segment(logs, clean, a, k, sigma, min_log, found)
    _segment(logs, clean, k, b, sigma, min_log, found)


def _cost(logs, clean, a, k, b):
    left, right = _values(logs, clean, a, k), _values(logs, clean, k, b)
    if len(left) < MIN_BEFORE or len(right) < MIN_AFTER:
        return math.inf
    ml, mr = _median(left), _median(right)
    return sum(abs(x - ml) for x in left) + sum(abs(x - mr) for x in right)


def _refine(logs, clean, changes):
    """Each change moved to the split near it with the least absolute deviation (the medians
    place a change only within a value or two)."""
    out = sorted(changes)
    for j, k in enumerate(out):
        a = out[j - 1] if j else 0
        b = out[j + 1] if j + 1 < len(out) else len(logs)
        cands = [c for c in range(max(a + 1, k - REFINE), min(b, k + REFINE + 1)) if clean[c]]
        out[j] = min(cands, key=lambda c: (_cost(logs, clean, a, c, b), abs(c - k)))
    return out


def _otava(logs, clean, options):
    """Otava's change points of the series with each outlier replaced by its neighbours' median."""
    from otava.analysis import compute_change_points
    filled = []
    for i, x in enumerate(logs):
        if clean[i]:
            filled.append(math.exp(x))
        else:
            near = [logs[j] for j in range(max(0, i - OUTLIER_SIDE), min(len(logs), i + OUTLIER_SIDE + 1))
                    if j != i and clean[j]]
            filled.append(math.exp(_median(near)) if near else math.exp(x))
    cps, _ = compute_change_points(filled, window_len=options["window"], max_pvalue=options["max_pvalue"],
                                   min_magnitude=options["min_magnitude"])
    return {int(c.index) for c in cps}


def detect(values, min_magnitude=0.05, otava=None):
    """Changes and outliers of `values` (positive numbers, one per revision in run order; a
    lower-is-better time or a higher-is-better rate alike): ([Change], [Outlier]), each by index.
    `min_magnitude`: the smallest relative change reported (0.05 = 5%). `otava`: a dict of
    Otava's window, max_pvalue and min_magnitude to add its confirmed change points, or None.
    Raises ValueError on a value that is not a positive finite number."""
    from scipy.stats import mannwhitneyu
    if any(not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0) for v in values):
        raise ValueError("detect: every value must be a positive finite number")
    n = len(values)
    logs = [math.log(v) for v in values]
    min_log = math.log1p(min_magnitude)
    changes, outliers = [], {}
    sigma = _first_sigma(logs)
    for _ in range(PASSES):
        outliers = _outliers(logs, sigma, min_log)
        clean = [i not in outliers for i in range(n)]
        found = set()
        _segment(logs, clean, 0, n, sigma, min_log, found)
        if otava is not None and n >= MIN_BEFORE + MIN_AFTER:
            for c in sorted(_otava(logs, clean, otava)):
                if any(abs(c - k) <= 1 for k in found) or not 0 < c < n or not clean[c]:
                    continue
                a = max((k for k in found if k < c), default=0)
                b = min((k for k in found if k > c), default=n)
                if _test(_values(logs, clean, a, c), _values(logs, clean, c, b), sigma, min_log)[1]:
                    found.add(c)
        changes = _refine(logs, clean, found)
        _latest(logs, outliers, changes, sigma, min_log)
        clean = [i not in outliers for i in range(n)]
        new_sigma = _sigma(logs, clean, changes)
        if abs(new_sigma - sigma) <= 1e-12:
            break
        sigma = new_sigma
    clean = [i not in outliers for i in range(n)]
    out = []
    for j, k in enumerate(changes):
        a = changes[j - 1] if j else 0
        b = changes[j + 1] if j + 1 < len(changes) else n
        left, right = _values(logs, clean, a, k), _values(logs, clean, k, b)
        z, _ = _test(left, right, sigma, 0.0)
        first = k
        while first - 1 > a and not clean[first - 1]:
            first -= 1
        p = float(mannwhitneyu(right, left, alternative="two-sided", method="exact").pvalue)
        out.append(Change(index=k, first=first, before=math.exp(_median(left)), after=math.exp(_median(right)), z=z, p=p))
    outl = []
    for i, latest in sorted(outliers.items()):
        near = [values[j] for j in range(max(0, i - OUTLIER_SIDE), min(n, i + OUTLIER_SIDE + 1)) if j != i and clean[j]]
        outl.append(Outlier(index=i, value=values[i], typical=_median(near) if near else values[i], latest=latest))
    return out, outl
