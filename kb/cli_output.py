"""How every `kb` command prints JSON: exactly one document, UTF-8 text kept readable."""

from __future__ import annotations

import json

import click


def emit_json(doc: object) -> None:
    click.echo(json.dumps(doc, ensure_ascii=False, indent=2))
