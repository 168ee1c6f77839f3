"""Metric values a report states in words ("loss is 0", "grad = nan", "loss一直是0", "梯度为nan").

Many reports describe the curve instead of pasting it. Such a statement is not a logged series, so
it does not become an Anomaly (which would also tell `needs` that the metrics are already here),
but retrieval can still use it like one: "the report says grad_norm is nan" points at the same
articles as a logged nan.
"""

from __future__ import annotations

from collections.abc import Collection

from kb.text import metric_statements


def stated_metrics(text: str, logged: Collection[str] = (), limit: int = 20_000) -> list[str]:
    """Phrases like "grad_norm is nan" for each metric value the report states in words, except
    for metrics in `logged` (a logged series says more than a sentence about it).

    "loss =13.6234, grad = nan" -> ["grad_norm is nan"]
    "训练时 loss一直是0，梯度为nan" -> ["loss is 0.0", "grad_norm is nan"]
    "loss is 0.6931" -> []
    """
    found: list[str] = []
    for metric, value in metric_statements(text[:limit]):
        metric = "loss" if metric == "eval_loss" else metric  # an eval loss votes like the loss
        if metric in logged:
            continue
        phrase = f"{metric} is {'0.0' if value == '0' else value}"
        if phrase not in found:
            found.append(phrase)
    return found
