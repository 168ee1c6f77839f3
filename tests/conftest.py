"""Shared fixtures: offline mode, a tiny article corpus, the real bundled models (loaded once)."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from kb.settings import Settings  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny_articles(tmp_path: Path) -> Path:
    target = tmp_path / "articles"
    shutil.copytree(FIXTURES / "articles", target)
    return target


@pytest.fixture
def tiny_settings(tmp_path: Path, tiny_articles: Path) -> Settings:
    return replace(
        Settings(),
        articles_dir=tiny_articles,
        index_dir=tmp_path / "kbdata" / "index",
        feedback_db=tmp_path / "kbdata" / "feedback.sqlite3",
        llm_backend="none",
    )


@pytest.fixture(scope="session")
def real_assistant(tmp_path_factory):
    """The shipped corpus, indexed once for the whole session into a temporary directory."""
    from assistant.service import Assistant
    from kb.index import build_index

    base = tmp_path_factory.mktemp("realindex")
    settings = replace(
        Settings(),
        articles_dir=REPO / "articles",
        index_dir=base / "index",
        feedback_db=base / "feedback.sqlite3",
        llm_backend="none",
    )
    build_index(settings)
    return Assistant(settings)
