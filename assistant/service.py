"""The ask pipeline shared by the CLI, the web app and the HTTP API: read, retrieve, answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from assistant.answer import CASES_SHOWN, Answer, RunAdvice, answer_language, compose_answer
from assistant.changes import changes_for_run, lacks_bf16
from assistant.logs import analyze
from assistant.needs import missing_info, signature_is_the_error
from assistant.redact import redact
from assistant.reduce import drop_package_listing, reduce_log
from assistant.signals import LogSignals
from assistant.stated import stated_metrics
from assistant.tailor import fix_words, tailor_snippets
from assistant.version_talk import working_versions
from kb.errors import BadInput, ModelUnavailable
from kb.retrieval import Hit, QueryContext, Retriever
from kb.scope import assess
from kb.settings import Settings

# Retrieval sees at most this much of a paste; the analyzer has already read all of it.
RETRIEVAL_CHARS = 4000


@dataclass(frozen=True)
class AskResult:
    query: str
    abstained: bool
    hits: list[Hit]
    answer: Answer
    signals: LogSignals
    needs: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    abstain_reason: str = ""

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "abstained": self.abstained,
            "abstain_reason": self.abstain_reason,
            "hits": [h.to_dict() for h in self.hits],
            "answer": self.answer.to_dict(),
            "signals": self.signals.to_dict(),
            "needs": self.needs,
        }


@dataclass(frozen=True)
class Prepared:
    """Everything up to the answer text: what the LLM prompt and the composed answer share."""

    query: str  # redacted, what the user is shown back
    signals: LogSignals
    hits: list[Hit]
    abstained: bool
    needs: list[str]
    language: str
    composed: Answer
    timings_ms: dict[str, float]
    abstain_reason: str = ""


class Assistant:
    """Holds the index, the embedder and (lazily) the LLM: load once per process, ask many times."""

    def __init__(self, settings: Settings, retriever: Retriever | None = None):
        self.settings = settings
        self._retriever = retriever
        self._generator = None
        self._lock = threading.Lock()

    @property
    def retriever(self) -> Retriever:
        with self._lock:
            if self._retriever is None:
                from kb.embedding import load_embedder
                from kb.index import open_index

                index = open_index(self.settings)
                self._retriever = Retriever(index, load_embedder(index.manifest.embedder))
            return self._retriever

    def search(self, text: str, k: int | None = None) -> list[Hit]:
        """The cases `ask` would answer with, in the same order: the log's signals included."""
        text = _check_text(text, self.settings.max_input_bytes)
        clean = redact(text)
        query, context = retrieval_input(clean, analyze(clean), True)
        return self.retriever.search(query, k or self.settings.top_k, context)

    def prepare(self, text: str, k: int | None = None, use_signals: bool = True) -> Prepared:
        text = _check_text(text, self.settings.max_input_bytes)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        clean = redact(text)
        signals = analyze(clean)
        timings["analyze"] = (time.perf_counter() - t0) * 1000
        query, context = retrieval_input(clean, signals, use_signals)
        t1 = time.perf_counter()
        hits = self.retriever.search(query, k or self.settings.top_k, context)
        timings["retrieve"] = (time.perf_counter() - t1) * 1000
        abstained, reason = _abstain(clean, hits, self.settings.abstain_threshold)
        # A known error string matched verbatim is the error text, even without "ValueError:",
        # unless it only says that a worker process died.
        matched_error = bool(
            hits and not abstained and signature_is_the_error(hits[0].signatures)
        )
        needs = [] if matched_error else missing_info(clean, signals)
        language = answer_language(text)
        snippets = tailor_snippets(hits[0].article, signals) if hits and not abstained else []
        advice = RunAdvice(
            snippets=snippets,
            working=working_versions(clean) if not abstained else [],
            changes=changes_for_run(
                snippets,
                signals.flags,
                fix_words(hits[0].article) if snippets else set(),
                signals.hardware,
            ),
            gpu_without_bf16=signals.hardware if lacks_bf16(signals.hardware) else None,
        )
        composed = compose_answer(hits, abstained, language, needs, reason, advice)
        return Prepared(clean, signals, hits, abstained, needs, language, composed, timings, reason)

    def ask(self, text: str, k: int | None = None, use_llm: bool = True) -> AskResult:
        """The same pipeline as stream(), consumed: the last item is the AskResult."""
        *_, result = self.stream(text, k, use_llm)
        return result

    def stream(self, text: str, k: int | None = None, use_llm: bool = True) -> Iterator[object]:
        """Yield the Prepared first, then LLM text pieces (str), then the final AskResult."""
        prepared = self.prepare(text, k)
        yield prepared
        answer = prepared.composed
        if use_llm and not prepared.abstained:
            answer = yield from self._stream_llm(prepared)
        elif not use_llm:
            answer = _note(answer, "LLM not used (--no-llm)")
        yield _result(prepared, answer)

    # --- LLM ----------------------------------------------------------------------------
    def generator(self):
        with self._lock:
            if self._generator is None:
                from assistant.generator import load_generator

                self._generator = load_generator(self.settings)
            return self._generator

    def _stream_llm(self, prepared: Prepared):
        """Yields text pieces; returns the final Answer (LLM text kept or dropped by the guard)."""
        from assistant.llm_answer import stream_tailored

        try:
            generator = self.generator()
        except ModelUnavailable as exc:
            # A model that cannot load must not cost the user the composed answer.
            return _note(prepared.composed, f"language model unavailable: {exc}")
        return (yield from stream_tailored(generator, prepared, self.settings))


def _note(answer: Answer, note: str) -> Answer:
    return replace(answer, llm_note=note)


def _result(prepared: Prepared, answer: Answer) -> AskResult:
    return AskResult(
        query=prepared.query,
        abstained=prepared.abstained,
        hits=prepared.hits,
        answer=answer,
        signals=prepared.signals,
        needs=prepared.needs,
        timings_ms=prepared.timings_ms,
        abstain_reason=prepared.abstain_reason,
    )


def retrieval_input(
    clean: str, signals: LogSignals, use_signals: bool = True
) -> tuple[str, QueryContext]:
    """The text the retriever reads (the log reduced to what tells) and what the analyzer saw."""
    query = reduce_log(drop_package_listing(clean), signals, max_chars=RETRIEVAL_CHARS)
    if not use_signals:
        return query, QueryContext()
    return query, QueryContext(
        phrases=tuple(signals.evidence_phrases()),
        anomalies=tuple(a.detail.rstrip(".") for a in signals.anomalies),
        stated=tuple(stated_metrics(clean, logged=signals.metrics)),
        stage=signals.stage,
        framework=signals.framework,
        hinted_modes=hinted_modes(signals),
        precision=signals.precision,
        versions=tuple(signals.versions.items()),
    )


# Preference and RL stages train at learning rates around 1e-6 (TRL's DPO/GRPO default 1e-6; the
# DPO docs suggest 5e-7 to 5e-6). A run of one of them at 1e-4 or more, with no error, points to the
# learning rate whatever its metrics look like; SFT is left out, where 1e-4 to 2e-4 is usual LoRA.
PREFERENCE_STAGES = ("dpo", "kto", "orpo", "simpo", "cpo", "ppo", "grpo")
PREFERENCE_LR_CEILING = 1e-4


def hinted_modes(signals: LogSignals) -> tuple[str, ...]:
    """Failure modes that the log's own words point to, whatever else matches."""
    modes = []
    if signals.version_change:
        modes.append("library-version-incompatibility")
    if _preference_lr_too_high(signals):
        modes.append("lr-too-high-divergence")
    if signals.pad_eos_endless:
        modes.append("eos-pad-same-token")
    return tuple(modes)


def _preference_lr_too_high(signals: LogSignals) -> bool:
    if signals.stage not in PREFERENCE_STAGES or signals.errors or signals.has_error_text:
        return False
    rates = [value for _, value in signals.metrics.get("learning_rate", [])]
    try:
        rates.append(float(signals.flags.get("learning_rate", "nan")))
    except ValueError:
        pass  # "${LR}" in a launch script
    return any(r >= PREFERENCE_LR_CEILING for r in rates if r == r)


def _abstain(text: str, hits: list[Hit], threshold: float) -> tuple[bool, str]:
    """Abstain when nothing is close enough, or the report is not about training at all.

    A matched error signature wins unless nothing in the report is about training.
    """
    if not hits:
        return True, "no article shares anything with this report"
    scope = assess(text)
    if hits[0].signatures:
        # An inference demo or an app can raise the same error string as a training run; with
        # not one word about training, the report is still not a training failure.
        if scope.using_only:
            return True, scope.reason
        return False, ""
    if scope.out_of_scope:
        return True, scope.reason
    # Every case shown counts: ordering by failure mode can put a broad mode's case first while
    # a runner-up matches the words better (over dev and the work samples, 753 in-scope reports:
    # 25 in-scope abstentions with the first case alone, 3 with the best of three; out-of-scope
    # abstentions 45 either way).
    if max(h.confidence for h in hits[:CASES_SHOWN]) < threshold:
        return True, "the closest cases are not similar enough"
    return False, ""


def _check_text(text: str, max_bytes: int) -> str:
    if text is None or not str(text).strip():
        raise BadInput("the query is empty: paste an error message, a traceback or a log")
    data = text.encode("utf-8", "replace")
    if len(data) > max_bytes:
        raise BadInput(
            f"the input is larger than {max_bytes // (1024 * 1024)} MiB; "
            "paste the traceback and the metric lines around the failure instead"
        )
    # Lone surrogates (argv with undecodable bytes, a JSON "\ud800") become "?": the embedder
    # and the UTF-8 responses take only encodable text.
    return data.decode("utf-8")
