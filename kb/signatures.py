"""Exact and regex matching of articles' `error_signatures` against pasted text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.articles import Article
from kb.text import normalize_for_match

# Regex work is bounded: a hostile paste must not make matching slow.
MAX_MATCH_CHARS = 200_000


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
                        self._regex.append((article.id, sig, re.compile(sig[3:], re.IGNORECASE)))
                    except re.error:
                        continue  # `kb validate` reports it; retrieval must not crash on it
                else:
                    norm = normalize_for_match(sig)
                    if len(norm) >= 6:  # shorter ones match everywhere
                        self._literal.append((article.id, sig, norm))

    def match(self, text: str) -> list[SignatureMatch]:
        """Every signature found in the text, strongest first (one entry per article+signature)."""
        text = text[:MAX_MATCH_CHARS]
        norm = normalize_for_match(text)
        found: dict[tuple[str, str], SignatureMatch] = {}
        for article_id, sig, needle in self._literal:
            if needle in norm:
                found[(article_id, sig)] = SignatureMatch(article_id, sig, float(len(needle)))
        for article_id, sig, pattern in self._regex:
            m = pattern.search(text)
            if m:
                found[(article_id, sig)] = SignatureMatch(article_id, sig, float(len(m.group(0))))
        return sorted(found.values(), key=lambda s: -s.strength)
