"""Curve data for the web app and the PNG, anomalies marked; NoMetrics when there is no curve."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from assistant.logs import analyze, analyze_bytes
from assistant.plot import curve_data, write_png
from assistant.signals import LogSignals, NoMetrics

FIXTURES = Path(__file__).parent / "fixtures" / "logs"


def test_curve_data_aligns_series_and_nulls_nonfinite():
    s = analyze_bytes((FIXTURES / "hf_fp16_7b_zero.log").read_bytes())
    d = curve_data(s)
    assert d["steps"] == list(range(10, 101, 10))
    assert set(d["series"]) == {"loss", "grad_norm", "learning_rate"}
    assert all(len(v) == len(d["steps"]) for v in d["series"].values())
    assert d["series"]["grad_norm"][3] is None  # nan -> null
    assert {"kind": "zero_collapse", "step": 40, "metric": "loss"} in d["anomalies"]
    json.dumps(d, allow_nan=False)


def test_curve_data_without_steps_uses_log_order():
    d = curve_data(analyze("{'loss': 1.0}\n{'loss': 0.8}\n{'loss': 0.7}"))
    assert d["steps"] == [1, 2, 3]
    assert d["series"]["loss"] == [1.0, 0.8, 0.7]


def test_curve_data_mixed_lengths():
    s = LogSignals(metrics={"loss": [(1, 1.0), (2, 0.9)], "eval_loss": [(2, 1.1)]})
    d = curve_data(s)
    assert d["steps"] == [1, 2]
    assert d["series"]["eval_loss"] == [None, 1.1]


@pytest.mark.parametrize(
    "signals",
    [LogSignals(), LogSignals(metrics={"loss": []}), analyze("ValueError: x")],
)
def test_no_metrics(signals):
    with pytest.raises(NoMetrics, match="trainer_state.json"):
        curve_data(signals)
    with pytest.raises(NoMetrics):
        write_png(signals, "unused.png")


@pytest.mark.parametrize("name", ["trl_rm_explode.log", "trainer_state.json", "healthy_sft.log"])
def test_write_png(tmp_path, name):
    s = analyze_bytes((FIXTURES / name).read_bytes())
    out = write_png(s, tmp_path / "curve.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_png_with_only_nan():
    s = LogSignals(metrics={"loss": [(1, math.nan), (2, math.nan)]})
    assert curve_data(s)["series"]["loss"] == [None, None]
