"""Loss / grad-norm / learning-rate curves with anomalies marked: JSON for the web app, or a PNG."""

from __future__ import annotations

import math
from pathlib import Path

from assistant.signals import LogSignals, NoMetrics, Point

PLOTTED = ("loss", "grad_norm", "learning_rate", "eval_loss", "rewards/margins", "loss_scale")
_FALLBACK_HINT = "loss"  # any series with this in its name is plotted when none of PLOTTED is there


def _series(signals: LogSignals) -> dict[str, list[Point]]:
    chosen = {name: signals.metrics[name] for name in PLOTTED if signals.metrics.get(name)}
    if not chosen:
        chosen = {n: pts for n, pts in signals.metrics.items() if _FALLBACK_HINT in n and pts}
    if not chosen:
        raise NoMetrics(
            "no loss, grad_norm or learning_rate values in this log; paste the metric lines "
            "({'loss': ...}) or trainer_state.json"
        )
    return chosen


def _x(points: list[Point]) -> list[int]:
    """Steps where the log has them, else 1, 2, 3... in log order."""
    if all(s is not None for s, _ in points):
        return [s for s, _ in points]
    return list(range(1, len(points) + 1))


def curve_data(signals: LogSignals) -> dict:
    """{"steps": [...], "series": {"loss": [...], ...}, "anomalies": [{"kind","step","metric"}]}.

    Series are aligned on the union of steps; a missing or non-finite value is None (JSON null),
    which charting libraries draw as a gap. Raises NoMetrics when there is nothing to plot.
    """
    chosen = _series(signals)
    by_name = {
        name: dict(zip(_x(pts), (v for _, v in pts), strict=True)) for name, pts in chosen.items()
    }
    steps = sorted(set().union(*by_name.values()))
    series = {name: [_finite(values.get(s)) for s in steps] for name, values in by_name.items()}
    anomalies = [{"kind": a.kind, "step": a.step, "metric": a.metric} for a in signals.anomalies]
    return {"steps": steps, "series": series, "anomalies": anomalies}


def write_png(signals: LogSignals, path: str | Path) -> Path:
    """Draw one panel per series, anomaly steps as labelled vertical lines; returns the path."""
    data = curve_data(signals)  # raises NoMetrics before paying for the matplotlib import
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(data["series"])
    fig, axes = plt.subplots(
        len(names), 1, figsize=(8, 2.2 * len(names) + 0.6), sharex=True, squeeze=False
    )
    try:
        for ax, name in zip(axes[:, 0], names, strict=True):
            xs = [
                s for s, v in zip(data["steps"], data["series"][name], strict=True) if v is not None
            ]
            ys = [v for v in data["series"][name] if v is not None]
            ax.plot(xs, ys, linewidth=1.2)
            ax.set_ylabel(name)
            if ys and min(ys) > 0 and max(ys) / max(min(ys), 1e-300) > 1e4:
                ax.set_yscale("log")  # a 1e34 explosion would flatten the rest of the curve
            ax.grid(alpha=0.3)
            for a in data["anomalies"]:
                if a["step"] is None:
                    continue
                ax.axvline(a["step"], color="red", linestyle="--", linewidth=1)
                if a["metric"] == name or name == names[0]:
                    ax.annotate(
                        a["kind"],
                        (a["step"], 1),
                        xycoords=("data", "axes fraction"),
                        rotation=90,
                        va="top",
                        ha="right",
                        fontsize=7,
                        color="red",
                    )
        axes[-1, 0].set_xlabel("step")
        fig.tight_layout()
        out = Path(path)
        fig.savefig(out, dpi=100)
    finally:
        plt.close(fig)
    return out


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None
