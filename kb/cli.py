"""The `kb` command line: one function per command; `--json` prints exactly one JSON document."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kb.errors import BadInput, KbError
from kb.settings import Settings


class KbGroup(click.Group):
    """Turns library errors into one-line messages (exit 1) instead of tracebacks."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KbError as exc:
            raise click.ClickException(str(exc)) from exc
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)


def _emit_json(doc: object) -> None:
    click.echo(json.dumps(doc, ensure_ascii=False, indent=2))


def _console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@click.group(cls=KbGroup)
@click.option(
    "--articles",
    "articles_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Articles directory (default: the bundled articles/; env KB_ARTICLES_DIR).",
)
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Index directory (default: .kb/index; env KB_INDEX_DIR).",
)
@click.option(
    "--embedder",
    type=click.Choice(["e5", "minilm", "fused"]),
    default=None,
    help="Embedding model (default e5: multilingual; env KB_EMBEDDER).",
)
@click.version_option(package_name="kb")
@click.pass_context
def main(ctx: click.Context, articles_dir, index_dir, embedder) -> None:
    """kb: diagnose failed LLM fine-tuning runs from an error, a traceback or a log.

    Example: kb ask "loss is 0 with qwen2.5-7b"
    """
    ctx.obj = Settings.from_env(articles_dir=articles_dir, index_dir=index_dir, embedder=embedder)


def _read_query(query: str | None, file: Path | None, settings: Settings) -> str:
    from kb.inputs import read_stream, read_text_file

    if file is not None and query not in (None, ""):
        raise click.UsageError("give either QUERY or --file, not both")
    if file is not None:
        return read_text_file(file, settings.max_input_bytes)
    if query == "-":
        return read_stream(sys.stdin.buffer, settings.max_input_bytes)
    if query is None or not query.strip():
        raise BadInput("the query is empty: paste an error message, a traceback or a log")
    return query


@main.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the index here instead (a read-only artefact to ship to replicas).",
)
@click.option(
    "--save-embeddings",
    is_flag=True,
    help="Also write the chunk vectors to articles/.embeddings/ so fresh checkouts reuse them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the build report as JSON.")
@click.pass_obj
def index(settings: Settings, out: Path | None, save_embeddings: bool, as_json: bool) -> None:
    """Build the index from the articles (re-embeds only chunks that changed).

    Example: kb index    |    kb index --save-embeddings   (after adding articles)
    """
    from dataclasses import replace

    from kb.index import build_index
    from kb.index import save_embeddings as write_embeddings

    if out is not None:
        settings = replace(settings, index_dir=out)
    report = build_index(settings)
    saved = write_embeddings(settings) if save_embeddings else None
    if as_json:
        _emit_json({**report.to_dict(), **({"saved_embeddings": str(saved[0])} if saved else {})})
        return
    if saved:
        click.echo(f"saved {saved[1]} chunk vectors to {saved[0]}")
    m = report.manifest
    state = (
        "up to date"
        if report.unchanged
        else (f"built: {report.embedded} chunks embedded, {report.reused} reused")
    )
    click.echo(
        f"index {state} — {m.n_articles} articles, {m.n_chunks} chunks, {m.vector_kind} "
        f"search, {m.model_id} ({report.seconds:.1f} s) at {settings.index_dir}"
    )


@main.command()
@click.argument("query", required=False)
@click.option("-k", "k", type=click.IntRange(1, 50), default=5, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def search(settings: Settings, query: str | None, k: int, as_json: bool) -> None:
    """Find the known cases that match an error or a description.

    Example: kb search "FlashAttention only support fp16 and bf16" -k 3
    """
    from assistant.service import Assistant

    text = _read_query(query, None, settings)
    hits = Assistant(settings).search(text, k)
    if as_json:
        _emit_json({"query": text, "hits": [h.to_dict() for h in hits]})
        return
    if not hits:
        click.echo("no matching case")
    for hit in hits:
        click.echo(
            f"{hit.rank}. {hit.article.id}  [{hit.article.failure_mode}]  "
            f"confidence {hit.confidence:.0%}"
        )
        click.echo(f"   {hit.article.title}")
        for ev in hit.evidence[:2]:
            click.echo(f"   - {ev}")


@main.command()
@click.argument("query", required=False)
@click.option(
    "--file",
    "file",
    type=click.Path(path_type=Path),
    default=None,
    help="Read the question or log from a file.",
)
@click.option("-k", "k", type=click.IntRange(1, 20), default=5, show_default=True)
@click.option("--no-llm", is_flag=True, help="Composed answer only (no language model).")
@click.option("--show-prompt", is_flag=True, help="Print the LLM prompt that would be used.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def ask(settings: Settings, query, file, k, no_llm, show_prompt, as_json) -> None:
    """Diagnose a failure and write the fix (QUERY, - for stdin, or --file PATH).

    Example: kb ask "loss is 0 with qwen2.5-7b"    |    kb ask - < train.log
    """
    from assistant.service import Assistant

    text = _read_query(query, file, settings)
    assistant = Assistant(settings)
    if show_prompt:
        from assistant.generator import uses_rich_prompt
        from assistant.prompts import build_prompt

        prepared = assistant.prepare(text, k)
        rich = uses_rich_prompt(settings)
        prompt = build_prompt(prepared, rich_model=rich) if not prepared.abstained else ""
        if as_json:
            _emit_json({"query": prepared.query, "abstained": prepared.abstained, "prompt": prompt})
        else:
            click.echo(prompt or "(no prompt: no case matched, so the model is not called)")
        return
    if as_json:
        _emit_json(assistant.ask(text, k, use_llm=not no_llm).to_dict())
        return
    _ask_streaming(assistant, text, k, not no_llm)


def _ask_streaming(assistant, text: str, k: int, use_llm: bool) -> None:
    from assistant.answer import Answer
    from assistant.service import AskResult, Prepared

    out = sys.stdout
    prepared = None
    streamed = False
    for item in assistant.stream(text, k, use_llm=use_llm):
        if isinstance(item, Prepared):
            prepared = item
            if use_llm and not item.abstained:
                click.echo("Summary (local model): ", nl=False, err=False)
        elif isinstance(item, str):
            out.write(item)
            out.flush()
            streamed = True
        elif isinstance(item, AskResult):
            answer: Answer = item.answer
            if streamed:
                click.echo("")
            if use_llm and prepared and not prepared.abstained and not answer.llm_text:
                click.echo(f"[model summary dropped: {answer.llm_note}]", err=True)
            click.echo("")
            click.echo(answer.text)


@main.command()
@click.argument("article_id")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def show(settings: Settings, article_id: str, as_json: bool) -> None:
    """Show one article.

    Example: kb show missing-pad-token-llama3-reward-model
    """
    from kb.library import get_article

    article = get_article(settings.articles_dir, article_id)
    if as_json:
        _emit_json(article.to_dict())
        return
    click.echo(article.path.read_text(encoding="utf-8"))


@main.command(name="list")
@click.option("--mode", default=None, help="Only articles of this failure mode.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def list_articles(settings: Settings, mode: str | None, as_json: bool) -> None:
    """List the articles.

    Example: kb list --mode fp16-overflow-nan
    """
    from kb.articles import load_articles

    articles = [a for a in load_articles(settings.articles_dir) if mode in (None, a.failure_mode)]
    if as_json:
        _emit_json(
            [{"id": a.id, "failure_mode": a.failure_mode, "title": a.title} for a in articles]
        )
        return
    for a in articles:
        click.echo(f"{a.id:60s} {a.failure_mode}")
    click.echo(f"{len(articles)} articles", err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def validate(settings: Settings, as_json: bool) -> None:
    """Check every article: schema, taxonomy ids, duplicates, sections, snippets and their names.

    Example: kb validate
    """
    from kb.validate import validate_corpus

    articles, problems = validate_corpus(settings.articles_dir)
    errors = [p for p in problems if p.severity == "error"]
    if as_json:
        _emit_json(
            {
                "articles": len(articles),
                "errors": [p.to_dict() for p in errors],
                "warnings": [p.to_dict() for p in problems if p.severity != "error"],
            }
        )
    else:
        for p in problems:
            click.echo(f"{p.severity}: {p}", err=True)
        click.echo(
            f"{len(articles)} articles, {len(errors)} errors, "
            f"{len(problems) - len(errors)} warnings"
        )
    if errors:
        sys.exit(1)


@main.command(name="eval")
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
        _emit_json(summary)
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


@main.command()
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
        _emit_json(grouped)
        return
    if not grouped:
        click.echo(empty)
    for mode, rows in grouped.items():
        click.echo(f"{mode} ({len(rows)})")
        for row in rows:
            click.echo(f"  - {line(row)}")


@main.command()
@click.argument("source")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the loss curve (anomalies marked) to this PNG.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def analyze(settings: Settings, source: str, plot_path: Path | None, as_json: bool) -> None:
    """Read a log (FILE or - for stdin): metrics, anomalies, errors, flags, versions, model.

    Example: kb analyze train.log --plot loss.png
    """
    from assistant.logs import analyze as analyze_text
    from assistant.redact import redact
    from kb.inputs import read_stream, read_text_file

    if source == "-":
        text = read_stream(sys.stdin.buffer, settings.max_input_bytes)
    else:
        text = read_text_file(Path(source), settings.max_input_bytes)
    signals = analyze_text(redact(text))
    if plot_path is not None:
        from assistant.plot import write_png

        write_png(signals, plot_path)
        click.echo(f"wrote {plot_path}", err=True)
    if as_json:
        _emit_json(signals.to_dict())
        return
    for a in signals.anomalies:
        click.echo(f"anomaly {a.kind} in {a.metric} at step {a.step}: {a.detail}")
    for e in signals.errors:
        click.echo(f"error: {e.line}")
    for phrase in signals.evidence_phrases():
        click.echo(f"- {phrase}")
    if not (signals.anomalies or signals.errors):
        click.echo("no anomaly or error found")


@main.command()
@click.argument("source")
@click.option("--exit-on-anomaly", is_flag=True, help="Exit 3 at the first anomaly or error.")
@click.option("--poll", type=float, default=0.5, show_default=True, help="Seconds between reads.")
@click.pass_obj
def watch(settings: Settings, source: str, exit_on_anomaly: bool, poll: float) -> None:
    """Follow a training log as it grows; print nothing while healthy, the case when it breaks.

    Example: kb watch train.log --exit-on-anomaly    |    tail -f train.log | kb watch -
    """
    from assistant.redact import redact
    from assistant.service import Assistant
    from assistant.watch import LogFollower, follow_file

    assistant = Assistant(settings)
    follower = LogFollower()
    if source == "-":
        chunks = iter(lambda: sys.stdin.readline(), "")
    else:
        path = Path(source)
        if not path.exists():
            raise BadInput(f"no such file: {path}")
        chunks = follow_file(path, poll_s=poll)
    for chunk in chunks:
        for event in follower.feed(redact(chunk)):
            _report_event(assistant, event)
            if exit_on_anomaly:
                sys.exit(3)


def _report_event(assistant, event) -> None:
    from assistant.signals import Anomaly

    if isinstance(event, Anomaly):
        head = f"step {event.step}: {event.detail}" if event.step is not None else event.detail
        query = f"{event.metric} {event.kind.replace('_', ' ')}: {event.detail}"
    else:
        head = f"error: {event.line}"
        query = event.line
    click.echo(f"[kb watch] {head}")
    hits = assistant.search(query, 1)
    if hits and hits[0].confidence >= assistant.settings.abstain_threshold:
        article = hits[0].article
        click.echo(f"  likely case: {article.title} [{article.failure_mode}]")
        for i, step in enumerate(article.fix[:3], 1):
            click.echo(f"  {i}. {step}")
        click.echo(f"  more: kb show {article.id}")
    else:
        click.echo("  no known case matches confidently; run `kb ask --file` on the log")
    sys.stdout.flush()


@main.command()
@click.option("--host", default=None, help="Bind address (default 127.0.0.1; env KB_HOST).")
@click.option("--port", type=int, default=None, help="Port (default 7860; env KB_PORT).")
@click.option("--no-llm", is_flag=True, help="Composed answers only.")
@click.pass_obj
def serve(settings: Settings, host: str | None, port: int | None, no_llm: bool) -> None:
    """Serve the web chat, the JSON API and the docs widget from one process.

    Example: kb serve --port 7860
    """
    from dataclasses import replace

    from assistant.webapp import serve as run_server

    settings = replace(
        settings,
        host=host or settings.host,
        port=port or settings.port,
        llm_backend="none" if no_llm else settings.llm_backend,
    )
    run_server(settings)


@main.command()
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


@main.group()
def feedback() -> None:
    """Feedback stored by the web app and the API.

    Example: kb feedback export > feedback.jsonl
    """


@feedback.command(name="export")
@click.option("--not-helpful", is_flag=True, help="Only answers rated not helpful / not fixed.")
@click.pass_obj
def feedback_export(settings: Settings, not_helpful: bool) -> None:
    """Write the feedback as JSONL (one row per answer rating).

    Example: kb feedback export --not-helpful > gaps.jsonl
    """
    from assistant.feedback import FeedbackStore

    store = FeedbackStore(settings.feedback_db)
    rows = store.not_helpful() if not_helpful else store.rows()
    for row in rows:
        click.echo(json.dumps(row, ensure_ascii=False))
