"""Remove secrets and personal names from a log before it is stored, shown or sent anywhere."""

from __future__ import annotations

import re

# A rule is (pattern, replacement, needles). Patterns that open with a literal run over the whole
# text (the engine skips ahead to the literal); the others run only on the lines holding one of
# their lower-case needles, so a 20 MB log is never scanned position by position.
_Rule = tuple[re.Pattern[str], str, tuple[str, ...]]

_RULES: tuple[_Rule, ...] = (
    (
        re.compile(r"hf_(?<![A-Za-z0-9]hf_)[A-Za-z0-9]{30,64}(?![A-Za-z0-9])"),
        "<redacted:hf_token>",
        (),
    ),
    (
        re.compile(r"sk-(?<![A-Za-z0-9]sk-)(?:proj-|ant-|or-v1-)?[A-Za-z0-9_\-]{20,200}"),
        "<redacted:api_key>",
        (),
    ),
    (
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
        "<redacted:aws_key>",
        ("akia", "asia"),
    ),
    (
        re.compile(r"(?i)(aws_secret_access_key[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{40}"),
        r"\1<redacted:aws_secret>",
        ("aws_secret",),
    ),
    (
        re.compile(
            r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?[^\s\"',]{6,500}"
        ),
        r"\1<redacted:bearer>",
        ("authorization",),
    ),
    (
        re.compile(r"(?i)(bearer\s+)(?!<redacted)[A-Za-z0-9._~+/=\-]{8,500}"),
        r"\1<redacted:bearer>",
        ("bearer",),
    ),
    (
        re.compile(r"(?i)(wandb_api_key[\"']?\s*[=:]\s*[\"']?|wandb login\s+)[0-9a-f]{40}\b"),
        r"\1<redacted:wandb_key>",
        ("wandb",),
    ),
    (
        re.compile(
            r"(?i)(\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|hub_token|hf_token|secret[_-]?key"
            r"|password|passwd)[\"']?\s*[=:]\s*[\"']?)(?!<redacted)[^\s\"',]{6,500}"
        ),
        r"\1<redacted:secret>",
        ("key", "token", "pass"),
    ),
    (
        re.compile(
            r"(?<![\w.%+-])[\w.%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
            r"\.[A-Za-z]{2,24}\b"
        ),
        "<redacted:email>",
        ("@",),
    ),
    (re.compile(r"(/home/|/Users/)(?!<user>)[^/\s:'\"]{1,64}"), r"\1<user>", ()),
    (
        re.compile(r"(?i)([A-Z]:(?:\\\\|\\)Users(?:\\\\|\\))(?!<user>)[^\\\s:'\"]{1,64}"),
        r"\1<user>",
        ("users\\",),
    ),
)

MAX_HITS = 100_000  # needle hits followed per rule; beyond that the whole text is substituted


def redact(text: str) -> str:
    """The text with tokens, keys, e-mail addresses and home-directory user names replaced.

    "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456 in /home/alice/run"
        -> "HF_TOKEN=<redacted:hf_token> in /home/<user>/run"
    """
    low = text.lower()
    for pattern, replacement, needles in _RULES:
        if not needles or len(low) != len(text):  # lower() can change the length ("İ")
            new = pattern.sub(replacement, text)
        else:
            new = _sub_lines(text, low, needles, pattern, replacement)
        if new is not text and new != text:
            text, low = new, new.lower()
    return text


def _sub_lines(text: str, low: str, needles: tuple[str, ...], pattern, replacement) -> str:
    """Apply the pattern only to the lines that hold a needle."""
    spans: list[tuple[int, int]] = []
    hits = 0
    for needle in needles:
        start = 0
        while True:
            i = low.find(needle, start)
            if i < 0:
                break
            hits += 1
            if hits > MAX_HITS:
                return pattern.sub(replacement, text)
            a = text.rfind("\n", 0, i) + 1
            b = text.find("\n", i)
            b = len(text) if b < 0 else b
            spans.append((a, b))
            start = b
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    pos = 0
    for a, b in spans:
        if a < pos:  # this line was already handled through another needle
            continue
        out.append(text[pos:a])
        out.append(pattern.sub(replacement, text[a:b]))
        pos = b
    out.append(text[pos:])
    return "".join(out)
