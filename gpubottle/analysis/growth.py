"""Steps that take longer as the run goes: the loop does work in proportion to what it has done
so far (a tensor concatenated onto itself at every step, a sum over a list of every loss seen), so
the run costs the square of its length. Read from the step clock (each measured step's time against
its position, in the run or in its epoch where the growth starts again with each epoch) and from the
stack samples (the user's line whose time per step grows between the first and the last quarter).
"""

from __future__ import annotations

import bisect
import linecache
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from gpubottle.analysis.memory import linear_fit
from gpubottle.analysis.stacks import ThreadSamples, in_script, is_blocking, phase_of
from gpubottle.evidence import StepGrowth
from gpubottle.probes.sites import is_user_file, place

MIN_STEPS = 30  # measured steps a trend is fitted over
BINS = 10  # groups of positions whose medians tell a steady trend
BUSIER_CORES = 0.25  # other programs' load rising this much from the early steps to the late ones
WORK_GREW_SHARE = 0.5  # CPU per step grew by this share of the steps' growth: the work grew

_MODEL_PHASES = ("forward", "backward", "optimizer")

SELF_CONCAT = "concatenating onto itself"  # x = torch.cat([x, y]): a copy of all of x each time
HISTORY = "going over every value kept so far"  # sum(losses), np.mean(history)
LIST_FRONT = "taking values off a list's front"  # buffer.pop(0): every later value moved down
REWRITE = "writing out everything kept so far"  # json.dump(history, f) each step: the whole file again

# `name = torch.cat([name, ...])`, np.concatenate, np.append, vstack/hstack/stack: the assigned
# name is the first thing joined.
_SELF_CONCAT = re.compile(
    r"^\s*(?P<name>[\w.]+)\s*=\s*(?:torch|np|numpy)\.(?:cat|concat|concatenate|append|vstack|hstack"
    r"|stack|row_stack|column_stack)\(\s*[\[(]?\s*(?P=name)\b")
# `name.pop(0)`, `name.insert(0, v)`, `del name[0]`: a list's front, the rest moved each time.
_FRONT = re.compile(r"\b[\w.]+\.pop\(\s*0\s*\)|\b[\w.]+\.insert\(\s*0\s*,|\bdel\s+[\w.]+\[\s*0\s*\]")
# `json.dump(history, f)`, `pickle.dump(name, f)`, `f.write(json.dumps(name))`, `np.save(p, name)`,
# `torch.save(name, p)`, `yaml.dump(name, f)`: a kept collection serialised whole.
_WRITE = re.compile(r"\b(?:json|pickle|yaml|torch|np|numpy)\.(?:dumps?|save)\(\s*(?P<a>[\w.]+)\s*"
                    r"(?:,\s*(?P<b>[\w.]+))?")
_REDUCE = re.compile(
    r"\b(?:sum|max|min|sorted|mean|median|stdev|np\.\w+|numpy\.\w+|statistics\.\w+|torch\.\w+)"
    r"\(\s*(?P<name>[\w.]+)\s*[,)]")


def line_growth_kind(path: str, line: int) -> str | None:
    """SELF_CONCAT, LIST_FRONT, REWRITE or HISTORY for the statement at `line` of `path`, from its text
    (and, for a reduction, an `.append(` to the same name elsewhere in the file); None when none."""
    text = linecache.getline(path, line).split("#", 1)[0]
    if _SELF_CONCAT.search(text):
        return SELF_CONCAT
    if _FRONT.search(text):
        return LIST_FRONT
    lines = linecache.getlines(path)
    whole = "".join(lines)
    for m in _WRITE.finditer(text):
        if any(n and (f"{n}.append(" in whole or f"{n}.extend(" in whole) for n in m.group("a", "b")):
            return REWRITE
    for m in _REDUCE.finditer(text):
        appended = f"{m.group('name')}.append("
        if any(appended in other for other in lines):
            return HISTORY
    return None


def _positions(ends: list[float], epoch_ends: list[float]) -> list[int]:
    """Each step's position in its epoch: steps since the last epoch ended before the step did (the
    loader's StopIteration falls inside the next epoch's first step, before its first batch)."""
    out, first, epoch = [], 0, -1
    for i, t in enumerate(ends):
        e = bisect.bisect_right(epoch_ends, t)
        if e != epoch:
            epoch, first = e, i
        out.append(i - first)
    return out


def _ranks(values: list[float]) -> list[float]:
    """Ranks, ties given their mean rank (equal medians are no rise)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    k = 0
    while k < len(order):
        m = k
        while m + 1 < len(order) and values[order[m + 1]] == values[order[k]]:
            m += 1
        for r in range(k, m + 1):
            out[order[r]] = (k + m) / 2
        k = m + 1
    return out


def _rank_correlation(values: list[float]) -> float:
    """Spearman's rank correlation of `values` with their order."""
    if len(values) < 3:
        return 0.0
    a, b = [float(i) for i in range(len(values))], _ranks(values)
    ma, mb, sa, sb = statistics.fmean(a), statistics.fmean(b), statistics.pstdev(a), statistics.pstdev(b)
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (sa * sb * len(a)) if sb else 0.0


def _fit(xs: list[int], ys: list[float]) -> tuple[float, float, float]:
    """Slope and intercept of ys against xs, and how steady the trend is: the rank correlation of
    BINS groups of positions with their order, by each group's median or by its fastest step,
    whichever is steadier. A step's own noise (a page fault, a scheduler's tick) is not the
    trend's, nor is other programs' load, which only adds time: a CI run beside 1.3 busy cores put
    two middle groups' medians at 6.6-7.6 ms on a 0.7 -> 5.5 ms rise (rank correlation 0.70)
    while their fastest steps rose steadily (0.99); beside 1.4 cores, with a third of a group's
    steps slowed, the tenth percentile read 0.73 and the fastest 0.88. Nor need the trend be a straight
    line: a copy that outgrows a cache or the allocator's threshold jumps, and rises all the same."""
    slope, _ = linear_fit([float(x) for x in xs], ys)
    pairs = sorted(zip(xs, ys))
    size = max(1, len(pairs) // BINS)
    groups = [sorted(y for _, y in pairs[k:k + size]) for k in range(0, len(pairs) - size + 1, size)]
    medians = [statistics.median(g) for g in groups]
    fast = [g[0] for g in groups]
    rho = max(_rank_correlation(medians), _rank_correlation(fast))
    return slope, statistics.fmean(ys) - slope * statistics.fmean(xs), rho


def _quarters(xs: list[int], keep: list[int]) -> tuple[list[int], list[int]]:
    """The kept steps in the first and the last quarter of the positions."""
    ordered = sorted(keep, key=lambda i: xs[i])
    q = max(1, len(ordered) // 4)
    return ordered[:q], ordered[-q:]


@dataclass
class _Line:
    function: str
    location: str
    called_at: str | None
    kind: str | None
    statement: str
    early_s: float  # its seconds per step in the early steps
    late_s: float  # and in the late ones

    @property
    def growth_s(self) -> float:
        return self.late_s - self.early_s


def _busier(intervals: list[tuple[float, float]], early: list[int], late: list[int],
            outside: list[tuple[float, float]] | None) -> bool:
    """Other programs took more of the cores during the late steps than during the early ones (or
    it cannot be told: no readings of them in either)."""
    def mean(group: list[int]) -> float | None:
        lo, hi = min(intervals[i][0] for i in group), max(intervals[i][1] for i in group)
        got = [c for t, c in outside or [] if lo <= t <= hi + 1.0]
        return statistics.fmean(got) if got else None

    a, b = mean(early), mean(late)
    return a is None or b is None or b - a >= BUSIER_CORES


def _growing_line(main: ThreadSamples | None, intervals: list[tuple[float, float]],
                  early: list[int], late: list[int], waits: list[float] | None = None,
                  busier: bool = True) -> _Line | None:
    """The user line whose seconds per step grow the most from the early steps to the late ones.
    A line inside the model's forward, backward or optimizer step is the model's own work (inputs
    that grow: longer sequences in a curriculum) unless its text says what grows. A line inside
    the DataLoader's fetch (a dataset that scans to its index) is the cause only where the loop's
    measured wait for its batches grew too, by half the line's growth or more: beside a busier
    machine the stack samples of a loader that sleeps on its reads drifted toward its read line
    while the hook's clock said the wait held at 140-150 ms."""
    if main is None:
        return None
    Key = tuple[str, str, int, str | None]
    in_model: Counter[Key] = Counter()
    in_data: Counter[Key] = Counter()
    samples = sorted(zip(main.times, main.stacks), key=lambda p: p[0])

    def per_step(group: list[int]) -> tuple[Counter[Key], float, float]:
        spans = sorted(intervals[i] for i in group)
        counts: Counter[Key] = Counter()
        total = 0
        j = 0
        for t, st in samples:
            while j < len(spans) and spans[j][1] < t:
                j += 1
            if j == len(spans) or not spans[j][0] <= t <= spans[j][1] or not in_script(st):
                continue
            total += 1
            if is_blocking(st[-1]):
                continue
            users = [k for k, f in enumerate(st) if is_user_file(f.file)]
            if not users:
                continue
            f = st[users[-1]]
            outer = st[users[-2]] if len(users) > 1 and f.name != "<module>" else None
            key = (f.name, f.file, f.line, place(outer.file, outer.line) if outer else None)
            counts[key] += 1
            phase = phase_of(st)
            if phase in _MODEL_PHASES:
                in_model[key] += 1
            elif phase == "data":
                in_data[key] += 1
        # A line's seconds per step: its share of the group's samples times the group's mean step.
        mean = statistics.fmean(hi - lo for lo, hi in (intervals[i] for i in group))
        return counts, (mean / total if total else 0.0), mean

    c_early, s_early, mean_early = per_step(early)
    c_late, s_late, mean_late = per_step(late)
    wait_grew = (statistics.fmean(waits[i] for i in late) - statistics.fmean(waits[i] for i in early)
                 if waits is not None and len(waits) == len(intervals) else None)
    grown = []
    for key, n in c_late.items():
        name, file, line, called = key
        kind = line_growth_kind(file, line)
        if kind is None and in_model[key] * 2 > n + c_early.get(key, 0):
            continue
        g = _Line(name, place(file, line), called, kind, linecache.getline(file, line).strip()[:120],
                  c_early.get(key, 0) * s_early, n * s_late)
        if (wait_grew is not None and in_data[key] * 2 > n + c_early.get(key, 0)
                and wait_grew < g.growth_s / 2):
            continue
        grown.append(g)
    top = max(grown, key=lambda g: g.growth_s, default=None)
    if top is None or mean_early <= 0:
        return None
    # A machine that got busier slows every line alike: there the line is the cause only where the
    # rest of the step grew less than half as much, for its size, as the step. Where other
    # programs' load held, the rest's few early samples decide nothing (a loaded suite run: the
    # first quarter's short steps held 7 samples, 3 beside the growing line, and the stacks put
    # fetches in late steps the hook's clock said did not grow: the cat line was dropped).
    rest_early, rest_late = mean_early - top.early_s, mean_late - top.late_s
    if busier and rest_early > 0 and rest_late / rest_early > 1 + (mean_late / mean_early - 1) / 2:
        return None
    return top


def _running(intervals: list[tuple[float, float]], starts: list[float], group: list[int],
             ran: list[tuple[float, float]]) -> float | None:
    """The mean share of time the main thread ran on a core (the sampler's readings, each at its
    time) over the readings taken inside the group's steps (`starts`: the steps' starts)."""
    members = set(group)
    got = []
    for t, frac in ran:
        i = bisect.bisect_right(starts, t) - 1
        if i in members and t <= intervals[i][1] + 1.0:
            got.append(frac)
    return statistics.fmean(got) if got else None


def step_growth(intervals: list[tuple[float, float]], durations: list[float], keep: list[int],
                epoch_ends: list[float], main: ThreadSamples | None,
                ran: list[tuple[float, float]] | None = None,
                waits: list[float] | None = None,
                outside: list[tuple[float, float]] | None = None) -> StepGrowth | None:
    """The steps' trend against their position in the run or in their epoch, whichever fits better,
    where the last quarter's steps take longer than the first quarter's (the rules judge how much
    and how steady). None when the steps do not grow or are too few to tell. `ran`: the sampler's
    (time, share of it the main thread ran) readings, which tell steps that work longer from steps
    that wait longer for a core. `waits`: each step's wait for its batch, as the loader's hook
    timed it. `outside`: the sampler's (time, cores other programs used) readings."""
    if len(keep) < MIN_STEPS or len(durations) != len(intervals):
        return None
    ends = [hi for _, hi in intervals]
    best: tuple[float, float, float, list[int], bool] | None = None
    for by_epoch in (False, True):
        xs = _positions(ends, epoch_ends) if by_epoch else list(range(len(intervals)))
        if by_epoch and xs == list(range(len(intervals))):
            continue  # one epoch: the same fit
        slope, icpt, rho = _fit([xs[i] for i in keep], [durations[i] for i in keep])
        if best is None or rho > best[2]:
            best = (slope, icpt, rho, xs, by_epoch)
    if best is None:
        return None
    slope, icpt, rho, xs, by_epoch = best
    early, late = _quarters(xs, keep)
    first = statistics.median(durations[i] for i in early)
    last = statistics.median(durations[i] for i in late)
    if slope <= 0 or last <= first:
        return None
    # What the growth added to the run: each step's trend above the pace at its epoch's start (the
    # fit's intercept; where the trend bends upward and the intercept falls below the first steps'
    # own pace, the first tenth's median), at most all of the steps' time above that pace. Where
    # the first tenth runs above the fit (a rise that comes late: a replay buffer's list.pop(0) once
    # it is full, 0.8 ms steps for half the run, then 2.2), its pace carried back along the slope:
    # the intercept alone counted 6.5 s of growth there, and the fix saved 4.2 s.
    ordered = sorted(keep, key=lambda i: xs[i])
    tenth = ordered[:max(1, len(ordered) // BINS)]
    tenth_pace = statistics.median(durations[i] for i in tenth)
    base = icpt if icpt > 0 else min(first, tenth_pace)
    base = max(base, tenth_pace - slope * statistics.median(xs[i] for i in tenth))
    extra = min(sum(max(0.0, slope * x + icpt - base) for x in xs),
                max(0.0, sum(durations) - base * len(durations)))
    # The main thread's CPU per step, late against early: work that grows takes more of it; a
    # machine that got busier leaves it as it was (the thread waits for a core instead).
    starts = [lo for lo, _ in intervals]
    r_early, r_late = (_running(intervals, starts, g, ran or []) for g in (early, late))
    cpu_ratio = (r_late * last) / (r_early * first) if r_early and r_late else None
    # A machine that got busier slows every line alike, unless the main thread's CPU per step grew
    # with its steps, by half their growth or more (a machine that only got busier leaves it near
    # 1x): then the work itself grew (loaded suite runs: steps 7.7x with CPU per step 12.7x, the cat
    # line dropped by the rest-of-step test on 0.6 ms of early samples; steps 7.1x with CPU 5.4x,
    # the thread running 75% of the late steps, dropped at a bar of three quarters).
    worked = cpu_ratio is not None and cpu_ratio >= 1 + (last / first - 1) * WORK_GREW_SHARE
    busier = not worked and _busier(intervals, early, late, outside)
    line = _growing_line(main, intervals, early, late, waits, busier)
    if line is not None and line.growth_s <= 0:
        line = None
    return StepGrowth(
        first_s=round(first, 6), last_s=round(last, 6), per_step_s=slope, base_s=round(base, 6),
        rho=round(rho, 3), cpu_ratio=round(cpu_ratio, 3) if cpu_ratio is not None else None,
        by_epoch=by_epoch, steps=len(intervals), extra_s=round(extra, 3),
        training_s=round(sum(durations), 3),
        function=line.function if line else None, location=line.location if line else None,
        called_at=line.called_at if line else None, kind=line.kind if line else None,
        statement=line.statement if line else None,
        # (other lines may shrink while one grows: a share above 1 is the whole of it)
        line_share=round(min(1.0, line.growth_s / (last - first)), 3) if line else None)
