"""BM25 over chunks as a sparse term-by-document weight matrix: query scoring is one sparse sum."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
from scipy import sparse

from kb.text import tokenize


class BM25:
    """Okapi BM25 with precomputed per-(term, doc) weights.

    Scoring a query sums the rows of its terms, so cost grows with the postings of the query
    terms, not with the corpus size.
    """

    def __init__(self, vocab: dict[str, int], weights: sparse.csr_matrix):
        self.vocab = vocab
        self.weights = weights  # (n_terms, n_docs)
        self._by_doc: sparse.csc_matrix | None = None  # the same weights by document, on demand

    @property
    def n_docs(self) -> int:
        return self.weights.shape[1]

    @classmethod
    def build(cls, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> BM25:
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        lengths = np.zeros(len(docs), dtype=np.float32)
        for d, terms in enumerate(docs):
            lengths[d] = len(terms)
            for term, tf in Counter(terms).items():
                rows.append(vocab.setdefault(term, len(vocab)))
                cols.append(d)
                tfs.append(tf)
        n_docs = max(len(docs), 1)
        avg_len = float(lengths.mean()) if len(docs) else 1.0
        row_arr = np.asarray(rows, dtype=np.int64)
        tf_arr = np.asarray(tfs, dtype=np.float32)
        df = np.bincount(row_arr, minlength=len(vocab)).astype(np.float32)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        doc_len = lengths[np.asarray(cols, dtype=np.int64)] if cols else np.zeros(0, np.float32)
        norm = tf_arr * (k1 + 1) / (tf_arr + k1 * (1 - b + b * doc_len / max(avg_len, 1e-9)))
        data = (idf[row_arr] * norm).astype(np.float32) if rows else np.zeros(0, np.float32)
        weights = sparse.csr_matrix(
            (data, (row_arr, np.asarray(cols))), shape=(len(vocab), len(docs))
        )
        return cls(vocab, weights)

    @classmethod
    def from_texts(cls, texts: list[str]) -> BM25:
        return cls.build([tokenize(t) for t in texts])

    def term_ids(self, query_terms: list[str]) -> list[int]:
        return [self.vocab[t] for t in dict.fromkeys(query_terms) if t in self.vocab]

    def scores(self, query_terms: list[str]) -> np.ndarray:
        ids = self.term_ids(query_terms)
        if not ids:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self.weights[ids].sum(axis=0)).ravel()

    def matched_terms(self, query_terms: list[str], doc: int) -> list[str]:
        """The query terms that occur in one document, highest weight first (for evidence)."""
        # One column of the matrix as {term id: weight}: indexing the CSR matrix cell by cell
        # cost about 130 ms per long pasted log (a scipy call per term and candidate).
        columns = self._columns()
        start, end = columns.indptr[doc], columns.indptr[doc + 1]
        term_ids, weights = columns.indices[start:end], columns.data[start:end]
        in_doc = dict(zip(term_ids.tolist(), weights.tolist(), strict=True))
        found = []
        for term in dict.fromkeys(query_terms):
            w = in_doc.get(self.vocab.get(term, -1), 0.0)
            if w > 0:
                found.append((float(w), term))
        return [t for _, t in sorted(found, reverse=True)]

    def _columns(self) -> sparse.csc_matrix:
        if self._by_doc is None:
            self._by_doc = self.weights.tocsc()
        return self._by_doc

    def save(self, directory: Path) -> list[str]:
        sparse.save_npz(directory / "bm25.npz", self.weights, compressed=False)
        (directory / "bm25_vocab.json").write_text(json.dumps(self.vocab, ensure_ascii=False))
        return ["bm25.npz", "bm25_vocab.json"]

    @classmethod
    def load(cls, directory: Path) -> BM25:
        weights = sparse.load_npz(directory / "bm25.npz").tocsr()
        vocab = json.loads((directory / "bm25_vocab.json").read_text())
        return cls(vocab, weights)
