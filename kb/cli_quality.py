"""`kb eval`, `kb gaps` and `kb bench`: how good and how fast kb is, measured."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kb.cli_output import emit_json
from kb.errors import BadInput
from kb.settings import Settings


@click.command(name="eval")
@click.option(
    "--cases",
    "cases_path",
    type=click.Path(path_type=Path),
    required=True,
    help="JSONL with at least query and failure_mode per line.",
)
@click.option(
    "--answers", is_flag=True, help="Also score the answers (fix keywords, invented keys)."
)
@click.option("--llm", "use_llm", is_flag=True, help="With --answers: include the local LLM.")
@click.option("--no-signals", is_flag=True, help="Retrieve without the log analyzer's signals.")
@click.option(
    "--cases-out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write per-case results as JSONL here.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def eval_cmd(settings, cases_path, answers, use_llm, no_signals, cases_out, as_json) -> None:
    """Measure retrieval (and answers) on labelled cases, against BM25 and dense baselines.

    Example: kb eval --cases ../shared/eval/dev.jsonl --json
    """
    from assistant.service import Assistant
    from kb.evaluate import load_cases, run_cases, summarize

    cases = load_cases(cases_path)
    results = run_cases(
        Assistant(settings), cases, use_signals=not no_signals, answers=answers, use_llm=use_llm
    )
    summary = summarize(results, answers=answers)
    if cases_out:
        cases_out.write_text(
            "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in results)
        )
    if as_json:
        emit_json(summary)
        return
    click.echo(
        f"n={summary['n']} in_scope={summary['in_scope']} hit@1={summary['hit@1']} "
        f"hit@3={summary['hit@3']} mrr={summary['mrr']} "
        f"abstain P/R={summary['abstain_precision']}/{summary['abstain_recall']}"
    )
    for name, m in summary["baselines"].items():
        click.echo(f"  baseline {name}: hit@1={m['hit@1']} hit@3={m['hit@3']} mrr={m['mrr']}")
    for key in (
        "with_error_text",
        "without_error_text",
        "fix_keyword_recall",
        "invented_keys",
        "llm_fallback_rate",
    ):
        if key in summary:
            click.echo(f"  {key}: {summary[key]}")
    for mode, m in summary["per_mode"].items():
        click.echo(f"  {mode:40s} n={m['n']} hit@1={m['hit@1']} hit@3={m['hit@3']}")


@click.command()
@click.option("--cases", "cases_path", type=click.Path(path_type=Path), default=None)
@click.option(
    "--feedback", "from_feedback", is_flag=True, help="Answers users rated not helpful instead."
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def gaps(settings: Settings, cases_path: Path | None, from_feedback: bool, as_json: bool) -> None:
    """List the reports no article answered, grouped by failure mode (what to write next).

    Example: kb gaps --cases eval/natural-work.jsonl    |    kb gaps --feedback
    """
    if (cases_path is None) == (not from_feedback):
        raise BadInput("give exactly one of --cases FILE or --feedback")
    if from_feedback:
        from assistant.feedback import FeedbackStore
        from kb.evaluate import feedback_gaps

        grouped = feedback_gaps(FeedbackStore(settings.feedback_db).not_helpful())
        empty = "no answer has been rated not helpful"

        def line(row: dict) -> str:
            note = f"  — {row['comment']}" if row["comment"] else ""
            return f"{row['query']}  [answered: {row['article_id']}]{note}"

    else:
        from assistant.service import Assistant
        from kb.evaluate import gaps as find_gaps
        from kb.evaluate import load_cases, run_cases

        grouped = find_gaps(run_cases(Assistant(settings), load_cases(cases_path)))
        empty = "every in-scope report got an article of the right mode first"

        def line(row: dict) -> str:
            got = "abstained" if row["abstained"] else ", ".join(row["got"])
            return f"{row['id']}: {row['query']}  [got: {got}]"

    if as_json:
        emit_json(grouped)
        return
    if not grouped:
        click.echo(empty)
    for mode, rows in grouped.items():
        click.echo(f"{mode} ({len(rows)})")
        for row in rows:
            click.echo(f"  - {line(row)}")


@click.command()
@click.option("--quick", is_flag=True, help="A run under a minute (10k vectors, short load).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def bench(settings: Settings, quick: bool, as_json: bool) -> None:
    """Benchmark index build, retrieval at 10k/100k/1M chunks, ask, the LLM and the API.

    Example: kb bench --quick --json
    """
    from kb.bench import dumps, run

    result = run(settings, quick, log=lambda msg: click.echo(f"bench: {msg}", err=True))
    click.echo(dumps(result) if as_json else _bench_table(result))


def _bench_table(result: dict) -> str:
    lines = ["size        kind  build_s  ann_p50  ann_p95  exact_p50  recall@10"]
    for size, r in result["retrieval"].items():
        lines.append(
            f"{size:>10}  {r['kind']:>4}  {r['build_s']:>7}  {r['ann_p50_ms']:>7}  "
            f"{r['ann_p95_ms']:>7}  {r['exact_p50_ms']:>9}  {r['recall@10']:>9}"
        )
    for key in (
        "index_build_s",
        "index_build_embedded",
        "index_build_no_cache_s",
        "search_warm_ms",
        "dense_only_ms",
        "bm25_only_ms",
        "ask_warm_ms",
        "ask_cold_s",
        "first_token_s",
        "tokens_per_s",
        "api_rps",
        "analyzer_20mb_s",
        "peak_rss_mb",
    ):
        if key in result:
            lines.append(f"{key}: {result[key]}")
    return "\n".join(lines)
