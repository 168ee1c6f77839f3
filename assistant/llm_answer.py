"""Run the LLM on a prepared answer: stream its summary, then keep it only if the guard passes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

from assistant.answer import CASES_SHOWN, Answer
from assistant.guard import contradictions, invented_names, repetitive, trim_to_sentence, ungrounded
from assistant.prompts import build_messages
from kb.errors import ModelUnavailable
from kb.settings import Settings

MIN_USEFUL_CHARS = 20


def stream_tailored(generator, prepared, settings: Settings) -> Iterator[str]:
    """Yield the model's text pieces; return the composed Answer with `llm_text` kept or dropped.

    The model is never called when retrieval abstained (the caller checks) or not configured.
    """
    composed: Answer = prepared.composed
    if generator is None:
        return replace(composed, llm_note="no language model configured (llm_backend=none)")
    messages, prefill, stop = build_messages(prepared, rich_model=generator.rich)
    deadline = time.monotonic() + settings.llm_timeout_s
    pieces: list[str] = []
    if prefill:
        pieces.append(prefill)
        yield prefill
    try:
        for piece in generator.stream(
            messages, prefill, settings.llm_max_new_tokens, stop, deadline
        ):
            pieces.append(piece)
            yield piece
    except ModelUnavailable as exc:
        return replace(composed, llm_note=f"language model failed: {exc}")
    text = trim_to_sentence("".join(pieces))
    timed_out = time.monotonic() > deadline
    problems = review(text, prepared)
    if problems:
        return replace(
            composed, llm_note="model summary dropped by the guard: " + "; ".join(problems)
        )
    note = f"time budget of {settings.llm_timeout_s:.0f} s reached" if timed_out else ""
    return replace(composed, llm_text=text, llm_note=note)


def review(text: str, prepared) -> list[str]:
    """Reasons to drop generated text: empty, invented names, or contradicting the case."""
    if len(text) < MIN_USEFUL_CHARS:
        return ["too short to be useful"]
    problems = []
    if repetitive(text):
        problems.append("the text repeats itself")
    invented = invented_names(text, prepared.hits[:CASES_SHOWN])
    if invented:
        problems.append("invented names " + ", ".join(invented[:5]))
    article = prepared.hits[0].article
    problems.extend(contradictions(text, article))
    sources = [
        article.title,
        article.cause,
        *article.fix,
        *article.conditions,
        *article.confirm,
        *article.symptoms,
        *prepared.signals.evidence_phrases(),
    ]
    problems.extend(ungrounded(text, sources))
    return problems
