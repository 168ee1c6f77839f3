"""Metric values a report states in words ("loss is 0", "grad = nan", "loss一直是0", "梯度为nan").

Many reports describe the curve instead of pasting it. Such a statement is not a logged series, so
it does not become an Anomaly (which would also tell `needs` that the metrics are already here),
but retrieval can still use it like one: "the report says grad_norm is nan" points at the same
articles as a logged nan.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_METRIC = (
    r"(?P<metric>(?:train[_ ]|eval[_ ]|training |validation )?loss|grad[_ ]?norm|gradients?|grads?"
    r"|梯度)"
)
# Up to three linking words between the metric and the value, in English or Chinese.
_LINK = (
    r"(?:\s*(?:=|:|：|is|was|are|were|becomes?|became|goes|went|to|turns?|into|stays?|stuck|at"
    r"|always|still|all|just|exactly|keeps?|being|一直|都|始终|总是|变成了?|变为|为|是|等于|全是|全为"
    r"|直接|就|了)\s*){0,3}"
)
_VALUE = r"(?P<value>nan|inf(?:inity)?|0(?:\.0+)?)(?![A-Za-z0-9_.])"
_STATEMENT = re.compile(r"(?<![A-Za-z0-9_/])" + _METRIC + _LINK + r"\s*" + _VALUE, re.IGNORECASE)


def stated_metrics(text: str, logged: Collection[str] = (), limit: int = 20_000) -> list[str]:
    """Phrases like "grad_norm is nan" for each metric value the report states in words, except
    for metrics in `logged` (a logged series says more than a sentence about it).

    "loss =13.6234, grad = nan" -> ["grad_norm is nan"]
    "训练时 loss一直是0，梯度为nan" -> ["loss is 0.0", "grad_norm is nan"]
    "loss is 0.6931" -> []
    """
    found: list[str] = []
    for m in _STATEMENT.finditer(text[:limit]):
        raw = m.group("metric").lower()
        metric = "loss" if "loss" in raw else "grad_norm"
        if metric in logged:
            continue
        value = m.group("value").lower()
        value = "nan" if value == "nan" else "inf" if value.startswith("inf") else "0.0"
        phrase = f"{metric} is {value}"
        if phrase not in found:
            found.append(phrase)
    return found
