"""Anomaly detection over metric series, point by point, so a followed log is never re-scanned."""

from __future__ import annotations

import math
from collections import deque

from assistant.signals import Anomaly, Point

LN2 = math.log(2)
LN2_TOL = 0.005
EXPLODE_ABS = 1e4  # no healthy loss, reward or grad norm reaches this
EXPLODE_RATIO = 100.0  # times the median of the first points
ZERO_RUN = 3  # consecutive exact zeros before we call it a collapse while streaming
FLAT_MIN_POINTS = 20
SPIKE_RATIO = 4.0
SPIKE_MIN_JUMP = 1.0
OVERFLOW_SKIPS = 10  # a fresh fp16 run skips a handful of steps while the scaler settles
EARLY_POINTS = 8
BEST_WINDOW = 200  # divergence is judged against the best level of the last ~200 points
QUIET_BLOCK = 256  # points of a non-loss series checked at once in bulk reads


def median(values) -> float:
    s = sorted(values)  # windows are small: sorting beats statistics.median's checks
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def is_loss(name: str) -> bool:
    return "loss" in name and "scale" not in name


def is_grad_norm(name: str) -> bool:
    return name.endswith("grad_norm")


def _explodes_at(name: str) -> float | None:
    """Absolute threshold for `explosion`, or None where big values are normal."""
    if is_loss(name) or is_grad_norm(name):
        return EXPLODE_ABS
    if any(k in name for k in ("logps", "logits")):
        return 1e6  # summed log-probs of long sequences run into the thousands
    if any(k in name for k in ("reward", "margin", "kl", "chosen", "rejected", "score", "entropy")):
        return EXPLODE_ABS
    return None


def where(step: int | None, ordinal: int) -> str:
    return f"step {step}" if step is not None else f"logged point {ordinal}"


class _Series:
    """Running state for one metric: just enough counters to judge each new point in O(1)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.n = 0
        self.nonzero_seen = False
        self.zero_start: tuple[int | None, int] | None = None
        self.zero_len = 0
        self.zero_was_first = False
        self.early: list[float] = []
        self.early_median: float | None = None
        self.window: deque[float] = deque(maxlen=16)
        self.best_median = math.inf
        self.lo = math.inf
        self.hi = -math.inf
        self.n_finite = 0
        self.n_ln2 = 0
        self.first: tuple[int | None, int] | None = None
        self.last: tuple[int | None, int] = (None, 0)
        self.last_value = math.nan
        self.loss = is_loss(name)
        self.gnorm = is_grad_norm(name)
        self.watch_zero = self.loss or self.gnorm
        self.spiky = self.loss and not name.startswith("eval")
        self.limit = _explodes_at(name)
        self.relative = self.loss or self.gnorm  # also judged against the first points
        # learning_rate, accuracies, throughput: no detector looks at them
        self.watched = self.limit is not None or self.watch_zero or name == "loss_scale"
        self.median = math.inf
        self.median_due = 0
        self.best_due = 0


def _ready(st: _Series) -> bool:
    """Past the first point and the early points, and not inside a run of zeros."""
    return (
        st.first is not None
        and not st.zero_len
        and (st.limit is None or len(st.early) >= EARLY_POINTS)
    )


def _quiet_bounds(st: _Series) -> tuple[float, float]:
    """(big, floor): a quiet point has -big < value < big and value > floor."""
    big = 10.0 if st.limit is not None else math.inf  # explosion is judged from 10 on
    floor = 1.0 if st.name == "loss_scale" else -math.inf  # a scale <= 1 is at its minimum
    return big, floor


class AnomalyMonitor:
    """Feed points with `add`; `found` holds each anomaly once, in the order they appeared.

    >>> m = AnomalyMonitor()
    >>> for s, v in [(10, 1.2), (20, 0.0), (30, 0.0), (40, 0.0)]:
    ...     m.add("loss", s, v)
    >>> m.found[0].kind, m.found[0].step
    ('zero_collapse', 20)
    """

    def __init__(self) -> None:
        self.found: list[Anomaly] = []
        self._keys: dict[tuple[str, str], int] = {}
        self._series: dict[str, _Series] = {}
        self._overflows = 0
        self._overflow_first: int | None = None  # step of the first skip, when known
        self._overflow_low: float | None = None

    # -- reporting ---------------------------------------------------------------------------
    def _report(self, kind: str, metric: str, step: int | None, detail: str) -> None:
        key = (kind, metric)
        if key in self._keys:
            return
        self._keys[key] = len(self.found)
        self.found.append(Anomaly(kind, metric, step, detail))

    def _replace(self, kind: str, metric: str, detail: str) -> None:
        i = self._keys.get((kind, metric))
        if i is not None:
            a = self.found[i]
            self.found[i] = Anomaly(a.kind, a.metric, a.step, detail)

    # -- points ------------------------------------------------------------------------------
    def add(self, name: str, step: int | None, value: float) -> None:
        """Judge one point. The common case (a finite, unremarkable value) is a few compares."""
        st = self._series.get(name)
        if st is None:
            st = self._series[name] = _Series(name)
        if not st.watched:
            st.n += 1
            return
        self._judge(st, step, value)

    def add_records(self, steps: list[int | None], columns: dict[str, list[float]]) -> None:
        """Many records at once: record i has steps[i] and columns[name][i] for each name.

        Finds what add() would, record by record and name by name, in the same order; the series
        are walked one at a time, so a long run of healthy points costs a few compares each.
        """
        start = len(self.found)
        rows: list[tuple[int, int]] = []  # (record, column) where each new anomaly appeared
        for col, (name, values) in enumerate(columns.items()):
            rows.extend((row, col) for row in self._add_points(name, steps, values))
        if len(rows) > 1:
            # Reported series by series; put them back in the order a line-by-line read finds.
            order = sorted(range(len(rows)), key=rows.__getitem__)
            new = [self.found[start + i] for i in order]
            self.found[start:] = new
            for i, a in enumerate(new, start):
                self._keys[(a.kind, a.metric)] = i

    def _add_points(self, name: str, steps: list[int | None], values: list[float]) -> list[int]:
        """add() for each point of one series; returns the record index of each new anomaly."""
        st = self._series.get(name)
        if st is None:
            st = self._series[name] = _Series(name)
        if not st.watched:
            st.n += len(values)
            return []
        if st.loss:
            return self._walk(st, steps, values, 0)
        # Other series (grad norm, rewards, loss scale) keep no per-point state, so a block of
        # quiet points is taken whole, by C loops (sum, min, max).
        rows = []
        for at in range(0, len(values), QUIET_BLOCK):
            block = values[at : at + QUIET_BLOCK]
            if not self._quiet_block(st, steps[at + len(block) - 1], block):
                rows += self._walk(st, steps[at : at + QUIET_BLOCK], block, at)
        return rows

    @staticmethod
    def _quiet_block(st: _Series, last_step: int | None, values: list[float]) -> bool:
        """Take a block of a non-loss series whole if every point is quiet (see _walk)."""
        if not (_ready(st) and math.isfinite(sum(values))):  # nan or inf: the sum is not finite
            return False
        lo, hi = min(values), max(values)
        big, floor = _quiet_bounds(st)
        if not (-big < lo and hi < big and lo > floor) or 0.0 in values:
            return False
        st.n += len(values)
        st.n_finite += len(values)
        st.lo, st.hi = min(st.lo, lo), max(st.hi, hi)
        st.nonzero_seen = st.nonzero_seen or st.watch_zero
        st.last, st.last_value = (last_step, st.n), values[-1]
        return True

    def _walk(
        self, st: _Series, steps: list[int | None], values: list[float], offset: int
    ) -> list[int]:
        """add() point by point, quiet points with locals; rows are offset + index."""
        found, rows = self.found, []
        # A quiet point is finite, nonzero, below every absolute threshold, after the early
        # points and outside a run of zeros. For it _judge only counts, tracks the range, the
        # ln 2 band and the spike window, which this loop does with locals, calling the same
        # helpers as _track_spike; every other point goes to _judge itself, so each anomaly
        # still has one definition.
        big, floor = _quiet_bounds(st)
        loss, spiky, window = st.loss, st.spiky, st.window
        append, refresh, check = window.append, self._refresh_median, self._spike_or_divergence
        n, n_finite, lo, hi, n_ln2 = st.n, st.n_finite, st.lo, st.hi, st.n_ln2
        ready, armed = _ready(st), self._armed(st)
        median_due, low = st.median_due, min(st.median, st.best_median)
        quiet_seen = False
        for i, (step, value) in enumerate(zip(steps, values, strict=True)):
            if ready and -big < value < big and value != 0.0 and value > floor:
                n += 1
                n_finite += 1
                if value < lo:
                    lo = value
                if value > hi:
                    hi = value
                quiet_seen = True
                if not loss:
                    continue
                if -LN2_TOL <= value - LN2 <= LN2_TOL:
                    n_ln2 += 1
                if not spiky:
                    continue
                if not armed:  # _track_spike before the window holds 8 points
                    append(value)
                    armed = self._armed(st)
                    continue
                if n_finite >= median_due:
                    st.n_finite = n_finite
                    refresh(st)
                    median_due, low = st.median_due, min(st.median, st.best_median)
                if value - low > SPIKE_MIN_JUMP:
                    st.n_finite, st.last = n_finite, (step, n)
                    before = len(found)
                    check(st, value)
                    rows.extend([offset + i] * (len(found) - before))
                append(value)
                continue
            st.n, st.n_finite, st.lo, st.hi, st.n_ln2 = n, n_finite, lo, hi, n_ln2
            if quiet_seen and st.watch_zero:
                st.nonzero_seen = True
            before = len(found)
            self._judge(st, step, value)
            rows.extend([offset + i] * (len(found) - before))
            n, n_finite, lo, hi, n_ln2 = st.n, st.n_finite, st.lo, st.hi, st.n_ln2
            ready, armed = _ready(st), self._armed(st)
            median_due, low = st.median_due, min(st.median, st.best_median)
            quiet_seen = False
        st.n, st.n_finite, st.lo, st.hi, st.n_ln2 = n, n_finite, lo, hi, n_ln2
        if quiet_seen:
            if st.watch_zero:
                st.nonzero_seen = True
            st.last, st.last_value = (steps[-1], n), values[-1]
        return rows

    def _armed(self, st: _Series) -> bool:
        """Whether _track_spike judges the next point: 8 in the window and no explosion yet."""
        return len(st.window) >= 8 and ("explosion", st.name) not in self._keys

    def _judge(self, st: _Series, step: int | None, value: float) -> None:
        """Every check on one point of a watched series."""
        name = st.name
        st.n += 1
        st.last = (step, st.n)
        st.last_value = value
        if st.first is None:
            st.first = st.last

        if value - value != 0.0:  # nan or +-inf
            if st.limit is None:
                return  # a nan learning rate or throughput is a symptom, not news
            word = "nan" if value != value else "inf"
            kind = "grad_norm_nan" if st.gnorm and word == "nan" else word
            self._report(kind, name, step, f"{name} is {word} from {where(*st.last)}")
            return

        st.n_finite += 1
        if value < st.lo:
            st.lo = value
        if value > st.hi:
            st.hi = value
        if st.watch_zero:
            if value == 0.0:
                self._zero(st)
            elif st.zero_len:
                st.zero_start, st.zero_len = None, 0
                st.nonzero_seen = True
            else:
                st.nonzero_seen = True
        if st.limit is not None:
            v = value if value >= 0 else -value
            if v >= 10 and self._explodes(st, v):
                self._report(
                    "explosion", name, step, f"{name} exploded to {value:.4g} at {where(*st.last)}"
                )
            if len(st.early) < EARLY_POINTS:
                st.early.append(v)
                if len(st.early) >= 5:
                    st.early_median = median(st.early)
        if st.loss:
            if -LN2_TOL <= value - LN2 <= LN2_TOL:
                st.n_ln2 += 1
            if st.spiky:
                self._track_spike(st, value)
        elif name == "loss_scale" and value <= 1:
            self._report(
                "loss_scale_min",
                name,
                step,
                f"fp16 loss scale fell to {value:g} (its minimum) at {where(*st.last)}",
            )

    def _zero(self, st: _Series) -> None:
        if st.zero_start is None:
            st.zero_start = st.last
            st.zero_was_first = not st.nonzero_seen
        st.zero_len += 1
        if st.zero_len >= ZERO_RUN:
            self._report_zero(st, st.gnorm)

    def _report_zero(self, st: _Series, gnorm: bool) -> None:
        step, ordinal = st.zero_start
        if gnorm:
            detail = f"{st.name} is exactly 0 from {where(step, ordinal)}: no gradient flows"
            self._report("grad_norm_zero", st.name, step, detail)
        elif st.zero_was_first:
            detail = f"{st.name} is 0.0 from {where(step, ordinal)} (the first logged point) on"
            self._report("zero_collapse", st.name, step, detail)
        else:
            detail = f"{st.name} fell to 0.0 at {where(step, ordinal)} and stayed there"
            self._report("zero_collapse", st.name, step, detail)

    def _explodes(self, st: _Series, v: float) -> bool:
        if v > st.limit:
            return True
        med = st.early_median
        return st.relative and med is not None and v > EXPLODE_RATIO * max(med, 1e-3)

    def _track_spike(self, st: _Series, value: float) -> None:
        w = st.window
        if len(w) >= 8 and ("explosion", st.name) not in self._keys:
            # The window median is refreshed every 8 points; only a candidate pays for a sort.
            if st.n_finite >= st.median_due:
                self._refresh_median(st)
            if value - min(st.median, st.best_median) > SPIKE_MIN_JUMP:
                self._spike_or_divergence(st, value)
        w.append(value)

    @staticmethod
    def _refresh_median(st: _Series) -> None:
        st.median = median(st.window)
        st.median_due = st.n_finite + 8
        if st.median < st.best_median or st.n_finite >= st.best_due:
            st.best_median, st.best_due = st.median, st.n_finite + BEST_WINDOW

    def _spike_or_divergence(self, st: _Series, value: float) -> None:
        """A point well above the recent median or the best level: confirm against the window."""
        w = st.window
        med = st.median
        if value > SPIKE_RATIO * med and value - med > SPIKE_MIN_JUMP:
            med = median(w)
            if value > SPIKE_RATIO * med and value - med > SPIKE_MIN_JUMP:
                self._report(
                    "spike",
                    st.name,
                    st.last[0],
                    f"{st.name} jumped from about {med:.3g} to {value:.4g} at {where(*st.last)}",
                )
        best = st.best_median
        if st.n_finite >= 15 and value > 3 * best and value - best > SPIKE_MIN_JUMP:
            recent = median((w[-1], w[-2], w[-3], w[-4], w[-5], value))
            if recent > 3 * best and recent - best > SPIKE_MIN_JUMP:
                self._report(
                    "divergence",
                    st.name,
                    st.last[0],
                    f"{st.name} is diverging: up from {best:.3g} to "
                    f"{recent:.3g} by {where(*st.last)}",
                )

    # -- events that are not series points --------------------------------------------------
    def overflow(self, step: int | None, reduced_to: float | None = None) -> None:
        """One fp16 overflow skip (DeepSpeed "OVERFLOW!", apex "Gradient overflow")."""
        self._overflows += 1
        if self._overflows == 1:
            self._overflow_first = step
        if reduced_to is not None:
            low = self._overflow_low
            self._overflow_low = reduced_to if low is None else min(low, reduced_to)
            if reduced_to <= 1:
                self.scale_at_minimum(step)
        if self._overflows >= OVERFLOW_SKIPS:
            self._report(
                "overflow_skips", "loss_scale", self._overflow_first, self._overflow_text()
            )

    def scale_at_minimum(self, step: int | None) -> None:
        self._report(
            "loss_scale_min",
            "loss_scale",
            step,
            "fp16 loss scale is at its minimum and cannot decrease: every step overflows"
            + (f" (from step {step})" if step is not None else ""),
        )

    def _overflow_text(self) -> str:
        first = self._overflow_first
        text = f"fp16 gradient overflow skipped {self._overflows} optimizer steps"
        if first is not None:
            text += f" (first at step {first})"
        if self._overflow_low is not None:
            text += f"; loss scale down to {self._overflow_low:g}"
        return text

    # -- whole-series checks ------------------------------------------------------------------
    def check_series(self) -> None:
        """Judgements that need many points (stuck at ln 2, flat); O(1) per series."""
        for st in self._series.values():
            if not is_loss(st.name) or st.n_finite == 0:
                continue
            if self._stuck_ln2(st):
                first_step, first_ord = st.first
                label = "DPO/RM loss" if st.name in ("loss", "eval_loss", "train_loss") else st.name
                self._report(
                    "stuck_ln2",
                    st.name,
                    first_step,
                    f"{label} stuck at 0.6931 (ln 2) from {where(first_step, first_ord)}: "
                    "chosen and rejected are not being separated",
                )
            elif (
                st.n_finite >= FLAT_MIN_POINTS
                and st.hi - st.lo <= 1e-4 * max(1.0, abs(st.hi))
                and st.hi != 0.0
                and st.n_ln2 == 0
            ):
                self._report(
                    "flat",
                    st.name,
                    st.first[0],
                    f"{st.name} never moves: {st.n_finite} logged points all at {st.hi:.6g}",
                )
        if self._overflows >= OVERFLOW_SKIPS:
            self._replace("overflow_skips", "loss_scale", self._overflow_text())

    @staticmethod
    def _stuck_ln2(st: _Series) -> bool:
        if st.n_finite < 5 or st.n_ln2 < 0.8 * st.n_finite:
            return False
        if abs(st.last_value - LN2) > LN2_TOL:
            return False
        # A healthy DPO run starts at ln 2 too; it has left it within a few dozen steps.
        first_step, last_step = st.first[0], st.last[0]
        if first_step is not None and last_step is not None:
            return last_step - first_step >= 30
        return st.n_finite >= 10

    def finish(self) -> list[Anomaly]:
        """End of the log: a run of zeros at the very end counts, however short."""
        self.check_series()
        for st in self._series.values():
            gnorm = is_grad_norm(st.name)
            if not (is_loss(st.name) or gnorm) or st.zero_start is None:
                continue
            self._report_zero(st, gnorm)  # an exact 0.0 is never a healthy last value
        return list(self.found)


def detect(metrics: dict[str, list[Point]]) -> list[Anomaly]:
    """Anomalies in finished series, in log order.

    {"loss": [(10, 1.2), (20, nan)]} -> [Anomaly("nan", "loss", 20, "loss is nan from step 20")]
    """
    monitor = AnomalyMonitor()
    for name, points in metrics.items():
        for step, value in points:
            monitor.add(name, step, value)
    return monitor.finish()
