"""The `kb` command line: one function per command; `--json` prints exactly one JSON document."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kb.cli_output import emit_json
from kb.cli_quality import bench, eval_cmd, gaps
from kb.cli_runs import analyze, watch
from kb.errors import BadInput, KbError
from kb.settings import Settings


class KbGroup(click.Group):
    """Turns library errors into one-line messages (exit 1) instead of tracebacks."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            raise _pasted_text_as_option(exc) from exc
        except KbError as exc:
            raise click.ClickException(str(exc)) from exc
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)


def _pasted_text_as_option(exc: click.NoSuchOption) -> click.UsageError:
    """A pasted report that starts with '-' (the transformers issue template's "- `transformers`
    version: ...", a "---" rule) reaches click as an unknown option; say how to pass it instead of
    "No such option '- '"."""
    name = exc.option_name.lstrip("-")
    if name and (name[0].isalnum() and not any(ch.isspace() for ch in name)):
        return exc
    return click.UsageError(
        "the query starts with '-', so it was read as an option: put -- before it "
        '(kb ask -- "- transformers version ...") or read it from a file or stdin '
        "(kb ask --file report.txt, kb ask - < report.txt)",
        ctx=exc.ctx,
    )


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
        emit_json({**report.to_dict(), **({"saved_embeddings": str(saved[0])} if saved else {})})
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
        emit_json({"query": text, "hits": [h.to_dict() for h in hits]})
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
            emit_json({"query": prepared.query, "abstained": prepared.abstained, "prompt": prompt})
        else:
            click.echo(prompt or "(no prompt: no case matched, so the model is not called)")
        return
    if as_json:
        emit_json(assistant.ask(text, k, use_llm=not no_llm).to_dict())
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
        emit_json(article.to_dict())
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
        emit_json(
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
        emit_json(
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


# Commands that measure kb or read logs live in their own modules; registered here so that
# `kb --help` lists them all.
main.add_command(eval_cmd)
main.add_command(gaps)
main.add_command(bench)
main.add_command(analyze)
main.add_command(watch)
