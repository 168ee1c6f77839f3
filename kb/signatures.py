"""Exact and regex matching of articles' `error_signatures` against pasted text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.articles import Article
from kb.text import normalize_for_match

# Regex work is bounded: a hostile paste must not make matching slow.
MAX_MATCH_CHARS = 200_000

# Launcher exceptions that only say "a child died"; the root cause is the other exception.
WRAPPER_ERRORS = ("ChildFailedError", "CalledProcessError")
# Lines that only say a process died; the cause is in another line the user did not paste.
WRAPPER = re.compile(
    "|".join(WRAPPER_ERRORS)
    + r"|exitcode\s*:|exited with return code|SIGTERM|Sending process \d+ closing signal"
    + r"|Root Cause \(first observed failure\)|To enable traceback see:",
    re.IGNORECASE,
)


# A negative exit code is the signal that killed the worker: -9 (SIGKILL, nearly always the kernel
# reclaiming host memory), -11 (SIGSEGV), -7 (SIGBUS) each name a cause. -15 (SIGTERM) is the
# launcher stopping the other workers after one failed, so it says nothing.
_SIGNAL_EXIT = re.compile(r"-(?!15\b)\d+\b|\(SIG(?!TERM)[A-Z]+\)")


def only_says_a_process_died(signature: str) -> bool:
    """ "ChildFailedError" or "failed (exitcode: 1)" say a worker died, not why; "failed
    (exitcode: -9)" says the kernel killed it, so it is not a wrapper."""
    return bool(WRAPPER.search(signature)) and not _SIGNAL_EXIT.search(signature)


@dataclass(frozen=True)
class SignatureMatch:
    article_id: str
    signature: str
    strength: float  # characters of the signature matched: longer is more specific


class SignatureMatcher:
    def __init__(self, articles: list[Article]):
        self._literal: list[tuple[str, str, str]] = []  # (article id, signature, normalized)
        self._regex: list[tuple[str, str, re.Pattern[str]]] = []
        for article in articles:
            for sig in article.error_signatures:
                if sig.startswith("re:"):
                    try:
                        self._regex.append((article.id, sig, compile_signature(sig[3:])))
                    except re.error:
                        continue  # `kb validate` reports it; retrieval must not crash on it
                else:
                    norm = normalize_for_match(sig)
                    if len(norm) >= 6:  # shorter ones match everywhere
                        self._literal.append((article.id, sig, norm))

    def match(self, text: str) -> list[SignatureMatch]:
        """Every signature found in the text, strongest first (one entry per article+signature).

        A match that only says a process died goes after every match that names an error: with
        ChildFailedError and "Signal 9 (SIGKILL)" in one log, the launcher's longer string must not
        put the wrapper's triage case above the case for the kill.
        """
        text = text[:MAX_MATCH_CHARS]
        norm = normalize_for_match(text)
        found: dict[tuple[str, str], SignatureMatch] = {}
        for article_id, sig, needle in self._literal:
            if needle in norm:
                found[(article_id, sig)] = SignatureMatch(article_id, sig, float(len(needle)))
        for article_id, sig, pattern in self._regex:
            span = pattern.span_in(text)
            if span:
                found[(article_id, sig)] = SignatureMatch(article_id, sig, float(span[1] - span[0]))
        return sorted(
            found.values(), key=lambda s: (only_says_a_process_died(s.signature), -s.strength)
        )


# "A[\s\S]*B" ("this frame, then later that error") makes the regex engine retry from every A to
# the end of the text: a paste repeating A 10,000 times took 72 s. Such a pattern is split at its
# top-level gaps and its pieces are searched one after another, which is linear. It finds what the
# whole pattern finds as long as each piece before a gap ends in one character, a literal or a
# group of alternatives; a piece ending in a quantifier could match shorter, so it stays whole.
_GAP = re.compile(r"\[\\s\\S\][*+]\??")
_VARIABLE_END = re.compile(r"(?<!\\)[*+?}]$")  # a quantifier; "\s" or "[ab]" is one character


class _Chain:
    def __init__(self, pieces: list[re.Pattern[str]], min_gaps: list[int]):
        self.pieces = pieces
        self.min_gaps = min_gaps  # before each piece after the first: 0 for "*", 1 for "+"

    def span_in(self, text: str) -> tuple[int, int] | None:
        """Start of the first piece to the end of the last, pieces in order; None if absent."""
        first = self.pieces[0].search(text)
        if not first:
            return None
        pos = first.end()
        for piece, gap in zip(self.pieces[1:], self.min_gaps, strict=True):
            m = piece.search(text, pos + gap)
            if not m:
                return None
            pos = m.end()
        return first.start(), pos


class _Single:
    def __init__(self, pattern: re.Pattern[str]):
        self.pattern = pattern

    def span_in(self, text: str) -> tuple[int, int] | None:
        m = self.pattern.search(text)
        return m.span() if m else None


def compile_signature(source: str) -> _Chain | _Single:
    """A signature regex as a matcher; raises re.error for an invalid pattern."""
    whole = re.compile(source, re.IGNORECASE)
    pieces, gaps = _split_top_level_gaps(source)
    if len(pieces) < 2 or not all(pieces) or any(_VARIABLE_END.search(p) for p in pieces[:-1]):
        return _Single(whole)
    flags = re.match(r"\(\?[aiLmsux]+\)", source)  # "(?s)" up front holds for every piece
    if flags:
        pieces = [pieces[0], *(flags.group(0) + p for p in pieces[1:])]
    try:
        return _Chain([re.compile(p, re.IGNORECASE) for p in pieces], gaps)
    except re.error:
        return _Single(whole)  # a piece that does not stand alone (a backreference ...)


def _split_top_level_gaps(source: str) -> tuple[list[str], list[int]]:
    """Split at "[\\s\\S]*" / "+" (lazy or not) outside any group and any alternation."""
    depth, cuts, i = 0, [], 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return [source], []  # "A[\\s\\S]*B|C": the gap is not between all of it
        elif ch == "[":
            m = _GAP.match(source, i)
            if m and depth == 0:
                cuts.append((i, m.end(), 1 if "+" in m.group(0) else 0))
                i = m.end()
                continue
            i += 1  # skip the character class: "(" or "|" inside it is a plain character
            while i < len(source) and source[i] != "]":
                i += 2 if source[i] == "\\" else 1
        i += 1
    pieces, last = [], 0
    for begin, end, _ in cuts:
        pieces.append(source[last:begin])
        last = end
    pieces.append(source[last:])
    return pieces, [gap for *_, gap in cuts]
