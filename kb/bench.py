"""`kb bench`: numbers for index build, retrieval at scale (ANN vs exact), cold/warm ask, the LLM
and the HTTP API. Synthetic vectors are clustered like real embeddings (uniform random vectors
make every ANN index look broken)."""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kb.settings import Settings
from kb.vectors import VectorIndex

DIM = 384
QUERIES = 200


def clustered_vectors(
    n: int, dim: int = DIM, clusters: int | None = None, seed: int = 0, latent_dim: int = 24
):
    """Unit vectors shaped like sentence embeddings: topic clusters on a low-dimensional manifold.

    Real embeddings have a low intrinsic dimension, so neighbourhoods are meaningful; isotropic
    high-dimensional noise (or uniform random vectors) makes all distances equal and every ANN
    index look broken. Points are clustered in a `latent_dim` space, then mapped into `dim`.
    """
    rng = np.random.default_rng(seed)
    clusters = clusters or max(16, int(np.sqrt(n)))
    centres = rng.standard_normal((clusters, latent_dim)).astype(np.float32) * 2.0
    mixing = rng.standard_normal((latent_dim, dim)).astype(np.float32) / np.sqrt(latent_dim)
    out = np.empty((n, dim), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        m = min(step, n - start)
        topic = rng.integers(0, clusters, m)
        latent = centres[topic] + rng.standard_normal((m, latent_dim)).astype(np.float32)
        block = latent @ mixing
        block += rng.standard_normal((m, dim)).astype(np.float32) * 0.02
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def _percentiles(samples_ms: list[float]) -> tuple[float, float]:
    s = sorted(samples_ms)
    return round(statistics.median(s), 3), round(s[int(0.95 * (len(s) - 1))], 3)


def bench_ann(n: int, ann_threshold: int = 20_000) -> dict:
    import faiss

    faiss.omp_set_num_threads(1)  # one query at a time, like a server request
    base = clustered_vectors(n, seed=n)
    queries = clustered_vectors(QUERIES, seed=n + 1)
    t0 = time.perf_counter()
    ann = VectorIndex.build(base, ann_threshold=min(ann_threshold, n - 1))
    build_s = time.perf_counter() - t0
    exact = faiss.IndexFlatIP(DIM)
    exact.add(base)
    ann_ms, exact_ms, recalls = [], [], []
    for q in queries:
        q = q[None, :]
        t = time.perf_counter()
        _, got = ann.search(q, 10)
        ann_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        _, want = exact.search(q, 10)
        exact_ms.append((time.perf_counter() - t) * 1000)
        recalls.append(len(set(got[0]) & set(want[0])) / 10)
    a50, a95 = _percentiles(ann_ms)
    e50, e95 = _percentiles(exact_ms)
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    return {
        "kind": ann.kind,
        "build_s": round(build_s, 2),
        "ann_p50_ms": a50,
        "ann_p95_ms": a95,
        "exact_p50_ms": e50,
        "exact_p95_ms": e95,
        "recall@10": round(float(np.mean(recalls)), 4),
    }


def bench_bm25(n_docs: int) -> dict:
    from kb.bm25 import BM25

    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(50_000)]
    # Zipf-like term frequencies, ~40 terms per chunk.
    ranks = np.minimum(rng.zipf(1.3, size=(n_docs, 40)), len(vocab)) - 1
    docs = [[vocab[i] for i in row] for row in ranks]
    t0 = time.perf_counter()
    bm = BM25.build(docs)
    build_s = time.perf_counter() - t0
    times = []
    for row in rng.integers(0, 2000, size=(QUERIES, 6)):
        t = time.perf_counter()
        bm.scores([vocab[i] for i in row])
        times.append((time.perf_counter() - t) * 1000)
    p50, p95 = _percentiles(times)
    return {"build_s": round(build_s, 2), "p50_ms": p50, "p95_ms": p95}


def bench_corpus(settings: Settings, from_scratch: bool = True) -> dict:
    """Index build of the shipped corpus (a fresh checkout, and with nothing cached, unless quick),
    then warm search latencies."""
    import tempfile

    from assistant.service import Assistant
    from kb.index import build_index

    with tempfile.TemporaryDirectory() as tmp:
        # --quick reuses the current index: a build from scratch alone takes over a minute here.
        index_dir = Path(tmp) / "index" if from_scratch else settings.index_dir
        fresh = replace(settings, index_dir=index_dir, llm_backend="none")
        t0 = time.perf_counter()
        report = build_index(fresh)  # a fresh checkout: reuses the shipped embeddings
        build_s = time.perf_counter() - t0
        no_cache_s = _build_without_cache(settings, Path(tmp)) if from_scratch else None
        assistant = Assistant(fresh)
        retriever = assistant.retriever
        queries = [
            "loss is 0 with qwen2.5-7b",
            "Cannot handle batch sizes > 1 if no padding token is defined",
            "DPO loss 一直 0.693",
            "CUDA out of memory",
            "显存不足 训练 7b",
            "FlashAttention only support fp16 and bf16 data type",
        ]
        for q in queries:  # warm-up
            assistant.search(q)
        hybrid, dense, lexical, ask = [], [], [], []
        for _ in range(10):
            for q in queries:
                t = time.perf_counter()
                assistant.search(q)
                hybrid.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                retriever.dense_articles(q)
                dense.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                retriever.bm25_articles(q)
                lexical.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                assistant.ask(q, use_llm=False)
                ask.append((time.perf_counter() - t) * 1000)
        return {
            "index_build_s": round(build_s, 2) if from_scratch else None,
            "index_build_embedded": report.embedded,
            "index_build_no_cache_s": no_cache_s,
            "n_chunks": report.manifest.n_chunks,
            "search_warm_ms": dict(zip(("p50", "p95"), _percentiles(hybrid), strict=True)),
            "dense_only_ms": dict(zip(("p50", "p95"), _percentiles(dense), strict=True)),
            "bm25_only_ms": dict(zip(("p50", "p95"), _percentiles(lexical), strict=True)),
            "ask_warm_ms": dict(zip(("p50", "p95"), _percentiles(ask), strict=True)),
        }


def _build_without_cache(settings: Settings, tmp: Path) -> float:
    """Index build with every chunk embedded (an articles copy without the shipped cache)."""
    import shutil

    from kb.articles import article_paths
    from kb.index import build_index

    articles = tmp / "articles-no-cache"
    articles.mkdir()
    for path in article_paths(settings.articles_dir):
        shutil.copy2(path, articles / path.name)
    bare = replace(settings, articles_dir=articles, index_dir=tmp / "index-no-cache")
    t0 = time.perf_counter()
    build_index(bare)
    return round(time.perf_counter() - t0, 2)


def bench_ask_cold(settings: Settings) -> float:
    """Process start to answer for `kb ask --no-llm` (index already built)."""
    from kb.index import build_index

    build_index(settings)
    env = dict(
        os.environ, KB_ARTICLES_DIR=str(settings.articles_dir), KB_INDEX_DIR=str(settings.index_dir)
    )
    kb_bin = str(Path(sys.executable).with_name("kb"))
    t0 = time.perf_counter()
    subprocess.run(
        [kb_bin, "ask", "loss is 0 with qwen2.5-7b", "--no-llm", "--json"],
        check=True,
        capture_output=True,
        env=env,
    )
    return round(time.perf_counter() - t0, 2)


def bench_llm(settings: Settings) -> dict:
    from assistant.generator import load_generator

    t0 = time.perf_counter()
    generator = load_generator(replace(settings, llm_backend="auto"))
    load_s = time.perf_counter() - t0
    messages = [
        {"role": "system", "content": "You are kb."},
        {
            "role": "user",
            "content": "Known case: fp16 overflow gives nan loss.\nCause: "
            "activations exceed the fp16 range.\nFix: set bf16=True and fp16=False.\n\n"
            "Write two short sentences for this user.",
        },
    ]
    results = []
    for _ in range(2):  # the second run is warm
        t = time.perf_counter()
        first, pieces = None, 0
        for _piece in generator.stream(messages, "In your run, ", 48, [], time.monotonic() + 60):
            first = first or time.perf_counter() - t
            pieces += 1
        total = time.perf_counter() - t
        results.append((first or total, pieces, total))
    first, pieces, total = results[-1]
    return {
        "model": generator.model_id,
        "load_s": round(load_s, 2),
        "first_token_s": round(first, 3),
        "tokens_per_s": round(pieces / max(total - first, 1e-6), 1),
    }


def bench_api(settings: Settings, seconds: float = 5.0, clients: int = 8) -> dict:
    import httpx
    import uvicorn

    from assistant.api import create_api
    from assistant.feedback import FeedbackStore
    from assistant.service import Assistant

    assistant = Assistant(replace(settings, llm_backend="none"))
    assistant.retriever  # noqa: B018 - load before timing
    app = create_api(assistant, FeedbackStore(settings.feedback_db.with_suffix(".bench")))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    out = {}
    for name, call in {
        "search": lambda c: c.get(f"{base}/api/search", params={"q": "fp16 loss nan"}),
        "ask_no_llm": lambda c: c.post(
            f"{base}/api/ask", json={"query": "loss 一直是 0", "no_llm": True}
        ),
    }.items():
        counts, errors = [0] * clients, [0] * clients
        deadline = time.monotonic() + seconds

        def worker(i: int, call=call, deadline=deadline, counts=counts, errors=errors) -> None:
            with httpx.Client(timeout=30) as client:
                while time.monotonic() < deadline:
                    if call(client).status_code == 200:
                        counts[i] += 1
                    else:
                        errors[i] += 1

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out[name] = {"rps": round(sum(counts) / seconds, 1), "errors": sum(errors)}
    server.should_exit = True
    thread.join(timeout=5)
    return out


def metric_log(target: int) -> str:
    """Only HF Trainer metric dicts, one per logging step: the analyzer's hardest 20 MB."""
    rnd = random.Random(0)
    parts, size, step, loss = [], 0, 0, 2.0
    while size < target:
        step += 1
        loss = max(0.3, loss * 0.999 + rnd.uniform(-0.02, 0.02))
        line = (
            f"{{'loss': {loss:.4f}, 'grad_norm': {rnd.uniform(0.3, 2):.4f}, "
            f"'learning_rate': {2e-5 * (1 - step / 400_000):.3g}, 'epoch': {step / 20_000:.2f}}}\n"
        )
        parts.append(line)
        size += len(line)
    return "".join(parts)


def mixed_log(target: int) -> str:
    """A long run as a terminal shows it: tqdm redraws, Trainer dicts, DeepSpeed and DDP lines,
    then a crash (the same log as tests/test_logs.py's big_log)."""
    rnd = random.Random(0)
    parts = [
        "torchrun --nproc_per_node 8 train.py --model_name_or_path Qwen/Qwen2.5-7B --bf16 True\n"
    ]
    size, step, loss = 0, 0, 2.0
    while size < target:
        step += 1
        chunk = [
            "".join(
                f"\r {step // 2000:3d}%|███▌      | {step}/200000 [1:02:{s:02d}<9:00:00, 1.91it/s]"
                for s in range(3)
            )
        ]
        if step % 10 == 0:
            loss = max(0.3, loss * 0.999 + rnd.uniform(-0.02, 0.02))
            chunk.append(
                f"{{'loss': {loss:.4f}, 'grad_norm': {rnd.uniform(0.3, 2):.4f}, "
                f"'learning_rate': 2e-05, 'epoch': {step / 20000:.2f}}}"
            )
        if step % 7 == 0:
            chunk.append(
                "[2024-06-01 10:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] "
                f"step={step}, skipped=0, lr=[2e-05], mom=[(0.9, 0.999)]"
            )
        if step % 13 == 0:
            chunk.append(
                f"[rank{step % 8}]:[W reducer.cpp:1360] Warning: find_unused_parameters=True "
                "was specified in DDP constructor, but did not find any unused parameters"
            )
        piece = "\n".join(chunk) + "\n"
        parts.append(piece)
        size += len(piece)
    parts.append(
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "    main()\nRuntimeError: NCCL communicator was aborted\n"
    )
    return "".join(parts)


def bench_analyzer(size: int = 20_000_000, repeats: int = 3) -> dict:
    """Seconds for analyze_bytes() on a mixed and a metric-only log of `size` bytes (median)."""
    from assistant.logs import analyze_bytes

    out = {}
    for name, make in (("mixed", mixed_log), ("metric_only", metric_log)):
        data = make(size).encode("utf-8")
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            analyze_bytes(data)
            times.append(time.perf_counter() - t0)
        out[f"{name}_s"] = round(statistics.median(times), 2)
        out[f"{name}_lines"] = data.count(b"\n")
    out["mb"] = round(size / 1e6)
    return out


def run(settings: Settings, quick: bool, log=lambda msg: None) -> dict:
    sizes = [10_000] if quick else [10_000, 100_000, 1_000_000]
    result: dict = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "date": time.strftime("%Y-%m-%d"),
        "retrieval": {},
        "bm25": {},
    }
    for n in sizes:
        log(f"ANN vs exact at {n} vectors")
        result["retrieval"][str(n)] = bench_ann(n)
        log(f"BM25 at {n} chunks")
        result["bm25"][str(n)] = bench_bm25(n)
    log("shipped corpus: build and warm search")
    corpus = bench_corpus(settings, from_scratch=not quick)
    result.update(corpus)
    log("cold kb ask --no-llm")
    result["ask_cold_s"] = bench_ask_cold(settings)
    log("local LLM")
    try:
        result["llm"] = bench_llm(settings)
        result["first_token_s"] = result["llm"]["first_token_s"]
        result["tokens_per_s"] = result["llm"]["tokens_per_s"]
    except Exception as exc:  # noqa: BLE001 - a missing model is reported, not fatal, in a bench
        result["llm"] = {"error": str(exc)}
    log("20 MB logs through the analyzer")
    result["analyzer_20mb_s"] = bench_analyzer(repeats=1 if quick else 3)
    log("HTTP API under concurrency")
    result["api_rps"] = bench_api(settings, seconds=3.0 if quick else 10.0)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def dumps(result: dict) -> str:
    return json.dumps(result, indent=2)
