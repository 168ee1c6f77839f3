"""Feedback on answers, stored in SQLite (WAL): survives restarts, kills and concurrent users."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kb.errors import BadInput

RATINGS = ("helpful", "not_helpful")
OUTCOMES = ("yes", "no", "partly")
MAX_COMMENT = 2000
MAX_QUERY = 4000

SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    query TEXT NOT NULL,
    article_id TEXT,
    failure_mode TEXT,
    rating TEXT,
    fixed TEXT,
    comment TEXT
);
"""


@dataclass(frozen=True)
class Feedback:
    query: str  # redacted before it gets here
    article_id: str | None
    failure_mode: str | None
    rating: str | None = None  # helpful | not_helpful
    fixed: str | None = None  # "did this fix your run?": yes | no | partly
    comment: str = ""

    def validate(self) -> Feedback:
        if self.rating is not None and self.rating not in RATINGS:
            raise BadInput(f"rating must be one of {', '.join(RATINGS)}")
        if self.fixed is not None and self.fixed not in OUTCOMES:
            raise BadInput(f"fixed must be one of {', '.join(OUTCOMES)}")
        if self.rating is None and self.fixed is None:
            raise BadInput("feedback needs a rating or a fixed outcome")
        if len(self.comment) > MAX_COMMENT:
            raise BadInput(f"comment is longer than {MAX_COMMENT} characters")
        return self


class FeedbackStore:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # One connection per thread; WAL lets readers and one writer work concurrently, and
            # a kill mid-write leaves the last committed state intact.
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def add(self, fb: Feedback) -> int:
        fb.validate()
        conn = self._connect()
        cur = conn.execute(
            "INSERT INTO feedback"
            " (created, query, article_id, failure_mode, rating, fixed, comment)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                time.time(),
                _encodable(fb.query[:MAX_QUERY]),
                _encodable(fb.article_id),
                _encodable(fb.failure_mode),
                fb.rating,
                fb.fixed,
                _encodable(fb.comment),
            ),
        )
        return int(cur.lastrowid)

    def rows(self) -> list[dict]:
        conn = self._connect()
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute("SELECT * FROM feedback ORDER BY id")]
        finally:
            conn.row_factory = None

    def count(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM feedback").fetchone()[0])

    def export_jsonl(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows())

    def not_helpful(self) -> list[dict]:
        return [r for r in self.rows() if r["rating"] == "not_helpful" or r["fixed"] == "no"]


def _encodable(text: str | None) -> str | None:
    """Lone surrogates (a JSON "\\ud800") as "?": SQLite stores only encodable text."""
    return text if text is None else text.encode("utf-8", "replace").decode("utf-8")
