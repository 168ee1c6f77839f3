"""Chunking: each article becomes a few section chunks that carry the article's id and mode."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from kb.articles import Article

# Dense embeddings cost ~1 ms per character on 2 CPU cores, so only the chunks that carry the
# meaning of a case are embedded, and only their head: titles and symptoms (summary), error
# strings (signatures), cause and fix. BM25 still indexes every chunk in full.
DENSE_SECTIONS = ("summary", "signatures", "Cause", "Fix")
DENSE_CHARS = 480


@dataclass(frozen=True)
class Chunk:
    article_id: str
    failure_mode: str
    section: str  # "summary", "signatures", or a body section name
    text: str

    @property
    def dense(self) -> bool:
        return self.section in DENSE_SECTIONS

    @property
    def dense_text(self) -> str:
        return self.text[:DENSE_CHARS]

    @property
    def key(self) -> str:
        """Hash of what is embedded: an unchanged chunk keeps its vector across re-indexing."""
        return hashlib.sha256(f"{self.section}\n{self.dense_text}".encode()).hexdigest()[:24]

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
