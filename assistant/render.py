"""Safe HTML for the web surfaces: markdown with raw HTML disabled, and escaped case cards."""

from __future__ import annotations

import html

from markdown_it import MarkdownIt

from assistant.answer import CASES_SHOWN
from kb.articles import Article
from kb.retrieval import Hit
from kb.text import has_cjk

# "html": False makes markdown-it escape raw HTML in articles and pastes instead of passing it on.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False})
_SAFE_SCHEMES = ("http://", "https://")


def markdown_to_html(text: str) -> str:
    return _md.render(text)


def _link(url: str) -> str:
    if not url.startswith(_SAFE_SCHEMES):
        return html.escape(url)
    href = html.escape(url, quote=True)
    return f'<a href="{href}" target="_blank" rel="noopener">{html.escape(url)}</a>'


def article_html(article: Article) -> str:
    body = article.path.read_text(encoding="utf-8").split("---", 2)[-1]
    parts = [
        f"<h2>{html.escape(article.title)}</h2>",
        f"<p><code>{html.escape(article.failure_mode)}</code> · {html.escape(article.id)}</p>",
        markdown_to_html(body),
        "<h3>Sources</h3><ul>" + "".join(f"<li>{_link(u)}</li>" for u in article.sources) + "</ul>",
    ]
    return "\n".join(parts)


CARD_LABELS = {
    "en": {
        "confidence": "confidence",
        "symptom": "Symptom",
        "cause": "Cause",
        "fix": "Fix",
        "evidence": "Evidence",
        "sources": "Sources",
    },
    "zh": {
        "confidence": "置信度",
        "symptom": "症状",
        "cause": "原因",
        "fix": "解决方法",
        "evidence": "依据",
        "sources": "参考来源",
    },
}


def _symptom(symptoms: list[str], zh: bool) -> str:
    """The first symptom, or for a Chinese reader the first one written in Chinese."""
    if zh:
        for s in symptoms:
            if has_cjk(s):
                return s
    return symptoms[0] if symptoms else ""


def case_cards_html(hits: list[Hit], abstained: bool, language: str = "en") -> str:
    if not hits:
        return "<p>No case matched.</p>"
    cards = []
    if abstained:
        cards.append("<p class='kb-abstain'><b>No known case matches.</b> Nearest cases:</p>")
    zh = language == "zh"
    labels = CARD_LABELS["zh" if zh else "en"]
    for hit in hits[:CASES_SHOWN]:
        a = hit.article
        title = a.zh.get("title") if zh and a.zh.get("title") else a.title
        cause = a.zh.get("cause") if zh and a.zh.get("cause") else a.cause
        fix = a.zh.get("fix") if zh and a.zh.get("fix") else a.fix
        evidence = hit.reasons(language)
        symptom = _symptom(a.symptoms, zh)
        cards.append(
            "<div class='kb-card'>"
            f"<div class='kb-card-title'>{hit.rank}. {html.escape(title)}</div>"
            f"<div><code>{html.escape(a.failure_mode)}</code> · {labels['confidence']} "
            f"{hit.confidence:.0%}</div>"
            f"<div><b>{labels['symptom']}:</b> {html.escape(symptom)}</div>"
            f"<div><b>{labels['cause']}:</b> {html.escape(cause)}</div>"
            f"<div><b>{labels['fix']}:</b><ol>"
            + "".join(f"<li>{html.escape(s)}</li>" for s in fix[:4])
            + "</ol></div>"
            f"<div><b>{labels['evidence']}:</b><ul>"
            + "".join(f"<li>{html.escape(e)}</li>" for e in evidence[:4])
            + "</ul></div>"
            f"<div><b>{labels['sources']}:</b><ul>"
            + "".join(f"<li>{_link(u)}</li>" for u in a.sources[:4])
            + "</ul></div></div>"
        )
    return "\n".join(cards)
