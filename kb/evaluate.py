"""`kb eval`: retrieval and answer quality on JSONL cases, hybrid vs BM25 and dense baselines."""

from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from kb.errors import BadInput

OUT_OF_SCOPE = "out-of-scope"


@dataclass(frozen=True)
class Case:
    id: str
    query: str
    failure_mode: str
    fix_keywords: list[str] = field(default_factory=list)
    has_error_text: bool | None = None  # labelled in the natural samples; None when unknown


@dataclass
class CaseResult:
    case: Case
    modes: list[str]  # failure modes of the returned articles, in rank order
    article_ids: list[str]
    abstained: bool
    latency_ms: float
    bm25_modes: list[str] = field(default_factory=list)
    dense_modes: list[str] = field(default_factory=list)
    answer_text: str = ""
    keywords_found: int = 0
    keywords_missing: list[str] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)
    llm_fell_back: bool = False
    needs: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int | None:
        if self.abstained or self.case.failure_mode == OUT_OF_SCOPE:
            return None
        return _rank(self.modes, self.case.failure_mode)

    def to_dict(self) -> dict:
        return {
            "id": self.case.id,
            "expected": self.case.failure_mode,
            "got": self.modes[:3],
            "articles": self.article_ids[:3],
            "abstained": self.abstained,
            "rank": self.rank,
            "needs": self.needs,
            # Where the baselines put the expected mode: shows which reports fusion wins or loses.
            "baseline_rank": {
                "bm25": _rank(self.bm25_modes, self.case.failure_mode),
                "dense": _rank(self.dense_modes, self.case.failure_mode),
            },
            **({"keywords_missing": self.keywords_missing} if self.answer_text else {}),
        }


def _rank(modes: list[str], expected: str) -> int | None:
    return modes.index(expected) + 1 if expected in modes else None


def load_cases(path: Path) -> list[Case]:
    if not path.exists():
        raise BadInput(f"no such cases file: {path}")
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise BadInput(f"{path}:{n}: not a JSON object ({exc.msg})") from exc
        if not isinstance(row, dict) or not row.get("query") or not row.get("failure_mode"):
            raise BadInput(f"{path}:{n}: each case needs 'query' and 'failure_mode'")
        cases.append(
            Case(
                id=str(row.get("id", n)),
                query=str(row["query"]),
                failure_mode=str(row["failure_mode"]),
                fix_keywords=[str(k) for k in row.get("fix_keywords", [])],
                has_error_text=row.get("has_error_text"),
            )
        )
    if not cases:
        raise BadInput(f"{path} holds no cases")
    return cases


def _ranking_metrics(ranks: list[int | None]) -> dict:
    n = len(ranks) or 1
    return {
        "hit@1": round(sum(1 for r in ranks if r == 1) / n, 4),
        "hit@3": round(sum(1 for r in ranks if r is not None and r <= 3) / n, 4),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 4),
    }


def run_cases(
    assistant,
    cases: list[Case],
    use_signals: bool = True,
    answers: bool = False,
    use_llm: bool = False,
) -> list[CaseResult]:
    """Run every case through the real ask pipeline (and the two baselines on the same index)."""
    from assistant.guard import invented_names

    retriever = assistant.retriever
    results = []
    for case in cases:
        start = time.perf_counter()
        if answers:
            res = assistant.ask(case.query, k=5, use_llm=use_llm)
            hits, abstained, needs = res.hits, res.abstained, res.needs
            answer = res.answer
        else:
            prepared = assistant.prepare(case.query, k=5, use_signals=use_signals)
            hits, abstained, needs, answer = (
                prepared.hits,
                prepared.abstained,
                prepared.needs,
                prepared.composed,
            )
        latency = (time.perf_counter() - start) * 1000
        text = case.query[:4000]
        bm25_order, _ = retriever.bm25_articles(text)
        dense_order, _ = retriever.dense_articles(text)
        arts = retriever.index.articles
        result = CaseResult(
            case=case,
            modes=[h.article.failure_mode for h in hits],
            article_ids=[h.article.id for h in hits],
            abstained=abstained,
            latency_ms=latency,
            bm25_modes=[arts[a].failure_mode for a in bm25_order[:5] if a in arts],
            dense_modes=[arts[a].failure_mode for a in dense_order[:5] if a in arts],
            needs=needs,
        )
        if answers:
            full = answer.text + "\n" + "\n".join(s.code for s in answer.snippets)
            if answer.llm_text:
                full = answer.llm_text + "\n" + full
            result.answer_text = full
            low = full.lower()
            result.keywords_missing = [kw for kw in case.fix_keywords if kw.lower() not in low]
            result.keywords_found = len(case.fix_keywords) - len(result.keywords_missing)
            # Names quoted back from the user's own log (in the evidence) are not invented.
            result.invented = [n for n in invented_names(full, hits) if n not in case.query]
            result.llm_fell_back = bool(use_llm and not answer.llm_text)
        results.append(result)
    return results


def summarize(results: list[CaseResult], answers: bool = False) -> dict:
    in_scope = [r for r in results if r.case.failure_mode != OUT_OF_SCOPE]
    oos = [r for r in results if r.case.failure_mode == OUT_OF_SCOPE]
    abstained = [r for r in results if r.abstained]
    latencies = sorted(r.latency_ms for r in results)
    summary = {
        "n": len(results),
        "in_scope": len(in_scope),
        **_ranking_metrics([r.rank for r in in_scope]),
        "abstain_precision": round(
            sum(1 for r in abstained if r.case.failure_mode == OUT_OF_SCOPE) / len(abstained), 4
        )
        if abstained
        else None,
        "abstain_recall": round(sum(1 for r in oos if r.abstained) / len(oos), 4) if oos else None,
        "baselines": {
            "bm25": _ranking_metrics([_rank(r.bm25_modes, r.case.failure_mode) for r in in_scope]),
            "dense": _ranking_metrics(
                [_rank(r.dense_modes, r.case.failure_mode) for r in in_scope]
            ),
        },
        "latency_ms": {
            "p50": round(statistics.median(latencies), 1) if latencies else None,
            "p95": round(latencies[int(0.95 * (len(latencies) - 1))], 1) if latencies else None,
        },
        "per_mode": _per_mode(in_scope),
    }
    labelled = [r for r in in_scope if r.case.has_error_text is not None]
    if labelled:
        with_text = [r for r in labelled if r.case.has_error_text]
        without = [r for r in labelled if not r.case.has_error_text]
        summary["with_error_text"] = {
            "n": len(with_text),
            **_ranking_metrics([r.rank for r in with_text]),
        }
        summary["without_error_text"] = {
            "n": len(without),
            **_ranking_metrics([r.rank for r in without]),
            # kb must say what to paste when the report carries no error text.
            "asked_for_details": round(sum(1 for r in without if r.needs) / len(without), 4)
            if without
            else None,
        }
    if answers:
        total_kw = sum(len(r.case.fix_keywords) for r in in_scope)
        summary["fix_keyword_recall"] = (
            round(sum(r.keywords_found for r in in_scope) / total_kw, 4) if total_kw else None
        )
        summary["invented_keys"] = sum(len(r.invented) for r in results)
        summary["invented_examples"] = sorted({k for r in results for k in r.invented})[:20]
        summary["llm_fallback_rate"] = round(
            sum(1 for r in in_scope if r.llm_fell_back) / max(len(in_scope), 1), 4
        )
        summary["answer_latency_ms"] = summary["latency_ms"]
    return summary


def _per_mode(results: list[CaseResult]) -> dict:
    modes: dict[str, list[CaseResult]] = {}
    for r in results:
        modes.setdefault(r.case.failure_mode, []).append(r)
    out = {}
    for mode in sorted(modes):
        group = modes[mode]
        ranks = [r.rank for r in group]
        out[mode] = {
            "n": len(group),
            "hit@1": round(sum(1 for x in ranks if x == 1) / len(group), 4),
            "hit@3": round(sum(1 for x in ranks if x and x <= 3) / len(group), 4),
        }
    return out


def gaps(results: list[CaseResult]) -> dict[str, list[dict]]:
    """Reports no article answered (wrong mode first, or abstained), grouped by their mode."""
    grouped: dict[str, list[dict]] = {}
    for r in results:
        if r.case.failure_mode == OUT_OF_SCOPE or r.rank == 1:
            continue
        grouped.setdefault(r.case.failure_mode, []).append(
            {
                "id": r.case.id,
                "query": _one_line(r.case.query),
                "got": r.modes[:3],
                "abstained": r.abstained,
            }
        )
    return dict(sorted(grouped.items(), key=lambda kv: -len(kv[1])))


def feedback_gaps(rows: list[dict]) -> dict[str, list[dict]]:
    """Answers users rated not helpful (or "did not fix it"), grouped by the mode kb answered
    with: the same listing as gaps(), from the feedback store instead of labelled cases."""
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(row.get("failure_mode") or "abstained", []).append(
            {
                "id": str(row.get("id", "")),
                "query": _one_line(row.get("query") or ""),
                "article_id": row.get("article_id"),
                "comment": _one_line(row.get("comment") or ""),
            }
        )
    return dict(sorted(grouped.items(), key=lambda kv: -len(kv[1])))


def _one_line(text: str, limit: int = 140) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
