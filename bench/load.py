"""Load test for the HTTP API: N concurrent clients against a real `kb serve` on loopback.

Asks (no LLM), searches and feedback posts for a fixed time while the server's RSS is sampled
every second; then checks for zero errors, no lost feedback rows and bounded memory.

    .venv/bin/python bench/load.py                       # 50 clients, 60 s, the shipped index
    .venv/bin/python bench/load.py --clients 20 --seconds 10 --articles DIR --index DIR

Prints one JSON summary on stdout (progress on stderr); exits 1 when any check fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click
import httpx

# What a report looks like: short English and Chinese errors, questions and small log excerpts.
QUERIES = [
    "loss is 0 with qwen2.5-7b",
    "CUDA out of memory",
    "FlashAttention only support fp16 and bf16 data type",
    "Cannot handle batch sizes > 1 if no padding token is defined",
    "DPO loss stuck at 0.693 and rewards/chosen is 0",
    "grad_norm is nan after a few steps with fp16",
    "why does my reward model accuracy stay at 0.5?",
    "RuntimeError: DataLoader worker (pid 123) is killed by signal: Bus error.",
    "ValueError: Cannot set a non-string value as the PAD token",
    "NCCL timeout in multi-node training",
    "DPO 训练时 loss 一直是 0.6931，rewards/chosen 和 rewards/rejected 都是 0",
    "显存不足 训练 7b",
    "多卡训练 RuntimeError: DataLoader worker is killed by signal: Bus error.",
    "loss 一直是 0 是什么原因",
    "训练到一半 loss 变成 nan",
    "LoRA 微调后模型输出重复",
]
LOGS = [
    "{'loss': 1.2345, 'grad_norm': 3.1, 'learning_rate': 2e-05, 'epoch': 0.1}\n"
    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.2}\n"
    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.3}\n",
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    trainer.train()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
    " capacity of 23.65 GiB of which 1.02 GiB is free.\n",
    "[INFO|trainer.py:2128] >> ***** Running training *****\n"
    "{'loss': 0.6931, 'rewards/chosen': 0.0, 'rewards/rejected': 0.0, 'rewards/accuracies': 0.0,"
    " 'epoch': 0.05}\n"
    "{'loss': 0.6931, 'rewards/chosen': 0.0, 'rewards/rejected': 0.0, 'rewards/accuracies': 0.0,"
    " 'epoch': 0.1}\n",
    "[2024-05-01 10:00:00] 第 10 步 loss=2.31 lr=1e-4\n"
    "[2024-05-01 10:01:00] 第 20 步 loss=nan lr=1e-4\n"
    "[2024-05-01 10:02:00] 第 30 步 loss=nan lr=1e-4\n",
    "[rank1]: RuntimeError: NCCL communicator was aborted on rank 1.\n"
    "[rank1]:[E ProcessGroupNCCL.cpp:563] Watchdog caught collective operation timeout:"
    " WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600042 milliseconds\n",
]
# How often each route is called: mostly reads, with a steady trickle of feedback writes.
MIX = (("ask", 0.4), ("search", 0.4), ("feedback", 0.2))


@dataclass
class Stats:
    """What the clients saw, gathered in one event loop (no locks needed)."""

    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)  # "route: 500" / "route: ReadTimeout"
    error_samples: list[str] = field(default_factory=list)
    feedback_ids: list[int] = field(default_factory=list)

    def error(self, route: str, what: str, detail: str) -> None:
        key = f"{route}: {what}"
        self.errors[key] = self.errors.get(key, 0) + 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"{key}: {detail[:200]}")


def rss_mb(pid: int) -> float:
    """Resident memory of one process in MB (psutil when installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no VmRSS for pid {pid}") from None
    try:
        return psutil.Process(pid).memory_info().rss / (1024 * 1024)
    except psutil.NoSuchProcess as exc:
        raise ProcessLookupError(f"no process {pid}") from exc


class RssSampler:
    """Samples a process's RSS once a second on a thread: (seconds since start, MB) pairs."""

    def __init__(self, pid: int, every_s: float = 1.0):
        self.pid, self.every_s = pid, every_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.monotonic()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic() - self._t0, rss_mb(self.pid)))
            except (OSError, RuntimeError):  # the process is gone: the caller reports that
                return
            self._stop.wait(self.every_s)

    def __enter__(self) -> RssSampler:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


class ServerFailed(RuntimeError):
    """`kb serve` exited or never answered /healthz; the message carries its log tail."""


class Server:
    """`kb serve --no-llm` in a subprocess on a free loopback port, with its own feedback DB."""

    def __init__(self, workdir: Path, articles_dir: Path | None, index_dir: Path | None):
        self.feedback_db = workdir / "feedback.sqlite3"
        self.log_path = workdir / "server.log"
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        env = dict(
            os.environ,
            KB_FEEDBACK_DB=str(self.feedback_db),
            KB_LLM_BACKEND="none",
            KB_API_TOKEN=self.token,
            KB_CORS_ORIGINS="",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
        )
        if articles_dir is not None:
            env["KB_ARTICLES_DIR"] = str(articles_dir)
        if index_dir is not None:
            env["KB_INDEX_DIR"] = str(index_dir)
        cmd = [sys.executable, "-c", "from kb.cli import main; main()", "serve", "--no-llm"]
        cmd += ["--host", "127.0.0.1", "--port", str(self.port)]
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def wait_ready(self, timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerFailed(
                    f"kb serve exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise ServerFailed(
            f"kb serve not ready after {timeout_s:.0f} s (a missing index is built at start-up:"
            f' run "kb index" first):\n{self.log_tail()}'
        )

    def stop(self, timeout_s: float = 20.0) -> int:
        """Graceful shutdown (SIGINT, as Ctrl-C); killed if it hangs. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def log_tail(self, chars: int = 3000) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def log_errors(self) -> list[str]:
        """Lines where the server logged a failure (uvicorn logs handler exceptions at ERROR)."""
        text = self.log_path.read_text(errors="replace")
        return [ln for ln in text.splitlines() if "Traceback" in ln or "ERROR" in ln]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(rng: random.Random) -> tuple[str, str, str, dict]:
    """(route, method, path, httpx kwargs) for one randomly chosen call."""
    route = rng.choices([r for r, _ in MIX], weights=[w for _, w in MIX])[0]
    text = rng.choice(QUERIES) if rng.random() < 0.7 else rng.choice(LOGS)
    if route == "search":
        return route, "GET", "/api/search", {"params": {"q": text, "k": rng.randint(1, 10)}}
    if route == "ask":
        body = {"query": text, "k": rng.randint(1, 8), "no_llm": True}
        return route, "POST", "/api/ask", {"json": body}
    body = {"query": text, "article_id": "load-test", "failure_mode": "load-test"}
    if rng.random() < 0.5:
        body["rating"] = rng.choice(["helpful", "not_helpful"])
    else:
        body["fixed"] = rng.choice(["yes", "no", "partly"])
    if rng.random() < 0.3:
        body["comment"] = rng.choice(["worked, thanks", "没用", "the fix was bf16=True"])
    return route, "POST", "/api/feedback", {"json": body}


async def _client(
    i: int,
    base_url: str,
    headers: dict,
    deadline: float,
    stats: Stats,
    seed: int,
    max_requests: int | None = None,
) -> None:
    rng = random.Random(seed * 1000 + i)
    sent = 0
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=120) as client:
        while time.monotonic() < deadline and (max_requests is None or sent < max_requests):
            sent += 1
            route, method, path, kwargs = _request(rng)
            t = time.perf_counter()
            try:
                res = await client.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                stats.error(route, type(exc).__name__, str(exc))
                continue
            ms = (time.perf_counter() - t) * 1000
            if not 200 <= res.status_code < 300:
                stats.error(route, str(res.status_code), res.text)
                continue
            stats.latencies_ms.setdefault(route, []).append(ms)
            if route == "feedback":
                stats.feedback_ids.append(int(res.json()["id"]))


async def _drive(
    server: Server, clients: int, seconds: float, seed: int, max_requests: int | None = None
) -> Stats:
    stats = Stats()
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        *(
            _client(i, server.base_url, server.headers, deadline, stats, seed, max_requests)
            for i in range(clients)
        )
    )
    return stats


def _feedback_ids(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM feedback ORDER BY id")]


def _percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1)))], 1) if s else 0.0


def _slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    if len(samples) < 2:
        return 0.0
    ts, ms = [t for t, _ in samples], [m for _, m in samples]
    t_mean, m_mean = statistics.fmean(ts), statistics.fmean(ms)
    var = sum((t - t_mean) ** 2 for t in ts)
    cov = sum((t - t_mean) * (m - m_mean) for t, m in zip(ts, ms, strict=True))
    return round(60 * cov / var, 1) if var else 0.0


def memory_verdict(
    samples: list[tuple[float, float]], growth_limit_mb: float, climb_margin_mb: float
) -> tuple[dict, list[str]]:
    """RSS figures and the failed memory checks (an empty list when memory stayed bounded).

    Bounded means: the peak stays under start + `growth_limit_mb`, and the last third of the run
    does not keep climbing: a leak sets new highs at the end, so it fails when the last third
    both slopes upwards and ends over the first two thirds' peak by more than `climb_margin_mb`.
    "start" is read after a concurrent warm-up. glibc still grows one malloc arena per busy
    worker thread for a minute or two (flat with MALLOC_ARENA_MAX=2), so a slow leak needs a
    longer run (--seconds 180) to tell apart from that.
    """
    rss = [m for _, m in samples]
    start, peak, end = rss[0], max(rss), rss[-1]
    cut = len(samples) - max(2, len(samples) // 3)
    earlier_peak = max(rss[:cut]) if cut > 0 else start
    slope = _slope_mb_per_min(samples[cut:])
    figures = {
        "rss_start_mb": round(start, 1),
        "rss_peak_mb": round(peak, 1),
        "rss_end_mb": round(end, 1),
        "rss_limit_mb": round(start + growth_limit_mb, 1),
        "rss_last_third_slope_mb_per_min": slope,
        "rss_samples": len(samples),
        # At most ~20 points of the curve, so a reader can see a plateau or a climb.
        "rss_trace_mb": [round(m) for m in rss[:: max(1, len(rss) // 20)]],
    }
    failed = []
    if peak > start + growth_limit_mb:
        failed.append(f"RSS peak {peak:.0f} MB over start {start:.0f} + {growth_limit_mb:.0f} MB")
    if slope > 0 and end > earlier_peak + climb_margin_mb:
        failed.append(
            f"RSS still climbing in the last third ({slope} MB/min; ends at {end:.0f} MB, "
            f"{end - earlier_peak:.0f} MB over the earlier peak)"
        )
    return figures, failed


def run_load(
    clients: int = 50,
    seconds: float = 60.0,
    articles_dir: Path | None = None,
    index_dir: Path | None = None,
    growth_limit_mb: float = 300.0,
    climb_margin_mb: float = 16.0,
    seed: int = 0,
    log: Callable[[str], None] = lambda msg: None,
) -> dict:
    """Start a server, drive it, stop it and return the summary (`verdict` is "pass"/"fail")."""
    with tempfile.TemporaryDirectory(prefix="kb-load-") as tmp:
        server = Server(Path(tmp), articles_dir, index_dir)
        try:
            log(f"starting kb serve on {server.base_url}")
            t_start = time.monotonic()
            server.wait_ready()
            start_s = time.monotonic() - t_start
            rss_boot = rss_mb(server.proc.pid)
            # Warm-up: one request per client, all at once, fills the server's thread pool (and
            # each thread's allocator arena) so that start-up growth is not read as a leak.
            log(f"warm-up: {clients} concurrent requests")
            t_warm = time.monotonic()
            warm = asyncio.run(_drive(server, clients, 300.0, seed + 1, max_requests=1))
            warm_s = time.monotonic() - t_warm
            log(f"{clients} clients for {seconds:g} s")
            with RssSampler(server.proc.pid) as sampler:
                t0 = time.monotonic()
                stats = asyncio.run(_drive(server, clients, seconds, seed))
                elapsed = time.monotonic() - t0
                time.sleep(1.0)  # one more sample after the last request
            alive = server.proc.poll() is None
        finally:
            exit_code = server.stop()
        log_errors = server.log_errors()
        rows = _feedback_ids(server.feedback_db)  # read after shutdown: what survived it

    measured_errors = sum(stats.errors.values())
    # Warm-up requests count for errors and feedback rows, not for throughput or latency.
    for key, n in warm.errors.items():
        stats.errors[f"warm-up {key}"] = n
    stats.error_samples[:0] = [f"warm-up {e}" for e in warm.error_samples]
    feedback_acked = warm.feedback_ids + stats.feedback_ids
    per_route = {}
    for route, _ in MIX:
        lat = stats.latencies_ms.get(route, [])
        per_route[route] = {
            "requests": len(lat),
            "rps": round(len(lat) / elapsed, 1),
            "p50_ms": _percentile(lat, 0.5),
            "p95_ms": _percentile(lat, 0.95),
        }
    n_errors = sum(stats.errors.values())
    acked = set(feedback_acked)
    memory, failed = memory_verdict(sampler.samples, growth_limit_mb, climb_margin_mb)
    if n_errors:
        failed.insert(0, f"{n_errors} failed requests")
    if not alive:
        failed.append("the server died under load")
    if log_errors:
        failed.append(f"{len(log_errors)} error lines in the server log")
    if len(rows) != len(feedback_acked) or set(rows) != acked:
        failed.append(
            f"feedback: {len(feedback_acked)} acknowledged, {len(rows)} rows in the DB "
            f"({len(acked - set(rows))} lost, {len(set(rows) - acked)} unacknowledged)"
        )
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": sum(r["requests"] for r in per_route.values()) + measured_errors,
        "rps": round(sum(r["requests"] for r in per_route.values()) / elapsed, 1),
        "routes": per_route,
        "errors": n_errors,
        "errors_by_kind": stats.errors,
        "error_samples": stats.error_samples[:10],
        "server_log_errors": log_errors[:10],
        "feedback_posted": len(feedback_acked),
        "feedback_rows": len(rows),
        "rss_boot_mb": round(rss_boot, 1),
        **memory,
        "server_start_s": round(start_s, 1),
        "warmup_s": round(warm_s, 1),
        "server_exit_code": exit_code,
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "verdict": "fail" if failed else "pass",
        "failed": failed,
    }


@click.command()
@click.option("--clients", type=int, default=50, show_default=True)
@click.option("--seconds", type=float, default=60.0, show_default=True)
@click.option(
    "--articles",
    "articles_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Articles directory (default: KB_ARTICLES_DIR or the bundled articles/).",
)
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Index directory (default: KB_INDEX_DIR or .kb/index).",
)
@click.option(
    "--growth-limit-mb",
    type=float,
    default=300.0,
    show_default=True,
    help="Fail if the server's RSS peak exceeds its post-warm-up RSS by this much.",
)
@click.option(
    "--climb-margin-mb",
    type=float,
    default=16.0,
    show_default=True,
    help="Fail if RSS is still rising in the last third and ends this far over the earlier peak.",
)
@click.option("--seed", type=int, default=0, show_default=True)
def main(clients, seconds, articles_dir, index_dir, growth_limit_mb, climb_margin_mb, seed):
    """Load-test `kb serve`: concurrent ask/search/feedback clients on loopback.

    Example: .venv/bin/python bench/load.py --clients 50 --seconds 60
    """
    try:
        result = run_load(
            clients,
            seconds,
            articles_dir,
            index_dir,
            growth_limit_mb,
            climb_margin_mb,
            seed,
            log=lambda msg: click.echo(f"load: {msg}", err=True),
        )
    except ServerFailed as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(result, ensure_ascii=False, indent=2))
    sys.exit(0 if result["verdict"] == "pass" else 1)


if __name__ == "__main__":
    main()
