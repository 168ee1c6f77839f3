"""The on-disk index: chunks, vectors (FAISS), BM25 and a manifest, replaced atomically.

Layout: `<index_dir>` is a symlink to a sibling `<name>.v-<hash>` directory. A rebuild writes a
new sibling, then swaps the symlink with one rename, so a kill at any point leaves the previous
index whole and usable.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; concurrent builds are not serialized there
    fcntl = None

import numpy as np

from kb import __version__
from kb.articles import Article, article_paths, load_articles
from kb.bm25 import BM25
from kb.chunking import Chunk, chunk_corpus
from kb.embedcache import load_cache, save_cache
from kb.embedding import Embedder, embedder_model_id, load_embedder
from kb.errors import CorruptIndex, IndexNotFound, IndexStale
from kb.settings import Settings
from kb.vectors import VectorIndex

FORMAT_VERSION = 4  # bump when chunking, tokenization or file layout change: old indexes go stale


@dataclass(frozen=True)
class Manifest:
    kb_version: str
    format_version: int
    embedder: str
    model_id: str
    dim: int
    corpus_hash: str
    n_articles: int
    n_chunks: int
    vector_kind: str
    created: float
    files: dict[str, str]  # file name -> sha256

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class LoadedIndex:
    manifest: Manifest
    articles: dict[str, Article]
    chunks: list[Chunk]
    vectors: VectorIndex
    bm25: BM25
    directory: Path
    dense_ids: list[int]  # row i of the vector index is chunk dense_ids[i]


@dataclass(frozen=True)
class BuildReport:
    manifest: Manifest
    embedded: int  # chunks embedded now
    reused: int  # chunks whose vectors came from the previous index or the shipped cache
    unchanged: bool  # the corpus and model were the same: nothing was rebuilt
    seconds: float

    def to_dict(self) -> dict:
        return {
            "index": self.manifest.to_dict(),
            "embedded": self.embedded,
            "reused": self.reused,
            "unchanged": self.unchanged,
            "seconds": round(self.seconds, 3),
        }


# The modules whose code decides what the index holds (parsing, chunking, BM25 terms): an index
# built by other code is stale even where FORMAT_VERSION was not bumped by hand.
_INDEX_CODE = ("articles.py", "chunking.py", "text.py", "bm25.py")


def corpus_hash(articles_dir: Path) -> str:
    h = hashlib.sha256(f"format={FORMAT_VERSION}".encode())
    for name in _INDEX_CODE:
        h.update((Path(__file__).parent / name).read_bytes())
    for path in article_paths(articles_dir):
        h.update(path.name.encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(index_dir: Path) -> Manifest:
    path = index_dir / "manifest.json"
    if not path.exists():
        raise IndexNotFound(f'no index at {index_dir}; run "kb index"')
    try:
        return Manifest(**json.loads(path.read_text()))
    except (ValueError, TypeError) as exc:
        raise CorruptIndex(f'index manifest at {path} is unreadable; run "kb index"') from exc


def _previous_vectors(index_dir: Path, model_id: str) -> dict[str, np.ndarray]:
    """Vectors of the current index keyed by chunk hash, so unchanged chunks are not re-embedded."""
    try:
        manifest = read_manifest(index_dir)
        if manifest.model_id != model_id:
            return {}
        keys = json.loads((index_dir / "chunk_keys.json").read_text())
        vectors = np.load(index_dir / "vectors.npy")
    except (OSError, ValueError, IndexNotFound, CorruptIndex):
        return {}
    if len(keys) != len(vectors):
        return {}
    return dict(zip(keys, vectors, strict=True))


def _up_to_date(index_dir: Path, digest: str, model_id: str) -> Manifest | None:
    try:
        current = read_manifest(index_dir)
    except (IndexNotFound, CorruptIndex):
        return None
    if (
        current.corpus_hash == digest
        and current.model_id == model_id
        and _files_ok(index_dir, current)
    ):
        return current
    return None


@contextmanager
def _build_lock(index_dir: Path):
    """One build at a time per index: a second `kb index` (or a server rebuilding a stale index)
    waits instead of deleting the first one's half-written version as an 'old version'."""
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(index_dir.parent / f".{index_dir.name}.lock", "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


def build_index(settings: Settings, embedder: Embedder | None = None) -> BuildReport:
    """Build (or confirm up to date) the index for settings.articles_dir at settings.index_dir."""
    start = time.perf_counter()
    index_dir = settings.index_dir
    model_id = embedder.model_id if embedder else embedder_model_id(settings.embedder)
    digest = corpus_hash(settings.articles_dir)
    current = _up_to_date(index_dir, digest, model_id)
    if current:
        return BuildReport(current, 0, 0, True, time.perf_counter() - start)
    with _build_lock(index_dir):
        # Another process may have built this very corpus while we waited for the lock (and the
        # articles may have changed meanwhile: hash them again).
        digest = corpus_hash(settings.articles_dir)
        current = _up_to_date(index_dir, digest, model_id)
        if current:
            return BuildReport(current, 0, 0, True, time.perf_counter() - start)
        return _build_locked(settings, embedder, model_id, digest, start)


def _build_locked(
    settings: Settings, embedder: Embedder | None, model_id: str, digest: str, start: float
) -> BuildReport:
    index_dir = settings.index_dir
    articles = load_articles(settings.articles_dir)
    chunks = chunk_corpus(articles)
    dense_ids = [i for i, c in enumerate(chunks) if c.dense]
    # The vectors shipped with the articles, then the current index's (fresher for local edits).
    previous = {
        **load_cache(settings.articles_dir, model_id),
        **_previous_vectors(index_dir, model_id),
    }
    keys = [chunks[i].key for i in dense_ids]
    missing = [n for n, k in enumerate(keys) if k not in previous]
    fresh = np.zeros((0, 0), np.float32)
    if missing:
        embedder = embedder or load_embedder(settings.embedder)
        fresh = embedder.encode_passages([chunks[dense_ids[n]].dense_text for n in missing])
    dim = fresh.shape[1] if missing else len(next(iter(previous.values())))
    vectors = np.zeros((len(keys), dim), np.float32)
    for i, key in enumerate(keys):
        if key in previous:
            vectors[i] = previous[key]
    if missing:
        vectors[missing] = fresh

    new_dir = index_dir.parent / f"{index_dir.name}.v-{digest[:12]}-{time.time_ns():x}"
    tmp_dir = new_dir.with_name(new_dir.name + ".tmp")
    tmp_dir.mkdir(parents=True, exist_ok=False)
    try:
        vector_index = VectorIndex.build(vectors, settings.ann_threshold)
        np.save(tmp_dir / "vectors.npy", vectors)
        vector_index.save(str(tmp_dir / "faiss.index"))
        (tmp_dir / "chunks.jsonl").write_text(
            "".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in chunks)
        )
        (tmp_dir / "chunk_keys.json").write_text(json.dumps(keys))
        (tmp_dir / "dense_ids.json").write_text(json.dumps(dense_ids))
        bm25 = BM25.from_texts([c.text for c in chunks])
        names = [
            "vectors.npy",
            "faiss.index",
            "chunks.jsonl",
            "chunk_keys.json",
            "dense_ids.json",
            *bm25.save(tmp_dir),
        ]
        manifest = Manifest(
            kb_version=__version__,
            format_version=FORMAT_VERSION,
            embedder=settings.embedder,
            model_id=model_id,
            dim=int(dim),
            corpus_hash=digest,
            n_articles=len(articles),
            n_chunks=len(chunks),
            vector_kind=vector_index.kind,
            created=time.time(),
            files={name: _sha256(tmp_dir / name) for name in names},
        )
        # The manifest is written last: a directory without one is never loaded.
        (tmp_dir / "manifest.json").write_text(json.dumps(manifest.to_dict(), indent=2))
        _fsync_dir(tmp_dir)
        tmp_dir.rename(new_dir)
        _swap_symlink(index_dir, new_dir)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    _remove_old_versions(index_dir, keep=new_dir)
    return BuildReport(
        manifest, len(missing), len(keys) - len(missing), False, time.perf_counter() - start
    )


def save_embeddings(settings: Settings) -> tuple[Path, int]:
    """Ship the current index's chunk vectors with the articles (see kb.embedcache)."""
    manifest = check_fresh(settings)
    keys = json.loads((settings.index_dir / "chunk_keys.json").read_text())
    vectors = np.load(settings.index_dir / "vectors.npy")
    return save_cache(settings.articles_dir, manifest.model_id, keys, vectors), len(keys)


def _fsync_dir(directory: Path) -> None:
    for path in directory.iterdir():
        with path.open("rb") as fh:
            os.fsync(fh.fileno())


def _swap_symlink(link: Path, target: Path) -> None:
    """Point `link` at `target` atomically (rename of a temporary symlink over the old one)."""
    if link.exists() and not link.is_symlink():
        # An index directory from before symlinks (or copied with cp -rL): move it aside first.
        aside = link.with_name(link.name + f".v-legacy-{int(time.time())}")
        link.rename(aside)
    tmp_link = link.with_name(f".{link.name}.link-{os.getpid()}")
    if tmp_link.is_symlink() or tmp_link.exists():
        tmp_link.unlink()
    tmp_link.symlink_to(target.name)
    os.replace(tmp_link, link)


def _remove_old_versions(link: Path, keep: Path) -> None:
    for sibling in link.parent.glob(f"{link.name}.v-*"):
        if sibling.resolve() != keep.resolve():
            shutil.rmtree(sibling, ignore_errors=True)


def _files_ok(index_dir: Path, manifest: Manifest) -> bool:
    """Every file present with the checksum its manifest recorded (a damaged index is rebuilt)."""
    try:
        return all(_sha256(index_dir / name) == digest for name, digest in manifest.files.items())
    except OSError:
        return False


def check_fresh(settings: Settings) -> Manifest:
    """The manifest if the index matches the articles and the embedder; IndexStale otherwise."""
    manifest = read_manifest(settings.index_dir)
    expected_model = embedder_model_id(settings.embedder)
    if manifest.format_version != FORMAT_VERSION:
        raise IndexStale(f'index at {settings.index_dir} has an old format; run "kb index"')
    if manifest.model_id != expected_model:
        raise IndexStale(
            f"index at {settings.index_dir} was built with {manifest.model_id}, "
            f'not {expected_model}; run "kb index"'
        )
    if manifest.corpus_hash != corpus_hash(settings.articles_dir):
        raise IndexStale(
            "the articles or kb's indexing code changed since the index was built; "
            'run "kb index"'
        )
    return manifest


def load_index(settings: Settings, verify: bool = True) -> LoadedIndex:
    """Load a fresh index; raises IndexNotFound / IndexStale / CorruptIndex naming the command."""
    manifest = check_fresh(settings)
    directory = settings.index_dir
    try:
        if verify:
            for name, digest in manifest.files.items():
                if _sha256(directory / name) != digest:
                    raise CorruptIndex(
                        f'index file {directory / name} is corrupt; run "kb index" to rebuild it'
                    )
        chunks = [
            Chunk(**json.loads(line))
            for line in (directory / "chunks.jsonl").read_text().splitlines()
            if line.strip()
        ]
        vectors = VectorIndex.load(str(directory / "faiss.index"))
        bm25 = BM25.load(directory)
        dense_ids = json.loads((directory / "dense_ids.json").read_text())
    except CorruptIndex:
        raise
    except (OSError, ValueError, TypeError, RuntimeError, KeyError) as exc:
        raise CorruptIndex(
            f'index at {directory} is unreadable; run "kb index" to rebuild it'
        ) from exc
    if (
        len(chunks) != manifest.n_chunks
        or vectors.index.ntotal != len(dense_ids)
        or bm25.n_docs != len(chunks)
        or any(not 0 <= i < len(chunks) for i in dense_ids)
    ):
        raise CorruptIndex(f'index at {directory} is inconsistent; run "kb index" to rebuild it')
    articles = {a.id: a for a in load_articles(settings.articles_dir)}
    return LoadedIndex(manifest, articles, chunks, vectors, bm25, directory, dense_ids)


def open_index(settings: Settings, rebuild: bool = True) -> LoadedIndex:
    """Load the index, rebuilding it first when it is missing, stale or corrupt (if allowed)."""
    try:
        return load_index(settings)
    except (IndexNotFound, IndexStale, CorruptIndex):
        if not rebuild:
            raise
    build_index(settings)
    return load_index(settings)
