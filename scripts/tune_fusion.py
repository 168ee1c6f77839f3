#!/usr/bin/env python3
"""Measure retrieval fusion weights over cached channel ranks, on several eval sets at once.

Every case runs through the real pipeline once (redact, analyze, reduce, every channel); the
fusion is then re-scored for each candidate weight setting without touching the index again.
Coordinate search picks weights by the mean of hit@1, hit@3 and MRR over all sets given, and
each set's numbers are also shown when it is left out of the search (leave-one-set-out), so a
gain that only fits one set shows up as such. Modes are ordered exactly as `kb ask` orders them
(order_by_mode, with the family demotion), and a small grid of mode-support settings is shown
next to the shipped one.

    .venv/bin/python scripts/tune_fusion.py ../shared/eval/dev.jsonl eval/natural-*.jsonl

Ranking only: abstentions are not modelled (run `kb eval` on the chosen weights for those).
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from assistant.logs import analyze
from assistant.redact import redact
from assistant.service import Assistant, retrieval_input
from kb.evaluate import OUT_OF_SCOPE, load_cases
from kb.retrieval import (
    CONTRADICTED_SHARE,
    MODE_SUPPORT_DEPTH,
    MODE_SUPPORT_GATE,
    MODE_SUPPORT_SHARE,
    RRF_K,
    WEIGHTS,
    _Candidate,
    order_by_mode,
    score_candidates,
)
from kb.settings import Settings

GRID = (0.0, 0.15, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
TOP_K = 5


@dataclass(frozen=True)
class CachedCase:
    set_name: str
    expected: str
    has_error_text: bool | None
    # (article id, failure mode, the retriever's evidence for it) per candidate
    ranks: list[tuple[str, str, _Candidate]]


def collect(paths: list[Path]) -> list[CachedCase]:
    assistant = Assistant(Settings.from_env())
    retriever = assistant.retriever
    articles = retriever.index.articles
    out = []
    for path in paths:
        for case in load_cases(path):
            if case.failure_mode == OUT_OF_SCOPE:
                continue
            clean = redact(case.query)
            query, context = retrieval_input(clean, analyze(clean))
            cands = retriever.candidates(query, context)
            ranks = [
                (aid, articles[aid].failure_mode, c)
                for aid, c in sorted(cands.items())
                if aid in articles
            ]
            out.append(CachedCase(path.stem, case.failure_mode, case.has_error_text, ranks))
    return out


@dataclass(frozen=True)
class ModeSupport:
    share: float = MODE_SUPPORT_SHARE
    depth: int = MODE_SUPPORT_DEPTH
    gate: float = MODE_SUPPORT_GATE


def mode_rank(
    case: CachedCase,
    weights: dict[str, float],
    rrf_k: float,
    contradicted_share: float,
    support: ModeSupport = ModeSupport(),
) -> int | None:
    # The same two steps as Retriever.rank, with the knobs under test.
    cands = {aid: c for aid, _, c in case.ranks}
    scored = score_candidates(cands, weights, rrf_k, contradicted_share)
    mode_of = {aid: mode for aid, mode, _ in case.ranks}.__getitem__
    ordered = order_by_mode(scored, mode_of, support.share, support.depth, support.gate)
    modes = list(dict.fromkeys(mode_of(aid) for _, aid, _ in ordered))[:TOP_K]
    return modes.index(case.expected) + 1 if case.expected in modes else None


def metrics(
    cases: list[CachedCase],
    weights: dict[str, float],
    rrf_k: float,
    contradicted_share: float = CONTRADICTED_SHARE,
    support: ModeSupport = ModeSupport(),
) -> dict:
    ranks = [mode_rank(c, weights, rrf_k, contradicted_share, support) for c in cases]
    n = len(ranks) or 1
    return {
        "hit@1": sum(r == 1 for r in ranks) / n,
        "hit@3": sum(r is not None and r <= 3 for r in ranks) / n,
        "mrr": sum(1 / r for r in ranks if r) / n,
    }


def objective(by_set: dict[str, list[CachedCase]], weights, rrf_k) -> float:
    # Each set counts once, whatever its size: dev should not drown in the natural samples.
    return statistics.mean(
        statistics.mean(metrics(cases, weights, rrf_k).values()) for cases in by_set.values()
    )


def search(by_set, start: dict[str, float], rrf_k: float, rounds: int = 3) -> dict[str, float]:
    best = dict(start)
    best_score = objective(by_set, best, rrf_k)
    for _ in range(rounds):
        improved = False
        for name, value in itertools.product(sorted(best), GRID):
            trial = {**best, name: value}
            score = objective(by_set, trial, rrf_k)
            if score > best_score + 1e-9:
                best, best_score, improved = trial, score, True
        if not improved:
            break
    return best


def report(label: str, by_set, weights, rrf_k) -> None:
    print(f"\n{label}: {weights} (RRF_K {rrf_k})")
    for name, cases in by_set.items():
        m = metrics(cases, weights, rrf_k)
        err = [c for c in cases if c.has_error_text]
        e = metrics(err, weights, rrf_k) if err else None
        extra = f"  | error text n={len(err)} {e['hit@1']:.3f}/{e['hit@3']:.3f}" if e else ""
        print(
            f"  {name:18s} n={len(cases):3d} {m['hit@1']:.3f} / {m['hit@3']:.3f} / "
            f"{m['mrr']:.3f}{extra}"
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--loso", action="store_true", help="also leave each set out in turn")
    parser.add_argument(
        "--cache", type=Path, help="pickle of the collected ranks: read if present, else written"
    )
    args = parser.parse_args(argv)
    if args.cache and args.cache.exists():
        cases = pickle.loads(args.cache.read_bytes())
    else:
        cases = collect(args.cases)
        if args.cache:
            args.cache.write_bytes(pickle.dumps(cases))
    by_set: dict[str, list[CachedCase]] = {}
    for c in cases:
        by_set.setdefault(c.set_name, []).append(c)
    report("shipped", by_set, WEIGHTS, RRF_K)
    for share in (1.0, 0.25):
        print(f"\nwith CONTRADICTED_SHARE {share}:")
        for name, cases_of_set in by_set.items():
            m = metrics(cases_of_set, WEIGHTS, RRF_K, share)
            print(f"  {name:18s} {m['hit@1']:.3f} / {m['hit@3']:.3f} / {m['mrr']:.3f}")
    for support in (
        ModeSupport(share=0.0),
        ModeSupport(gate=0.0),
        ModeSupport(gate=0.7),
        ModeSupport(gate=0.9),
        ModeSupport(share=0.2),
        ModeSupport(depth=40),
    ):
        print(f"\nwith {support}:")
        for name, cases_of_set in by_set.items():
            m = metrics(cases_of_set, WEIGHTS, RRF_K, CONTRADICTED_SHARE, support)
            print(f"  {name:18s} {m['hit@1']:.3f} / {m['hit@3']:.3f} / {m['mrr']:.3f}")
    tuned = search(by_set, WEIGHTS, RRF_K)
    report("searched on all sets", by_set, tuned, RRF_K)
    if args.loso:
        for held in by_set:
            rest = {k: v for k, v in by_set.items() if k != held}
            w = search(rest, WEIGHTS, RRF_K)
            before = metrics(by_set[held], WEIGHTS, RRF_K)
            after = metrics(by_set[held], w, RRF_K)
            print(
                f"  left out {held:18s} shipped {before['hit@1']:.3f}/{before['hit@3']:.3f}"
                f" -> searched without it {after['hit@1']:.3f}/{after['hit@3']:.3f}  {w}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
