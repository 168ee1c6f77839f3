"""LogFollower and follow_file: each new anomaly or error once, as soon as it appears."""

from __future__ import annotations

import threading
import time

import pytest

from assistant.signals import Anomaly, ErrorInfo
from assistant.watch import LogFollower, follow_file

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/x/site-packages/trl/trainer/dpo_trainer.py", line 12, in concatenated_forward\n'
    "    out = model(**batch)\n"
    "ValueError: Cannot handle batch sizes > 1 if no padding token is defined.\n"
)


def kinds(events):
    return [e.kind if isinstance(e, Anomaly) else e.type for e in events]


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 10_000])
def test_chunk_boundaries_do_not_matter(chunk_size):
    text = "".join(
        f"{{'loss': {v}, 'step': {i}}}\n" for i, v in enumerate([1.0, 0.9, 0.0, 0.0, 0.0])
    )
    text += TRACEBACK
    f = LogFollower()
    events = []
    for i in range(0, len(text), chunk_size):
        events += f.feed(text[i : i + chunk_size])
    events += f.close()
    assert kinds(events) == ["zero_collapse", "ValueError"]
    assert events[0].step == 2


def test_events_come_as_soon_as_they_appear_and_once():
    f = LogFollower()
    assert f.feed("{'loss': 1.0, 'step': 1}\n") == []
    assert kinds(f.feed("{'loss': nan, 'step': 2}\n")) == ["nan"]
    assert f.feed("{'loss': nan, 'step': 3}\n") == []
    assert kinds(f.feed(TRACEBACK)) == ["ValueError"]
    assert f.feed(TRACEBACK.replace("[rank0]", "")) == []  # the same error from another rank
    assert kinds(
        f.feed("[E ProcessGroupNCCL.cpp:475] NCCL Watchdog caught collective operation timeout\n")
    ) == ["error_line"]


def test_feed_lines_for_stdin():
    lines = ["{'grad_norm': 1.0}", "{'grad_norm': 0.0}", "{'grad_norm': 0.0}", "{'grad_norm': 0.0}"]
    events = list(LogFollower().feed_lines(lines))
    assert kinds(events) == ["grad_norm_zero"]


def test_incremental_state_keeps_series():
    f = LogFollower()
    for i in range(100):
        f.feed(f"{{'loss': {2 - i / 100:.3f}, 'step': {i}}}\n")
    assert len(f.signals().metrics["loss"]) == 100


def _collect(path, stop, out):
    for event in follow_file(path, poll_s=0.02, stop=stop):
        out.append(event)


def _wait_for(out, n, timeout=5.0):
    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        time.sleep(0.02)


def test_follow_file_growth_truncation_and_rotation(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("{'loss': 1.0, 'step': 1}\n")
    stop = threading.Event()
    out: list = []
    t = threading.Thread(target=_collect, args=(path, stop, out), daemon=True)
    t.start()
    try:
        with path.open("a") as fh:
            fh.write("{'loss': nan, 'step': 2}\n")
        _wait_for(out, 1)
        assert kinds(out) == ["nan"]
        path.write_text(TRACEBACK)  # truncated and rewritten
        _wait_for(out, 2)
        assert isinstance(out[1], ErrorInfo)
        rotated = tmp_path / "train.log.1"
        path.rename(rotated)
        path.write_text("{'grad_norm': 0.0}\n" * 3)  # a new file at the same path
        _wait_for(out, 3)
        assert kinds(out)[-1] == "grad_norm_zero"
    finally:
        stop.set()
        t.join(timeout=5)
    assert not t.is_alive()


def test_follow_missing_file_waits(tmp_path):
    stop = threading.Event()
    out: list = []
    t = threading.Thread(target=_collect, args=(tmp_path / "later.log", stop, out), daemon=True)
    t.start()
    time.sleep(0.1)
    (tmp_path / "later.log").write_text("{'loss': inf}\n")
    _wait_for(out, 1)
    stop.set()
    t.join(timeout=5)
    assert kinds(out) == ["inf"]
