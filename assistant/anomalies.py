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


def median(values) -> float:
    s = sorted(values)  # windows are small: sorting beats statistics.median's checks
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def is_loss(name: str) -> bool:
    return "loss" in name and "scale" not in name


def is_grad_norm(name: str) -> bool:
    return name.endswith("grad_norm")


_LIMITS: dict[str, float | None] = {}


def _explodes_at(name: str) -> float | None:
    """Absolute threshold for `explosion`, or None where big values are normal."""
    if name not in _LIMITS:
        _LIMITS[name] = _limit(name)
    return _LIMITS[name]


def _limit(name: str) -> float | None:
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
        st = self._series.get(name)
        if st is None:
            st = self._series[name] = _Series(name)
        st.n += 1
        at = (step, st.n)
        st.last = at
        st.last_value = value
        if st.first is None:
            st.first = at
        loss, gnorm = is_loss(name), is_grad_norm(name)

        if math.isnan(value) or math.isinf(value):
            if _explodes_at(name) is None:
                return  # a nan learning rate or throughput is a symptom, not news
            word = "nan" if math.isnan(value) else "inf"
            kind = "grad_norm_nan" if gnorm and word == "nan" else word
            self._report(kind, name, step, f"{name} is {word} from {where(*at)}")
            return

        if name == "loss_scale" and value <= 1:
            self._report(
                "loss_scale_min", name, step,
                f"fp16 loss scale fell to {value:g} (its minimum) at {where(*at)}",
            )
        if loss or gnorm:
            self._track_zero(st, value, at, gnorm)
        limit = _explodes_at(name)
        if limit is not None and self._explodes(st, value, limit, loss or gnorm):
            self._report(
                "explosion", name, step, f"{name} exploded to {value:.4g} at {where(*at)}"
            )
        if loss and not name.startswith("eval"):
            self._track_spike(st, value, at)
        st.n_finite += 1
        st.lo = min(st.lo, value)
        st.hi = max(st.hi, value)
        if loss and abs(value - LN2) <= LN2_TOL:
            st.n_ln2 += 1
        if len(st.early) < EARLY_POINTS:
            st.early.append(abs(value))
            if len(st.early) >= 5:
                st.early_median = median(st.early)

    def _track_zero(self, st: _Series, value: float, at: tuple[int | None, int], gnorm: bool):
        if value != 0.0:
            st.nonzero_seen = True
            st.zero_start, st.zero_len = None, 0
            return
        if st.zero_start is None:
            st.zero_start = at
            st.zero_was_first = not st.nonzero_seen
        st.zero_len += 1
        if st.zero_len >= ZERO_RUN:
            self._report_zero(st, gnorm)

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

    def _explodes(self, st: _Series, value: float, limit: float, relative: bool) -> bool:
        v = abs(value)
        if v > limit:
            return True
        med = st.early_median
        return relative and med is not None and v >= 10 and v > EXPLODE_RATIO * max(med, 1e-3)

    def _track_spike(self, st: _Series, value: float, at: tuple[int | None, int]) -> None:
        if len(st.window) >= 8 and ("explosion", st.name) not in self._keys:
            med = median(st.window)
            if value > SPIKE_RATIO * med and value - med > SPIKE_MIN_JUMP:
                self._report(
                    "spike", st.name, at[0],
                    f"{st.name} jumped from about {med:.3g} to {value:.4g} at {where(*at)}",
                )
            elif st.n_finite >= 15:
                w = st.window
                recent = median((w[-1], w[-2], w[-3], w[-4], w[-5], value))
                if recent > 3 * st.best_median and recent - st.best_median > SPIKE_MIN_JUMP:
                    self._report(
                        "divergence", st.name, at[0],
                        f"{st.name} is diverging: up from {st.best_median:.3g} to "
                        f"{recent:.3g} by {where(*at)}",
                    )
            st.best_median = min(st.best_median, med)
        st.window.append(value)

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
            self._report("overflow_skips", "loss_scale", self._overflow_first, self._overflow_text())

    def scale_at_minimum(self, step: int | None) -> None:
        self._report(
            "loss_scale_min", "loss_scale", step,
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
                    "stuck_ln2", st.name, first_step,
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
                    "flat", st.name, st.first[0],
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
        """End of the log: a short run of zeros at the very end still counts."""
        self.check_series()
        for st in self._series.values():
            gnorm = is_grad_norm(st.name)
            if not (is_loss(st.name) or gnorm) or st.zero_start is None:
                continue
            if st.zero_len >= 2 or st.n <= 2:
                self._report_zero(st, gnorm)
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
