"""Shrink a long log to the lines that identify the failure, for retrieval and for the prompt."""

from __future__ import annotations

import math
import re

from assistant.errorlines import classify
from assistant.metrics import parse_record
from assistant.signals import LogSignals
from assistant.versions import PACKAGES

_COMMAND_WORDS = (
    "torchrun",
    "deepspeed ",
    "accelerate launch",
    "llamafactory-cli",
    "python ",
    "python3 ",
    "swift ",
    "openrlhf",
    "axolotl",
)
_CONFIG_KEYS = (
    "stage",
    "finetuning_type",
    "fp16",
    "bf16",
    "deepspeed",
    "zero",
    "model_name_or_path",
    "template",
    "learning_rate",
    "per_device_train_batch_size",
    "quantization_bit",
)
# A row of `pip list` / `pip freeze` / `conda list`: "nvidia-cudnn-cu12    9.1.0.70",
# "peft==0.12.0", "torch  2.4.0+cu121  /path/to/site-packages" (an optional location or build).
_PACKAGE_ROW = re.compile(
    r"^\s*(?:[-*]\s+)?`?([A-Za-z][\w.\-\[\]]*)`?(?:\s*==\s*|[ \t]{2,}|\t)v?\d+(?:\.[\w+\-]+)+"
    r"(?:[ \t]+\S+){0,2}[ \t]*$"
)
PACKAGE_LISTING_MIN_ROWS = 3
_CORE_PACKAGES = frozenset(p.lower().replace("_", "-") for p in PACKAGES)
MAX_LINE = 400
TRACEBACK_HEAD = 3
TRACEBACK_TAIL = 24


def reduce_log(text: str, signals: LogSignals, max_chars: int = 4000) -> str:
    """The lines of `text` that matter, in their original order, gaps shown as "...".

    Priority: exception lines and the last traceback, error/warning lines, the first anomalous
    metric lines, the command line and key config lines, then the first metric lines.
    Inputs shorter than max_chars come back unchanged.
    """
    if len(text) <= max_chars:
        return text
    lines = text.replace("\r\n", "\n").split("\n")
    lines = [ln.rsplit("\r", 1)[-1] if "\r" in ln else ln for ln in lines]
    picked: dict[int, int] = {}  # line index -> priority (lower first)

    tb = _last_traceback(lines)
    for i in tb:
        picked[i] = 0
    exception_lines = {e.line[:120] for e in signals.errors}
    wanted_errors = {ln[:120] for ln in signals.error_lines}
    anomalies = {a.metric: a for a in signals.anomalies}
    metric_seen = 0
    for i, line in enumerate(lines):
        if len(line) > 10_000:
            continue
        stripped = line.strip()
        if stripped[:120] in exception_lines or any(e in line for e in exception_lines if e):
            picked.setdefault(i, 0)
        elif stripped[:120] in wanted_errors or (len(picked) < 400 and classify(line) == "error"):
            picked.setdefault(i, 1)
        elif "{" in line and metric_seen < 1000:
            rec = parse_record(line)
            if rec is None:
                continue
            metric_seen += 1
            if metric_seen <= 2:
                picked.setdefault(i, 4)
            for name, value in rec[1].items():
                a = anomalies.get(name)
                if a is not None and _shows(a.kind, value):
                    picked.setdefault(i, 2)
                    anomalies.pop(name)
                    break
        elif stripped.startswith(_COMMAND_WORDS) or any(w in line for w in _COMMAND_WORDS[:5]):
            picked.setdefault(i, 3)
        elif ":" in stripped and stripped.split(":", 1)[0].strip() in _CONFIG_KEYS:
            picked.setdefault(i, 3)

    budget = max_chars
    keep: set[int] = set()
    for i in sorted(picked, key=lambda i: (picked[i], -i if picked[i] == 0 else i)):
        cost = min(len(lines[i]), MAX_LINE) + 1
        if cost > budget:
            continue
        keep.add(i)
        budget -= cost
    out: list[str] = []
    last = -1
    for i in sorted(keep):
        if i != last + 1:
            out.append("...")
        line = lines[i]
        out.append(line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "...")
        last = i
    if last != len(lines) - 1:
        out.append("...")
    return "\n".join(out)


def drop_package_listing(text: str) -> str:
    """`text` without the rows of a pasted package listing that name other than the libraries
    whose versions tell (torch, transformers, trl, ...).

    Issue templates ask for `pip list`; its hundred rows ("nvidia-cudnn-cu12 9.1.0.70", "openai
    1.54.4") are nothing the run did, yet they matched cases about those packages (a cuDNN
    sub-library clash) better than the error did. The versions themselves are read from the whole
    text before this. Text with fewer rows than a listing has comes back unchanged.
    """
    lines = text.split("\n")
    rows = [i for i, line in enumerate(lines) if len(line) < 300 and _PACKAGE_ROW.match(line)]
    if len(rows) < PACKAGE_LISTING_MIN_ROWS:
        return text
    dropped = {
        i
        for i in rows
        if _PACKAGE_ROW.match(lines[i]).group(1).lower().replace("_", "-") not in _CORE_PACKAGES
    }
    return "\n".join(line for i, line in enumerate(lines) if i not in dropped)


def _last_traceback(lines: list[str]) -> list[int]:
    """Indices of the last traceback: its head and its last frames up to the exception."""
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if "Traceback (most recent call last)" in lines[i]:
            start = i
            break
    if start is None:
        return []
    end = start
    for j in range(start + 1, min(len(lines), start + 400)):
        body = lines[j].split("]: ", 1)[-1] if lines[j].startswith("[") else lines[j]
        if body[:1] in (" ", "\t") or not body.strip():
            end = j
            continue
        end = j  # the exception line closes it
        break
    idx = list(range(start, end + 1))
    if len(idx) > TRACEBACK_HEAD + TRACEBACK_TAIL:
        idx = idx[:TRACEBACK_HEAD] + idx[-TRACEBACK_TAIL:]
    return idx


def _shows(kind: str, value: float) -> bool:
    """Does this value display the anomaly (so its line is worth keeping)?"""
    if kind in ("nan", "grad_norm_nan"):
        return math.isnan(value)
    if kind == "inf":
        return math.isinf(value)
    if kind in ("zero_collapse", "grad_norm_zero"):
        return value == 0.0
    if kind == "stuck_ln2":
        return abs(value - math.log(2)) < 0.005
    if kind == "explosion":
        return abs(value) > 1e3
    return False
