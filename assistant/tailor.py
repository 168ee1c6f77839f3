"""Adapt an article's snippets to the user's run: form (CLI, YAML, Python), values, versions."""

from __future__ import annotations

import re
from dataclasses import replace

from packaging.version import InvalidVersion, Version

from assistant.changes import bf16_in_fix, enables_bf16, lacks_bf16
from assistant.signals import LogSignals
from kb.articles import Article, Rename, Snippet

# Which snippet target fits a run launched with a given framework.
FRAMEWORK_TARGETS = {
    "llamafactory": ("llamafactory",),
    "openrlhf": ("openrlhf",),
    "medicalgpt": ("medicalgpt", "hf-trainer-cli"),
    "ms-swift": ("ms-swift",),
    "deepspeed": ("deepspeed",),
    "trl": ("trl", "trl-cli"),
    "transformers": ("transformers", "hf-trainer-cli"),
}
MAX_SNIPPETS = 2


def tailor_snippets(article: Article, signals: LogSignals) -> list[Snippet]:
    """The article's snippets that fit this run best, with the user's own values kept.

    On a GPU without bf16, pasting a snippet that turns bf16 on fails at start-up ("Bf16 ...
    only supported on Ampere") or trains in emulated bf16. When the fix is about precision such
    a snippet is not offered at all; when bf16 is only incidental to it (a loading line), it is
    offered with a note to keep the run's own precision.
    """
    no_bf16 = lacks_bf16(signals.hardware)
    precision_fix = no_bf16 and bf16_in_fix(article)
    offered = [s for s in article.snippets if not (precision_fix and enables_bf16(s))]
    ranked = sorted(offered, key=lambda s: -_fit(s, signals))
    chosen: list[Snippet] = []
    for snippet in ranked:
        if all(snippet.target != c.target or snippet.language != c.language for c in chosen):
            chosen.append(snippet)
        if len(chosen) == MAX_SNIPPETS:
            break
    words = fix_words(article)
    adapted = []
    for snippet in chosen:
        renamed = _apply_renames(snippet, article.renames, signals.versions)
        out = _adapt(renamed, signals, words, article)
        if no_bf16 and enables_bf16(snippet):
            note = f"your {signals.hardware} has no bf16: keep your run's own precision there"
            out = _with_note(out, [note])
        adapted.append(out)
    return adapted


def _fit(snippet: Snippet, signals: LogSignals) -> float:
    score = 0.0
    if signals.framework and snippet.target in FRAMEWORK_TARGETS.get(signals.framework, ()):
        score += 3
    uses_cli = any(k for k in signals.flags) and snippet.language == "bash"
    if uses_cli and snippet.target not in ("shell",):
        score += 1
    if snippet.target == "deepspeed" and any("zero" in k or k == "stage" for k in signals.flags):
        score += 1.5
    if snippet.target == "shell":
        score -= 0.5
    return score


def fix_words(article: Article) -> set[str]:
    """Argument names the fix itself is about: those keep the article's value, never the user's."""
    text = " ".join([*article.fix, article.cause, *article.zh.get("fix", [])])
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text))


def _version_below(version: str | None, since: str) -> bool:
    if not version or not since:
        return False
    try:
        return Version(version) < Version(since)
    except InvalidVersion:
        return False


def _apply_renames(snippet: Snippet, renames: list[Rename], versions: dict[str, str]) -> Snippet:
    code = snippet.code
    notes = []
    for rename in renames:
        if _version_below(versions.get(rename.library), rename.since):
            new_code = re.sub(rf"\b{re.escape(rename.new)}\b", rename.old, code)
            if new_code != code:
                notes.append(
                    f"{rename.library} {versions[rename.library]} < {rename.since}: "
                    f"{rename.new} is spelled {rename.old}"
                )
                code = new_code
    return _with_note(replace(snippet, code=code), notes)


_PY_KWARG = re.compile(r"\b([a-z_][a-z0-9_]*)\s*=\s*([^,\n)]+)")
_CLI_FLAG = re.compile(r"--([a-z_][a-z0-9_]*)(?:[ =]+)([^\s\\-][^\s\\]*)")
_YAML_KEY = re.compile(r"^([a-z_][a-z0-9_]*):[ \t]*(\S[^\n#]*?)[ \t]*$", re.MULTILINE)
_HF_ID = re.compile(r"""(["'])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)\1""")


# How a user's value is written back, per snippet language: (pattern, render, note form).
_FORMS = {
    "python": (_PY_KWARG, lambda m, v: f"{m.group(1)}={_py_literal(v)}", "{key}={value}"),
    "bash": (_CLI_FLAG, lambda m, v: m.group(0)[: m.start(2) - m.start(0)] + v, "--{key} {value}"),
    "yaml": (_YAML_KEY, lambda m, v: f"{m.group(1)}: {v}", "{key}: {value}"),
}


def _adapt(snippet: Snippet, signals: LogSignals, fix_words: set[str], article: Article) -> Snippet:
    """Put the user's values into the snippet for keys the fix does not change."""
    code = snippet.code
    kept = []

    def user_value(key: str) -> str | None:
        if key in fix_words or key not in signals.flags:
            return None
        value = signals.flags[key]
        return value if value not in ("", "true") else None

    form = _FORMS.get(snippet.language)
    if form is not None:
        pattern, render, shown = form

        def substitute(m: re.Match) -> str:
            value = user_value(m.group(1))
            if value is None:
                return m.group(0)
            kept.append(shown.format(key=m.group(1), value=value))
            return render(m, value)

        code = pattern.sub(substitute, code)
    user_model = signals.model.get("name") if signals.model else None
    if user_model and "/" in user_model and _family_fits(signals, article):
        code, n = _HF_ID.subn(lambda m: f"{m.group(1)}{user_model}{m.group(1)}", code, count=1)
        if n:
            kept.append(f"model {user_model}")
    notes = [f"kept from your run: {', '.join(kept)}"] if kept else []
    return _with_note(replace(snippet, code=code), notes)


def _family_fits(signals: LogSignals, article: Article) -> bool:
    family = (signals.model or {}).get("family") or ""
    models = [m.lower() for m in article.models]
    return bool(family) and (
        "any" in models or any(family.startswith(m) or m.startswith(family) for m in models)
    )


def _py_literal(value: str) -> str:
    low = value.lower()
    if low in ("true", "false"):
        return low.capitalize()
    try:
        float(value)
        return value
    except ValueError:
        return repr(value.strip("'\""))


def _with_note(snippet: Snippet, notes: list[str]) -> Snippet:
    if not notes or snippet.language == "json":
        return snippet
    header = "".join(f"# {n}\n" for n in notes)
    return replace(snippet, code=header + snippet.code)
