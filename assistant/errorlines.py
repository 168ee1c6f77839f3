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
    "odule",
    "import",
    "attribute",
    "argument",
    "range",
    "EXC_",
    "initiali",
    "mismatch",
    "grad",
    "xpected",
    "ssert",
)
_ERROR = re.compile(
    r"CUDA out of memory|OutOfMemoryError|out of memory|NCCL.{0,80}(?:[Tt]imeout|[Ee]rror|failure)"
    r"|Watchdog caught collective operation timeout|Bus error|Segmentation fault|core dumped"
    r"|SIG(?:SEGV|KILL|ABRT|TERM|BUS)\b|^\s*Killed\b|exitcode\s*:\s*-?[1-9]|ChildFailedError"
    r"|exited with return code [1-9-]|already at minimum|loss is nan|NaN or Inf found"
    # Messages people paste without the exception's name in front.
    r"|No module named|cannot import name|has no attribute|unexpected keyword argument"
    r"|index out of range|EXC_BAD_ACCESS|please initiali[sz]e|size mismatch for"
    r"|does not require grad|Expected all tensors|device-side assert|Assertion .{0,80} failed",
    re.IGNORECASE,
)
# Case matters here: "ValueError:", "ERROR", "[E ...]" are a program's words; "I got an error:"
# or "Training error when using GRPO" are a person's, and say nothing about the cause.
_ERROR_CASED = re.compile(
    r"(?<![A-Za-z0-9_])(?:\w+\.)*(?:[A-Z]\w*)?(?:Error|Exception)(?::|\s*$)|\bERROR\b|\[E(?: |\])"
    r"|^\s*(?:\[[^\]]*\]\s*)*(?:error|fatal):"
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
    if _ERROR.search(line) or _ERROR_CASED.search(line):
        return "error"
    if _WARNING.search(line):
        return "warning"
    return None
