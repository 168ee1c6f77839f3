"""Chunk embeddings shipped next to the articles, so a fresh checkout indexes without re-embedding.

Embedding the whole corpus costs minutes on a 2-core CPU (the e5 engine runs ~1.2 ms per token),
while the vectors of an unchanged chunk never change. `kb index --save-embeddings` writes the
vectors of the current index to `articles/.embeddings/<model>.npz`, keyed by the chunk hash
(section + the exact text embedded), and `kb index` reuses every entry whose key is still in the
corpus. A new or edited chunk has a new key and is embedded as usual, so a stale or missing cache
only makes the build slower, never wrong. A damaged cache file is ignored, not trusted.
"""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
from pathlib import Path

import numpy as np

CACHE_DIRNAME = ".embeddings"


def cache_path(articles_dir: Path, model_id: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("_")
    return articles_dir / CACHE_DIRNAME / f"{slug}.npz"


def load_cache(articles_dir: Path, model_id: str) -> dict[str, np.ndarray]:
    """{chunk key: vector} from the shipped cache; {} when absent, for another model, or damaged."""
    path = cache_path(articles_dir, model_id)
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["model_id"]) != model_id:
                return {}
            keys = [str(k) for k in data["keys"]]
            vectors = np.asarray(data["vectors"], dtype=np.float32)
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return {}
    if vectors.ndim != 2 or len(keys) != len(vectors) or not np.isfinite(vectors).all():
        return {}
    return dict(zip(keys, vectors, strict=True))


def save_cache(articles_dir: Path, model_id: str, keys: list[str], vectors: np.ndarray) -> Path:
    """Write the cache atomically (temporary file + rename): a kill leaves the old one intact."""
    path = cache_path(articles_dir, model_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(
                fh,
                model_id=np.array(model_id),
                keys=np.array(keys),
                vectors=np.asarray(vectors, dtype=np.float32),
            )
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; this file is shipped in the repo
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
