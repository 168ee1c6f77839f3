"""Dense vector search with FAISS: exact inner product for small corpora, HNSW above a threshold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Parameters measured with `kb bench` (recall@10 against exact search on clustered vectors).
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
HNSW_EF_SEARCH = 192
# Above this many vectors HNSW takes too long to build on 2 cores: IVF trains on a sample.
IVF_THRESHOLD = 300_000
IVF_NPROBE = 32
IVF_TRAIN_SAMPLE = 64


@dataclass
class VectorIndex:
    kind: str  # "flat", "hnsw" or "ivf"
    index: object  # a faiss.Index

    @classmethod
    def build(cls, vectors: np.ndarray, ann_threshold: int) -> VectorIndex:
        import faiss

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        dim = vectors.shape[1]
        if len(vectors) > max(ann_threshold, IVF_THRESHOLD):
            nlist = int(4 * np.sqrt(len(vectors)))
            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            rng = np.random.default_rng(0)
            sample = vectors[
                rng.choice(len(vectors), min(len(vectors), nlist * IVF_TRAIN_SAMPLE), replace=False)
            ]
            index.train(sample)
            index.add(vectors)
            index.nprobe = IVF_NPROBE
            return cls("ivf", index)
        if len(vectors) > ann_threshold:
            index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            index.add(vectors)
            index.hnsw.efSearch = HNSW_EF_SEARCH
            return cls("hnsw", index)
        index = faiss.IndexFlatIP(dim)
        index.add(vectors)
        return cls("flat", index)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids) arrays of shape (n_queries, k); ids are -1 where fewer than k exist."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = max(1, min(k, self.index.ntotal))
        return self.index.search(queries, k)

    def save(self, path: str) -> None:
        import faiss

        faiss.write_index(self.index, path)

    @classmethod
    def load(cls, path: str) -> VectorIndex:
        import faiss

        index = faiss.read_index(path)
        if isinstance(index, faiss.IndexHNSWFlat):
            index.hnsw.efSearch = HNSW_EF_SEARCH
            return cls("hnsw", index)
        if isinstance(index, faiss.IndexIVFFlat):
            index.nprobe = IVF_NPROBE
            return cls("ivf", index)
        return cls("flat", index)
