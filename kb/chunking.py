"""Chunking: each article becomes a few section chunks that carry the article's id and mode."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from kb.articles import Article


@dataclass(frozen=True)
class Chunk:
    article_id: str
    failure_mode: str
    section: str  # "summary", "signatures", or a body section name
    text: str

    @property
    def key(self) -> str:
        """Content hash: an unchanged chunk keeps its embedding across re-indexing."""
        return hashlib.sha256(f"{self.section}\n{self.text}".encode()).hexdigest()[:24]

    def to_dict(self) -> dict:
        return {
            "article_id": self.article_id,
            "failure_mode": self.failure_mode,
            "section": self.section,
            "text": self.text,
        }


def chunk_article(article: Article) -> list[Chunk]:
    """Split an article into retrieval units.

    The summary chunk (titles + symptoms in both languages) is what short questions match;
    the signatures chunk is what pasted tracebacks match; body sections carry the explanation.
    """

    def make(section: str, *parts: str) -> Chunk:
        text = "\n".join(p for p in parts if p and p.strip())
        return Chunk(article.id, article.failure_mode, section, text)

    chunks = [
        make("summary", article.title, article.zh.get("title", ""), *article.symptoms),
        make(
            "signatures",
            article.title,
            *article.error_signatures_plain(),
            *article.conditions,
        ),
        make(
            "Cause", article.cause, article.zh.get("cause", ""), article.sections.get("Cause", "")
        ),
        make("Fix", *article.fix, *article.zh.get("fix", []), article.sections.get("Fix", "")),
    ]
    for name in ("Symptoms", "How to confirm", "Why"):
        if article.sections.get(name):
            chunks.append(make(name, article.title, article.sections[name]))
    return [c for c in chunks if c.text.strip()]


def chunk_corpus(articles: list[Article]) -> list[Chunk]:
    return [chunk for article in articles for chunk in chunk_article(article)]
