"""Say what to ask for when a report cannot be diagnosed: traceback, metrics, command, versions."""

from __future__ import annotations

import re

from assistant.signals import LogSignals
from kb.signatures import only_says_a_process_died

TRACEBACK = "traceback"  # the full traceback including the final exception line
METRICS = "metrics"  # the metric lines of the log or trainer_state.json
COMMAND = "command"  # the launch command / config
VERSIONS = "versions"  # pip list | grep -E "torch|transformers|trl|peft|deepspeed"

# Training-dynamics words: the metrics, not a traceback, show these problems.
_DYNAMICS = re.compile(
    r"\bloss\b|\bnan\b|\bgrad(?:ient)?[_ ]norm|diverg|not (?:decreas|converg|learn)|reward"
    r"|不下降|不收敛|不降|变成\s*0|为\s*0|爆炸|震荡|loss|收敛",
    re.IGNORECASE,
)
_COMMAND = re.compile(
    r"torchrun|deepspeed\s|accelerate launch|llamafactory-cli|python3?\s+\S+\.py|swift (?:sft|rlhf)"
    r"|\.ya?ml\b|--\w+",
)


def missing_info(text: str, signals: LogSignals) -> list[str]:
    """What to ask the user for, most useful first; [] when the report shows the problem.

    "训练报错了，见截图" -> ["traceback", "command", "versions"]
    "loss 不下降，如图" -> ["metrics", "command", "versions"]
    "Traceback (most recent call last):\\n  File \\"train.py\\", line 3" -> ["traceback", ...]
    "ValueError: Cannot handle batch sizes > 1 if no padding token is defined." -> []
    """
    if signals.anomalies or signals.has_error_text:
        return []  # has_error_text is False when the only error is "a child process died"
    if sum(len(points) for points in signals.metrics.values()) >= 3:
        return []  # the curve is here; whatever is wrong, it is in the data we have
    asks: list[str] = []
    cut_traceback = "Traceback (most recent call last)" in text or re.search(
        r'^\s*File "[^"]+", line \d+', text, re.M
    )
    # A loss problem is read from the metrics even when the user sent a screenshot of the curve.
    if not cut_traceback and _DYNAMICS.search(text):
        asks.append(METRICS)
    else:
        asks.append(TRACEBACK)
    if not (signals.flags or _COMMAND.search(text)):
        asks.append(COMMAND)
    if not signals.versions:
        asks.append(VERSIONS)
    return asks


def signature_is_the_error(signatures: list[str]) -> bool:
    """Whether the error strings a case matched are the error itself, so nothing more is needed.

    A case can match on "ChildFailedError" or "failed (exitcode: 1)" alone: that says a worker
    died, not why, so the user is still asked for the worker's traceback. A negative exit code
    (other than -15) names the signal that killed it (-9: the kernel, for memory) and counts as
    the error.
    """
    # (Reports with other error text need nothing either way: missing_info returns [] for them.)
    return any(not only_says_a_process_died(sig) for sig in signatures)
