"""Recognise the distinctive error and warning lines of a training log that are not tracebacks."""

from __future__ import annotations

import re

# Cheap substring gate: a line with none of these is not worth a regex.
_HINTS = (
    "rror",
    "RROR",
    "xception",
    "arn",
    "ARN",
    "emory",
    "NCCL",
    "Killed",
    "ault",
    "dumped",
    "SIG",
    "exitcode",
    "OVERFLOW",
    "minimum",
    "nan",
    "NaN",
    "imeout",
    "failed",
    "Failed",
    "FAILED",
)
_ERROR = re.compile(
    r"CUDA out of memory|OutOfMemoryError|out of memory|NCCL.{0,80}(?:[Tt]imeout|[Ee]rror|failure)"
    r"|Watchdog caught collective operation timeout|Bus error|Segmentation fault|core dumped"
    r"|SIG(?:SEGV|KILL|ABRT|TERM|BUS)\b|^\s*Killed\b|exitcode\s*:\s*-?[1-9]|ChildFailedError"
    r"|exited with return code [1-9-]|already at minimum|loss is nan|NaN or Inf found"
    r"|(?:^|\s|\]|:)[\w.]*(?:Error|Exception)(?::|\s*$)|\bERROR\b|\[E(?: |\])|\berror:",
    re.IGNORECASE,
)
_WARNING = re.compile(r"Warning:|\bWARNING\b|\[W(?: |\])|\bWARN\b|OVERFLOW!|Skipping step", re.I)


def classify(line: str) -> str | None:
    """ "error", "warning" or None.

    "RuntimeError: CUDA out of memory." -> "error"
    "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536" -> "warning"
    "{'loss': 0.5}" -> None
    """
    if not any(h in line for h in _HINTS):
        return None
    if _ERROR.search(line):
        return "error"
    if _WARNING.search(line):
        return "warning"
    return None
