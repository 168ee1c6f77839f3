"""Faults: `kill -9` in the middle of `kb index` and of feedback writes, a model server that hangs
or dies mid-answer, and script payloads in logs, articles and feedback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fastapi.testclient import TestClient

from assistant.api import create_api
from assistant.feedback import Feedback, FeedbackStore
from assistant.render import article_html, case_cards_html, markdown_to_html
from assistant.service import Assistant
from kb.articles import parse_article
from kb.cli import main
from kb.embedding import load_embedder
from kb.index import build_index, load_index
from kb.retrieval import Hit, Retriever
from kb.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent


def _settings(base: Path) -> Settings:
    return replace(
        Settings(),
        articles_dir=base / "articles",
        index_dir=base / "kbdata" / "index",
        feedback_db=base / "kbdata" / "feedback.sqlite3",
        llm_backend="none",
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The fixture articles with their index, built once; tests work on copies of it."""
    base = tmp_path_factory.mktemp("built")
    shutil.copytree(FIXTURES / "articles", base / "articles")
    build_index(_settings(base))
    return base


@pytest.fixture(scope="module")
def retriever(built) -> Retriever:
    """The built index, loaded once and shared by the tests that only read it."""
    return Retriever(load_index(_settings(built)), load_embedder("e5"))


@pytest.fixture
def workdir(built, tmp_path) -> Path:
    target = tmp_path / "work"
    shutil.copytree(built, target, symlinks=True)  # the index link stays a (relative) link
    return target


def _wait_for(predicate, seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


# --- (a) kill -9 during `kb index` -------------------------------------------------------------

# `kb index` itself, with one step of kb/index.py made to stall, so that SIGKILL lands at a known
# point of the build. The kill is a real kill -9 of a real `kb index` process.
CHILD_INDEX = """
import sys, time
import kb.index as ix
from kb.cli import main

marker, point = sys.argv[1], sys.argv[2]

def stall(*args, **kwargs):
    open(marker, "w").close()
    time.sleep(600)

if point == "write":  # some files of the new version written, the manifest not yet
    ix.BM25 = type("StalledBM25", (), {"from_texts": staticmethod(stall)})
else:
    setattr(ix, point, stall)
main(["index"], prog_name="kb")
"""

KILL_POINTS = {
    "write": "mid-write: a .tmp version without its manifest",
    "_swap_symlink": "a whole new version, the link not yet swapped",
}


def _env(settings: Settings) -> dict:
    return {
        **os.environ,
        "KB_ARTICLES_DIR": str(settings.articles_dir),
        "KB_INDEX_DIR": str(settings.index_dir),
        "PYTHONPATH": str(REPO),
    }


def _edit_corpus(settings: Settings) -> tuple[Path, str]:
    """Change an article so `kb index` must rebuild, but without new chunks to embed (fast)."""
    path = settings.articles_dir / "fixture-dpo-stuck.md"
    before = path.read_text()
    path.write_text(before + "\nEdited after the first build.\n")
    return path, before


def _search_top(settings: Settings, query: str) -> str:
    loaded = load_index(settings)  # verifies every file against the manifest's checksums
    hits = Retriever(loaded, load_embedder(loaded.manifest.embedder)).search(query, 3)
    return hits[0].article.id


@pytest.mark.parametrize("point", list(KILL_POINTS), ids=list(KILL_POINTS))
def test_kill_9_during_kb_index_keeps_a_whole_index(workdir, tmp_path, point):
    settings = _settings(workdir)
    old_target = os.readlink(settings.index_dir)
    path, before = _edit_corpus(settings)
    marker = tmp_path / "stalled"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_INDEX, str(marker), point],
        env=_env(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(lambda: marker.exists() or child.poll() is not None, 120, f"kb index {point}")
        assert marker.exists(), child.stderr.read().decode()[-2000:]
        versions = sorted(p.name for p in settings.index_dir.parent.glob("index.v-*"))
        assert len(versions) == 2, versions  # the old version and the one being written
        if point == "write":
            (partial,) = settings.index_dir.parent.glob("index.v-*.tmp")
            assert (partial / "vectors.npy").exists() and not (partial / "manifest.json").exists()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(30)
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    # The link still points at the old index, whole.
    assert os.readlink(settings.index_dir) == old_target, KILL_POINTS[point]
    path.write_text(before)  # the old index matches the old articles: load and search it
    assert _search_top(settings, "loss becomes nan in fp16 training") == "fixture-fp16-overflow"

    # The next `kb index` (another edit: a real rebuild) succeeds and clears what the killed
    # build left behind.
    path.write_text(before + "\nEdited twice.\n")
    flags = ["--articles", str(settings.articles_dir), "--index", str(settings.index_dir)]
    run = CliRunner().invoke(main, [*flags, "index"])
    assert run.exit_code == 0, run.output
    assert load_index(settings).manifest.n_articles == 3
    current = os.readlink(settings.index_dir)
    assert [p.name for p in settings.index_dir.parent.glob("index.v-*")] == [current]


# --- (b) kill -9 of a process writing feedback -------------------------------------------------

CHILD_FEEDBACK = """
import sys
from pathlib import Path
from assistant.feedback import Feedback, FeedbackStore

store = FeedbackStore(Path(sys.argv[1]))
n = 0
while True:
    n += 1
    row = store.add(
        Feedback(query=f"{sys.argv[2]} {n} " + "x" * 3000, article_id="fixture-dpo-stuck",
                 failure_mode="dpo-loss-stuck-0693", rating="not_helpful", comment="c" * 1500)
    )
    print(row, flush=True)  # printed only after the insert has committed
"""

CHILD_OPEN_TRANSACTION = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
for n in range(3000):  # ~9 MB: more than SQLite's page cache, so pages spill into the WAL
    conn.execute(
        "INSERT INTO feedback (created, query, rating, comment)"
        " VALUES (0, 'uncommitted', 'helpful', hex(randomblob(1500)))"
    )
print("open", flush=True)
time.sleep(600)
"""


def _writer(db: Path, name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD_FEEDBACK, str(db), name],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )


def _read_ids(proc: subprocess.Popen, at_least: int) -> list[int]:
    ids = []
    for line in proc.stdout:
        ids.append(int(line))
        if len(ids) >= at_least:
            break
    return ids


def test_feedback_db_survives_kill_9_mid_write(tmp_path):
    db = tmp_path / "feedback.sqlite3"
    FeedbackStore(db)  # the schema, as the app creates it at start-up
    a, b = _writer(db, "a"), _writer(db, "b")
    try:
        committed = _read_ids(a, 150) + _read_ids(b, 50)
        os.kill(a.pid, signal.SIGKILL)  # in its tight write loop: killed mid-insert
        committed += _read_ids(b, 100)  # the other writer goes on after the kill
        os.kill(b.pid, signal.SIGKILL)
        for proc in (a, b):
            proc.wait(30)
            # Printed before the kill but not read yet; a line cut by the kill is left out.
            committed += [int(line) for line in proc.stdout.read().split("\n")[:-1]]
    finally:
        for proc in (a, b):
            proc.kill()
            proc.wait(30)
            proc.stdout.close()

    txn = subprocess.Popen(
        [sys.executable, "-c", CHILD_OPEN_TRANSACTION, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert txn.stdout.readline().strip() == "open"
        os.kill(txn.pid, signal.SIGKILL)  # 3000 inserted rows, never committed
    finally:
        txn.kill()
        txn.wait(30)
        txn.stdout.close()

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = FeedbackStore(db)
    rows = store.rows()
    ids = {r["id"] for r in rows}
    assert set(committed) <= ids, "a committed row was lost"
    assert not any(r["query"] == "uncommitted" for r in rows)
    assert all(r["query"].startswith(("a ", "b ")) and len(r["comment"]) == 1500 for r in rows)
    new = store.add(Feedback(query="after the kills", article_id=None, failure_mode=None,
                             rating="helpful"))  # fmt: skip
    assert new > max(ids) and store.rows()[-1]["query"] == "after the kills"


# --- (c) a model server that hangs or dies mid-answer ------------------------------------------

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(text: str) -> bytes:
    return _chunk(b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode()
                  + b"\n\n")  # fmt: skip


class BadModelServer:
    """An OpenAI-compatible endpoint that misbehaves in one way (`mode`), on a loopback port."""

    def __init__(self, mode: str):
        self.mode = mode
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)  # the request; its content does not matter here
            if self.mode == "hang":  # accepts, reads, never answers
                self.stop.wait(60)
            elif self.mode == "hang-mid-stream":
                conn.sendall(SSE_HEAD + _event("Train in bf16 "))
                self.stop.wait(60)
            elif self.mode == "drip":  # a byte at a time and never a whole line
                conn.sendall(SSE_HEAD)
                while not self.stop.wait(0.2):
                    conn.sendall(_chunk(b"d"))
            elif self.mode == "crash-mid-stream":  # the server process dies mid-answer
                conn.sendall(SSE_HEAD + _event("Train in bf16 ") + _event("instead of "))
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


LLM_TIMEOUT_S = 2.0


@pytest.mark.parametrize("mode", ["hang", "hang-mid-stream", "drip", "crash-mid-stream"])
def test_bad_model_server_keeps_composed_answer(built, retriever, mode):
    server = BadModelServer(mode)
    try:
        settings = replace(
            _settings(built), llm_backend="openai", llm_url=server.url, llm_timeout_s=LLM_TIMEOUT_S
        )
        assistant = Assistant(settings, retriever)
        box: dict = {}
        thread = threading.Thread(
            target=lambda: box.update(result=assistant.ask("loss 变成 nan with fp16")), daemon=True
        )
        thread.start()
        thread.join(30)  # a budget of 2 s; the bad server itself gives up only after 60 s
    finally:
        server.close()
    assert "result" in box, "ask() still waiting on the model after 30 s"
    answer = box["result"].answer
    assert "bf16" in answer.text  # the composed answer, whatever the model did
    assert answer.llm_text == "" and answer.llm_note, answer


def test_hung_model_server_streaming_api_ends_with_done(built, retriever):
    server = BadModelServer("hang")
    try:
        settings = replace(
            _settings(built), llm_backend="openai", llm_url=server.url, llm_timeout_s=LLM_TIMEOUT_S
        )
        assistant = Assistant(settings, retriever)
        client = TestClient(create_api(assistant, FeedbackStore(settings.feedback_db)))
        with client.stream(
            "POST", "/api/ask", json={"query": "loss 变成 nan with fp16", "stream": True}
        ) as res:
            body = "".join(res.iter_text())
    finally:
        server.close()
    events = [ln[7:] for ln in body.splitlines() if ln.startswith("event: ")]
    assert events[0] == "meta" and events[-1] == "done", events
    done = json.loads(body.strip().rsplit("data: ", 1)[-1])
    assert "bf16" in done["answer"]["text"] and done["answer"]["llm_note"]


# --- (d) script payloads are inert ----------------------------------------------------------------

XSS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '"><svg onload=alert(1)>',
    "<a href='javascript:alert(1)'>x</a>",
    "<iframe src=javascript:alert(1)></iframe>",
]
PAYLOAD = " ".join(XSS)
SAFE_TAGS = {
    "a", "b", "blockquote", "body", "br", "code", "div", "em", "h1", "h2", "h3", "h4", "hr", "li",
    "meta", "ol", "p", "pre", "strong", "title", "ul",
}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


def assert_inert(markup: str) -> None:
    """No tag a browser would run: only plain formatting tags, no on* handlers, no script URLs."""
    parser = _Tags()
    parser.feed(markup)
    for tag, attrs in parser.found:
        assert tag in SAFE_TAGS, f"<{tag}> survived in {markup[:300]}"
        for name, value in attrs:
            assert not name.startswith("on"), f"{name}= on <{tag}>"
            if name in ("href", "src"):
                assert (value or "").startswith(("http://", "https://", "#")), value
    assert "<script" not in markup.lower() and "<img" not in markup.lower()


XSS_FRONT = {
    "id": "xss-everywhere",
    "title": f"Loss becomes nan {XSS[0]}",
    "failure_mode": f"fp16-overflow-nan{XSS[1]}",
    "frameworks": ["transformers"],
    "stages": ["sft"],
    "models": ["any"],
    "symptoms": [f"loss becomes nan {XSS[2]}"],
    "conditions": ["fp16=True"],
    "cause": f"overflow {XSS[3]}",
    "fix": [f"use bf16 {XSS[4]}"],
    "confirm": [XSS[0]],
    "sources": ["javascript:alert(1)", 'https://example.com/"><script>alert(1)</script>'],
    "zh": {"title": f"loss 变成 nan {XSS[0]}", "cause": XSS[1], "fix": [XSS[2]]},
}
XSS_BODY = f"""## Symptoms
{PAYLOAD}

<div onmouseover="alert(1)">raw html block</div>

[click](javascript:alert(1)) ![x](javascript:alert(1)) <javascript:alert(1)>

## Cause
fp16 overflow {XSS[1]}

## Fix
Use bf16. {XSS[0]}
"""
XSS_ARTICLE = "---\n" + yaml.safe_dump(XSS_FRONT, allow_unicode=True) + "---\n" + XSS_BODY


@pytest.fixture
def xss_articles(tmp_path) -> Path:
    target = tmp_path / "xss-articles"
    target.mkdir()
    (target / "xss-everywhere.md").write_text(XSS_ARTICLE)
    return target


def test_article_fields_render_inert(xss_articles):
    article = parse_article(xss_articles / "xss-everywhere.md")
    assert XSS[0] in article.title  # the payload is there, as text
    assert_inert(article_html(article))
    for language in ("en", "zh"):
        hit = Hit(article, 1.0, 1, 0.9, evidence=[f"log says {PAYLOAD}"])
        assert_inert(case_cards_html([hit], abstained=False, language=language))
        assert_inert(case_cards_html([hit], abstained=True, language=language))


def test_article_page_and_json_from_the_api_are_inert(tiny_settings, xss_articles):
    settings = replace(tiny_settings, articles_dir=xss_articles)
    client = TestClient(create_api(Assistant(settings), FeedbackStore(settings.feedback_db)))
    page = client.get("/articles/xss-everywhere")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert_inert(page.text)
    doc = client.get("/api/articles/xss-everywhere")
    assert doc.headers["content-type"] == "application/json"
    assert doc.json()["title"] == f"Loss becomes nan {XSS[0]}"  # data round-trips, as a string


def test_pasted_log_payloads_are_inert(built, retriever):
    settings = _settings(built)
    assistant = Assistant(settings, retriever)
    client = TestClient(create_api(assistant, FeedbackStore(settings.feedback_db)))
    log = (
        f"{{'loss': nan, 'grad_norm': nan}} {PAYLOAD}\n--fp16 {XSS[1]}\n"
        f"RuntimeError: loss is nan {XSS[0]}\n"
        '\n\nevent: done\ndata: {"forged": true}\n\n'  # an SSE frame smuggled in the paste
    )
    res = client.post("/api/ask", json={"query": log, "no_llm": True})
    assert res.headers["content-type"] == "application/json"
    doc = res.json()
    assert XSS[0] in doc["query"]  # echoed back as a JSON string, never as markup
    assert_inert(markdown_to_html(doc["answer"]["text"]))
    result = assistant.ask(log, use_llm=False)
    assert_inert(case_cards_html(result.hits, result.abstained))
    assert_inert(markdown_to_html(log))

    with client.stream(
        "POST", "/api/ask", json={"query": log, "no_llm": True, "stream": True}
    ) as streamed:
        body = "".join(streamed.iter_text())
    frames = [f for f in body.split("\n\n") if f.strip()]
    assert [f.split("\n")[0] for f in frames] == ["event: meta", "event: done"]
    for frame in frames:
        assert json.loads(frame.split("\n", 1)[1].removeprefix("data: "))


def test_feedback_payloads_stay_data(tiny_settings):
    store = FeedbackStore(tiny_settings.feedback_db)
    client = TestClient(create_api(Assistant(tiny_settings), store))
    res = client.post(
        "/api/feedback",
        json={"query": PAYLOAD, "article_id": XSS[0], "failure_mode": XSS[1],
              "rating": "not_helpful", "comment": PAYLOAD},
    )  # fmt: skip
    assert res.status_code == 200 and res.headers["content-type"] == "application/json"
    assert set(res.json()) == {"id"}  # nothing of the payload is echoed
    exported = [json.loads(line) for line in store.export_jsonl().splitlines()]
    assert exported[-1]["comment"] == PAYLOAD and exported[-1]["article_id"] == XSS[0]
    # Feedback is never rendered as HTML; if it ever is, the renderer must keep it inert.
    assert_inert(markdown_to_html(exported[-1]["comment"]))
