import json
from dataclasses import replace

import numpy as np
import pytest

from kb.embedding import load_embedder
from kb.errors import CorruptIndex, IndexNotFound, IndexStale
from kb.index import build_index, load_index, open_index


def test_build_load_round_trip(tiny_settings):
    report = build_index(tiny_settings)
    assert not report.unchanged and report.embedded == len(load_index(tiny_settings).dense_ids)
    loaded = load_index(tiny_settings)
    assert set(loaded.articles) == {
        "fixture-fp16-overflow",
        "fixture-dpo-stuck",
        "missing-pad-token-llama3-reward-model",
    }
    assert loaded.vectors.index.ntotal == len(loaded.dense_ids) <= len(loaded.chunks)
    assert loaded.bm25.n_docs == len(loaded.chunks)
    manifest = json.loads((tiny_settings.index_dir / "manifest.json").read_text())
    assert manifest["dim"] == 384 and manifest["model_id"].startswith("intfloat/multilingual-e5")
    vectors = np.load(tiny_settings.index_dir / "vectors.npy")
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_unchanged_corpus_reembeds_nothing(tiny_settings):
    build_index(tiny_settings)
    again = build_index(tiny_settings)
    assert again.unchanged and again.embedded == 0


def test_edit_reembeds_only_changed_chunks(tiny_settings):
    first = build_index(tiny_settings)
    path = tiny_settings.articles_dir / "fixture-dpo-stuck.md"
    path.write_text(path.read_text().replace("Policy equals reference.", "Policy == reference."))
    second = build_index(tiny_settings)
    assert not second.unchanged
    assert 0 < second.embedded < first.embedded
    assert second.reused == first.embedded - second.embedded


def test_missing_index_names_the_command(tiny_settings):
    with pytest.raises(IndexNotFound, match='run "kb index"'):
        load_index(tiny_settings)


def test_stale_index_detected_and_rebuilt(tiny_settings):
    build_index(tiny_settings)
    (tiny_settings.articles_dir / "fixture-dpo-stuck.md").unlink()
    with pytest.raises(IndexStale, match="kb index"):
        load_index(tiny_settings)
    assert "fixture-dpo-stuck" not in open_index(tiny_settings).articles


def test_index_built_by_other_tokenizer_code_is_stale(tiny_settings, monkeypatch):
    # A BM25 index holds the terms the tokenizer of its day made: code that tokenizes
    # differently (simulated by hashing one module fewer) must rebuild, not reuse it.
    build_index(tiny_settings)
    import kb.index

    monkeypatch.setattr(kb.index, "_INDEX_CODE", ("articles.py", "chunking.py", "bm25.py"))
    with pytest.raises(IndexStale, match="kb index"):
        load_index(tiny_settings)
    assert not build_index(tiny_settings).unchanged


def test_other_embedder_is_stale(tiny_settings):
    build_index(tiny_settings)
    with pytest.raises(IndexStale, match="built with"):
        load_index(replace(tiny_settings, embedder="minilm"))


def test_corrupt_file_gives_clear_error_and_index_repairs(tiny_settings):
    build_index(tiny_settings)
    target = tiny_settings.index_dir / "faiss.index"
    target.write_bytes(target.read_bytes()[:100])
    with pytest.raises(CorruptIndex, match="kb index"):
        load_index(tiny_settings)
    build_index(tiny_settings)  # the manifest no longer matches its files: rebuilt
    assert load_index(tiny_settings).vectors.index.ntotal > 0


def test_leftover_partial_build_is_ignored(tiny_settings):
    build_index(tiny_settings)
    junk = tiny_settings.index_dir.parent / "index.v-deadbeef.tmp"
    junk.mkdir()
    (junk / "vectors.npy").write_bytes(b"half written")
    assert load_index(tiny_settings).manifest.n_articles == 3


def test_dense_search_matches_numpy_oracle(tiny_settings):
    build_index(tiny_settings)
    loaded = load_index(tiny_settings)
    emb = load_embedder("e5")
    vectors = np.load(tiny_settings.index_dir / "vectors.npy")
    q = emb.encode_queries(["loss is nan in fp16"])
    scores, ids = loaded.vectors.search(q, 5)
    oracle = np.argsort(-(vectors @ q[0]))[:5]
    assert list(ids[0]) == list(oracle)
    assert np.allclose(scores[0], (vectors @ q[0])[oracle], atol=1e-5)


def test_shipped_embeddings_let_a_fresh_checkout_embed_nothing(tiny_settings, tmp_path):
    from kb.index import save_embeddings

    build_index(tiny_settings)
    path, n = save_embeddings(tiny_settings)
    assert path.parent.name == ".embeddings" and path.parent.parent == tiny_settings.articles_dir
    fresh = replace(tiny_settings, index_dir=tmp_path / "fresh" / "index")
    report = build_index(fresh)
    assert report.embedded == 0 and report.reused == n
    assert np.array_equal(
        np.load(fresh.index_dir / "vectors.npy"), np.load(tiny_settings.index_dir / "vectors.npy")
    )
    # An edited chunk is not in the cache: only it is embedded again.
    article = tiny_settings.articles_dir / "fixture-dpo-stuck.md"
    article.write_text(article.read_text().replace("Policy equals reference.", "Same policy."))
    edited = build_index(replace(fresh, index_dir=tmp_path / "edited" / "index"))
    assert 1 <= edited.embedded < n


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other-model"])
def test_damaged_or_foreign_embedding_cache_is_ignored(tiny_settings, tmp_path, damage):
    from kb.embedcache import cache_path, save_cache
    from kb.index import save_embeddings

    build_index(tiny_settings)
    path, n = save_embeddings(tiny_settings)
    if damage == "garbage":
        path.write_bytes(b"\x00not a zip" * 10)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    else:
        model_id = json.loads((tiny_settings.index_dir / "manifest.json").read_text())["model_id"]
        keys = json.loads((tiny_settings.index_dir / "chunk_keys.json").read_text())
        save_cache(tiny_settings.articles_dir, "other/model", keys, np.ones((len(keys), 384)))
        cache_path(tiny_settings.articles_dir, "other/model").rename(
            cache_path(tiny_settings.articles_dir, model_id)
        )
    report = build_index(replace(tiny_settings, index_dir=tmp_path / "fresh" / "index"))
    assert report.embedded == n and report.reused == 0


def test_shipped_embedding_cache_covers_the_bundled_corpus():
    """A fresh checkout indexes in seconds only if the cache is current: after adding or editing
    articles run `kb index --save-embeddings` and commit articles/.embeddings/."""
    from pathlib import Path

    from kb.articles import load_articles
    from kb.chunking import chunk_corpus
    from kb.embedcache import load_cache
    from kb.embedding import embedder_model_id

    articles_dir = Path(__file__).resolve().parent.parent / "articles"
    cached = load_cache(articles_dir, embedder_model_id("e5"))
    keys = [c.key for c in chunk_corpus(load_articles(articles_dir)) if c.dense]
    missing = [k for k in keys if k not in cached]
    assert not missing, (
        f"{len(missing)} chunks not in the shipped cache: kb index --save-embeddings"
    )


def test_concurrent_builds_do_not_destroy_each_other(tiny_settings):
    """Several processes indexing at once (a server rebuilding, a user running `kb index`) each
    finish, and the index they leave loads: none deletes another's half-written version."""
    from concurrent.futures import ThreadPoolExecutor

    embedder = load_embedder(tiny_settings.embedder)
    build_index(tiny_settings, embedder)
    path = tiny_settings.articles_dir / "fixture-dpo-stuck.md"
    path.write_text(path.read_text().replace("Policy equals reference.", "策略与参考模型相同。"))
    with ThreadPoolExecutor(3) as pool:
        reports = list(pool.map(lambda _: build_index(tiny_settings, embedder), range(3)))
    assert sum(not r.unchanged for r in reports) == 1  # the others found it built
    loaded = load_index(tiny_settings)
    sections = loaded.articles["fixture-dpo-stuck"].sections.values()
    assert any("策略与参考模型相同" in text for text in sections)
    versions = list(tiny_settings.index_dir.parent.glob("index.v-*"))
    assert versions == [tiny_settings.index_dir.resolve()]
