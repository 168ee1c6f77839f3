"""Looking up one article by id, safely (ids come from users and URLs)."""

from __future__ import annotations

import re
from pathlib import Path

from kb.articles import Article, parse_article
from kb.errors import BadInput

_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,120}$")


def get_article(articles_dir: Path, article_id: str) -> Article:
    """The article with this id; ids are slugs, so a path like '../x' is refused, not resolved."""
    if not _ID.match(article_id or ""):
        raise BadInput(f"{article_id!r} is not an article id (lowercase letters, digits, '-')")
    path = articles_dir / f"{article_id}.md"
    if not path.is_file():
        raise BadInput(f'no article {article_id!r}; see "kb list"')
    return parse_article(path)
