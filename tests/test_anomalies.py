"""Anomaly detection: each failure shape is found where it starts; healthy curves raise nothing."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from assistant.anomalies import AnomalyMonitor, detect
from assistant.logs import analyze_bytes

NAN, INF = math.nan, math.inf
FIXTURES = Path(__file__).parent / "fixtures" / "logs"


def steps(values, start=10, every=10):
    return [(start + i * every, v) for i, v in enumerate(values)]


def noisy_decay(n, start=2.0, floor=0.4, noise=0.03, seed=0):
    rnd = random.Random(seed)
    out, v = [], start
    for _ in range(n):
        v = max(floor, v * 0.97)
        out.append(v + rnd.uniform(-noise, noise))
    return out


def dpo_healthy(n, seed=0):
    rnd = random.Random(seed)
    return [max(0.2, 0.6931 - 0.004 * i + rnd.uniform(-0.002, 0.002)) for i in range(n)]


@pytest.mark.parametrize(
    "metrics",
    [
        {"loss": steps(noisy_decay(200))},
        {"loss": steps(noisy_decay(200, seed=1)), "grad_norm": steps([5.0] + [1.0] * 199)},
        {"loss": steps(dpo_healthy(150), start=1, every=1)},
        {"loss": steps([0.6931, 0.6930, 0.6925, 0.6901, 0.6850])},  # early DPO: still moving
        {"learning_rate": steps([0.0, 1e-5, 2e-5, 2e-5, 1e-5, 0.0])},  # lr at 0 is normal
        {"rewards/chosen": steps([0.0, 0.0, 0.0, 0.01, 0.05])},  # so are rewards at 0
        {"loss": steps(noisy_decay(60, noise=0.3, seed=2), every=1)},  # noisy per-step logging
        {"eval_loss": steps([1.2, 1.1, 1.05, 1.08, 1.12, 1.2])},
        {"loss_scale": steps([65536, 32768, 16384, 16384, 32768])},
        {"logps/chosen": steps([-350.0, -352.0, -360.0, -2000.0])},
    ],
    ids=[
        "sft",
        "sft-gradnorm",
        "dpo",
        "dpo-early",
        "lr",
        "rewards",
        "noisy",
        "eval",
        "scale",
        "logps",
    ],
)
def test_healthy_curves_raise_nothing(metrics):
    assert detect(metrics) == []


@pytest.mark.parametrize("name", ["healthy_sft.log", "healthy_dpo.log"])
def test_healthy_fixtures_raise_nothing(name):
    assert analyze_bytes((FIXTURES / name).read_bytes()).anomalies == []


@pytest.mark.parametrize(
    "metrics, kind, metric, step",
    [
        ({"loss": steps([1.5, 1.2, 0.0, 0.0, 0.0, 0.0])}, "zero_collapse", "loss", 30),
        ({"loss": steps([1.5, 1.2, 1.0, 0.0])}, "zero_collapse", "loss", 40),  # at the end
        ({"loss": [(None, 0.0)]}, "zero_collapse", "loss", None),  # a single pasted line
        ({"loss": steps([1.5, 1.2, NAN, NAN])}, "nan", "loss", 30),
        ({"loss": steps([1.5, INF, NAN])}, "inf", "loss", 20),
        ({"grad_norm": steps([1.0, 0.9, NAN])}, "grad_norm_nan", "grad_norm", 30),
        ({"grad_norm": steps([1.0, 0.0, 0.0, 0.0])}, "grad_norm_zero", "grad_norm", 20),
        ({"loss": steps([0.69, 0.6, 0.5, 1.19e34])}, "explosion", "loss", 40),
        ({"loss": steps([2.1, 2.0, 1.9, 1.9, 1.8, 1.8, 250.0])}, "explosion", "loss", 70),
        ({"rewards/chosen": steps([0.1, 0.2, -3e5])}, "explosion", "rewards/chosen", 30),
        ({"loss": steps([0.6931] * 12)}, "stuck_ln2", "loss", 10),
        (
            {"loss": steps([0.6934, 0.6929, 0.6931, 0.6935, 0.6928, 0.6932, 0.693, 0.6931])},
            "stuck_ln2",
            "loss",
            10,
        ),
        ({"loss": steps([2.5] * 25)}, "flat", "loss", 10),
        ({"loss": steps(noisy_decay(30, noise=0.01) + [9.5, 0.6])}, "spike", "loss", 310),
        (
            {"loss": steps(noisy_decay(100, floor=0.5, noise=0.01) + [2.5] * 20)},
            "divergence",
            "loss",
            None,
        ),
        ({"loss_scale": steps([4.0, 2.0, 1.0])}, "loss_scale_min", "loss_scale", 30),
    ],
)
def test_detects(metrics, kind, metric, step):
    found = [a for a in detect(metrics) if a.kind == kind]
    assert found, detect(metrics)
    a = found[0]
    assert a.metric == metric
    if step is not None or kind != "divergence":
        assert a.step == step
    assert a.detail and metric in a.detail or kind.startswith(("loss_scale", "stuck"))


def test_ln2_needs_enough_steps_to_be_stuck():
    # Five logged steps at ln 2 over 4 steps of a fresh DPO run is not "stuck" yet.
    assert detect({"loss": steps([0.6931] * 5, start=1, every=1)}) == []


def test_overflow_skips_and_minimum():
    m = AnomalyMonitor()
    scale = 65536.0
    for step in range(12):
        scale /= 2
        m.overflow(step, scale)
    kinds = {a.kind for a in m.finish()}
    assert "overflow_skips" in kinds
    few = AnomalyMonitor()
    for step in range(4):  # a fresh fp16 run settles its scale with a few skips
        few.overflow(step, 65536.0 / 2 ** (step + 1))
    assert few.finish() == []
    at_min = AnomalyMonitor()
    at_min.scale_at_minimum(7)
    assert [(a.kind, a.step) for a in at_min.finish()] == [("loss_scale_min", 7)]


def test_each_anomaly_reported_once():
    m = AnomalyMonitor()
    for i in range(50):
        m.add("loss", i, NAN)
    assert len(m.finish()) == 1
