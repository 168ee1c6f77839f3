"""`kb analyze` and `kb watch`: read a training log, once or as it grows."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kb.cli_output import emit_json
from kb.errors import BadInput
from kb.settings import Settings


@click.command()
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
        emit_json(signals.to_dict())
        return
    for a in signals.anomalies:
        click.echo(f"anomaly {a.kind} in {a.metric} at step {a.step}: {a.detail}")
    for e in signals.errors:
        click.echo(f"error: {e.line}")
    for phrase in signals.evidence_phrases():
        click.echo(f"- {phrase}")
    if not (signals.anomalies or signals.errors):
        click.echo("no anomaly or error found")


@click.command()
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
