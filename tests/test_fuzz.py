"""Fuzzing (hypothesis) the three doors hostile input comes through: the log analyzer, the article
parser and the HTTP API. Whatever comes in, the answer is a result or the project's own clear
error (KbError; a 4xx JSON `{"error": ...}` from the API), within a time bound, never a traceback.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import hypothesis
import pytest
import yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from assistant.api import MAX_BODY_BYTES, create_api
from assistant.feedback import FeedbackStore
from assistant.logs import Analyzer, analyze, analyze_bytes
from assistant.service import Assistant
from kb.articles import Article, parse_article
from kb.errors import ArticleError, KbError
from kb.index import build_index
from kb.inputs import decode_bytes
from kb.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"
# The same examples on every run, so a CI result is reproducible; KB_FUZZ_EXPLORE=1 draws new
# ones (that is how the "!!timestamp x" crash was found) to hunt for bugs locally.
FUZZ = hypothesis.settings(
    max_examples=60,
    deadline=None,
    derandomize=not os.environ.get("KB_FUZZ_EXPLORE"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ_SLOW = hypothesis.settings(FUZZ, max_examples=20)  # each example runs the whole ask pipeline


def bounded(fn: Callable, *args, seconds: float = 20.0, **kwargs):
    """fn(*args, **kwargs) on a daemon thread: a hang fails the test instead of stalling the run.

    (Only Python-level hangs: C code that holds the GIL delays the failure until it lets go.)
    """
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed back to the test thread below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} still running after {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


# --- the log analyzer ---------------------------------------------------------------------------

# Pieces of real log lines, so random joins reach the parser states plain random text never does.
LOG_PIECES = [
    "{'loss': nan, 'grad_norm': inf, 'learning_rate': 2e-05, 'epoch': 0.1}",
    '{"train/loss": 1e309, "step": 12}',
    "{'loss': tensor(1.2, device='cuda:0'), 'acc': np.float64(0.5)}",
    " 12%|█▏   | 120/1000 [01:02<07:40,  1.91it/s, loss=0.693, lr=1e-5]",
    "Map: 50%|█████| 5/10 [00:01<00:01]",
    "Traceback (most recent call last):",
    '  File "train.py", line 12, in <module>',
    "    trainer.train()",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "torch.OutOfMemoryError: CUDA out of memory",
    "[rank0]: ",
    "[rank3]:[W reducer.cpp:1] ",
    "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "Current loss scale already at minimum",
    "step=40, skipped=3, lr=[1e-05]",
    "Step 10/100 | loss: 0.53 | grad_norm: nan",
    "iteration 300/ 1000 | lm loss: 2.310E+00 | loss scale: 1.0 |",
    '{"log_history": [{"loss": 0.1, "step": 1}]}',
    "--fp16 --per_device_train_batch_size 4 --model_name_or_path meta-llama/Llama-2-7b-hf",
    "transformers==4.46.0 torch 2.1.2 trl 0.8.6",
    "DPO 训练 loss 一直是 0.6931",
    "{",
    "}",
    "\n",
    "\r",
    "\r\n",
    "\t",
    "\x00",
    "\ufeff",
    "\x1b[31m",
    "\x1b[2K\x1b[1A",
    "\x1b]0;title\x07",
    "\x1b",
    "<img src=x onerror=alert(1)>",
    "'",
    '"',
    ":",
    "|",
    "=",
]
log_texts = st.lists(st.one_of(st.sampled_from(LOG_PIECES), st.text(max_size=40)), max_size=80).map(
    "".join
)


def _signals_ok(signals) -> None:
    # The API serialises with allow_nan=False: a NaN or inf left in the document would be a 500.
    json.dumps(signals.to_dict(), allow_nan=False)


@FUZZ
@given(st.binary(max_size=4096))
def test_analyzer_random_bytes(data):
    _signals_ok(analyze_bytes(data))


@FUZZ
@given(st.binary(max_size=4096))
def test_decode_then_analyze_random_bytes(data):
    """The CLI and web upload path: decode (clear BadInput for binary) then analyze."""
    try:
        text = decode_bytes(data, "upload")
    except KbError:
        return
    _signals_ok(analyze(text))


@FUZZ
@given(log_texts)
def test_analyzer_log_shaped_junk(text):
    _signals_ok(analyze(text))


@FUZZ
@given(st.lists(log_texts, max_size=8))
def test_analyzer_fed_in_pieces(pieces):
    """`kb watch` feeds a growing file piece by piece and reads signals() in between."""
    analyzer = Analyzer()
    for piece in pieces:
        analyzer.feed_text(piece)
        _signals_ok(analyzer.signals())
        analyzer.new_anomalies(0)


DEEP = 10_000


@pytest.mark.parametrize(
    "text",
    [
        '{"a":' * DEEP + "1" + "}" * DEEP,  # one 50 KB line of nested objects
        '{"a":\n' * DEEP + "1\n" + "}\n" * DEEP,  # the same, one level per line
        '{"log_history": [' + '{"a":' * DEEP + "1" + "}" * DEEP + "]}",  # trainer_state path
        "x" * 5_000_000,  # 5 MB, no newline
        "{'loss': 0.5, " + "'k': 1, " * 600_000 + "}",  # a 5 MB metric record
        "\x1b[" * 1_000_000 + "\x1b]" + "a" * 1_000_000,  # unterminated ANSI/OSC sequences
        "loss=1 \r" * 300_000,  # 2.4 MB of carriage returns that are not progress bars
        "\ud800 loss 1 step 2 \udfff\n" * 1000,  # lone surrogates (argv with bad bytes)
    ],
    ids=[
        "nested-line",
        "nested-lines",
        "nested-state",
        "5mb-line",
        "5mb-record",
        "ansi",
        "cr",
        "surrogates",
    ],
)
def test_analyzer_hostile_shapes_finish(text):
    _signals_ok(bounded(analyze, text, seconds=30))


# --- the article parser --------------------------------------------------------------------------

FIELDS = [
    "id", "title", "failure_mode", "frameworks", "stages", "models", "symptoms",
    "error_signatures", "conditions", "cause", "fix", "snippets", "confirm", "renames",
    "sources", "verified_with", "zh",
]  # fmt: skip
yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
# Tokens that make YAML interesting: anchors, aliases, tags, flow and block collections, tabs.
YAML_PIECES = [
    "id: ", "title: ", "symptoms:", "snippets:", "zh:", "verified_with:", "\n", "\t", "  ",
    "- ", "&a ", "*a", "&b [*a, *a]", "[", "]", "{", "}", ": ", "? ", "<<: ", "|", ">", "'", '"',
    "#", "%YAML 1.1\n", "---\n", "...\n", "!!binary ", "!!python/object:os.system ", "!!set ",
    "!!timestamp ", "2001-13-45", "0x", "0o9", ".nan", "~", "\x00", "\ufeff", "1" * 5000,
]  # fmt: skip
front_sources = st.lists(
    st.one_of(st.sampled_from(YAML_PIECES), st.text(max_size=10)), max_size=40
).map("".join)


@pytest.fixture(scope="module")
def article_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-articles")


def _parse(path) -> Article | None:
    """The article, or None for the project's clear ArticleError; anything else fails the test."""
    try:
        article = bounded(parse_article, path, seconds=10)
    except ArticleError as exc:
        assert str(path) in str(exc)  # the message names the file
        return None
    json.dumps(article.to_dict())
    return article


@FUZZ
@given(st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=10), yaml_values, max_size=10))
def test_article_front_matter_of_any_types(article_dir, meta):
    path = article_dir / "typed.md"
    path.write_text("---\n" + yaml.safe_dump(meta, allow_unicode=True) + "---\n## Cause\nx\n")
    article = _parse(path)
    assert article is not None  # well-formed YAML mapping: wrong types fall back, never raise
    assert all(isinstance(s, str) for s in article.symptoms + article.fix + article.sources)


@FUZZ
@given(front_sources, st.text(max_size=200))
def test_article_malformed_front_matter(article_dir, front, body):
    path = article_dir / "malformed.md"
    path.write_text("---\n" + front + "\n---\n" + body, encoding="utf-8")
    _parse(path)


@FUZZ
@given(st.binary(max_size=2048))
def test_article_random_bytes(article_dir, data):
    path = article_dir / "bytes.md"
    path.write_bytes(b"---\nid: x\n" + data)
    _parse(path)


def _laughs(levels: int) -> str:
    lines = ["lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, levels):
        lines.append(f"lol{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]")
    return "\n".join(lines)


@pytest.mark.parametrize(
    "front, message",
    [
        # 9**8 items once expanded (43 million; a ninth level never finishes). Kept at eight so
        # that a regression fails this test in tens of seconds, not the machine's memory.
        (_laughs(8) + "\nid: x\nsymptoms: [*l7]\n", "alias"),
        ("id: x\nsymptoms: &s [*s]\n", "alias"),  # a list that contains itself
        ("id: " + "[" * 10_000 + "]" * 10_000, "too deeply nested"),
        ("id: " + "{a: " * 3_000 + "1" + "}" * 3_000, "too deeply nested"),
        ("id: " + "1" * 5000, "not valid YAML"),  # over Python's int-from-string limit
        ("id: x\ncreated: 2001-13-45", "not valid YAML"),  # a timestamp with month 13
        ("id: !!timestamp x", "not valid YAML"),  # found by hypothesis: PyYAML AttributeError
        ("id: !!python/object/apply:os.system ['true']", "not valid YAML"),
        ("\tid: x", "not valid YAML"),
        ("- a\n- b", "must be a mapping"),
        ("just a string", "must be a mapping"),
        ("", "must be a mapping"),
    ],
    ids=[
        "billion-laughs",
        "self-alias",
        "deep-list",
        "deep-map",
        "huge-int",
        "bad-date",
        "tagged-non-date",
        "python-tag",
        "tab",
        "list",
        "scalar",
        "empty",
    ],
)
def test_article_hostile_front_matter_is_a_clear_error(tmp_path, front, message):
    path = tmp_path / "hostile.md"
    path.write_text(f"---\n{front}\n---\n## Cause\nx\n")
    with pytest.raises(ArticleError, match=message):
        bounded(parse_article, path, seconds=10)


@pytest.mark.parametrize(
    "field, value, attr, expected",
    [
        ("fix", "{a: 1}", "fix", []),
        ("symptoms", "just one", "symptoms", ["just one"]),
        ("symptoms", "[1, null, '', 2.5]", "symptoms", ["1", "2.5"]),
        ("snippets", "not a list", "snippets", []),
        ("renames", "[{old: a}]", "renames", []),
        ("verified_with", "[a, b]", "verified_with", {}),
        ("zh", "3", "zh", {"title": "", "cause": "", "fix": [], "confirm": []}),
    ],
)
def test_article_wrong_field_types_fall_back(tmp_path, field, value, attr, expected):
    path = tmp_path / "typed.md"
    path.write_text(f"---\nid: x\n{field}: {value}\n---\n")
    assert getattr(parse_article(path), attr) == expected


def test_unclosed_front_matter_is_a_clear_error(tmp_path):
    path = tmp_path / "open.md"
    path.write_text("---\nid: x\ntitle: never closed\n## Cause\nx\n")
    with pytest.raises(ArticleError, match="no YAML front matter"):
        parse_article(path)


# --- the HTTP API -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api_settings(tmp_path_factory) -> Settings:
    base = tmp_path_factory.mktemp("fuzz-api")
    shutil.copytree(FIXTURES / "articles", base / "articles")
    settings = replace(
        Settings(),
        articles_dir=base / "articles",
        index_dir=base / "kbdata" / "index",
        feedback_db=base / "kbdata" / "feedback.sqlite3",
        llm_backend="none",
    )
    build_index(settings)
    return settings


@pytest.fixture(scope="module")
def app(api_settings):
    assistant = Assistant(api_settings)
    assistant.retriever  # noqa: B018 - load the index once, outside the timed examples
    return create_api(assistant, FeedbackStore(api_settings.feedback_db))


@pytest.fixture(scope="module")
def client(app):
    # A server error comes back as a 500 response (which the tests fail on), not an exception.
    return TestClient(app, raise_server_exceptions=False)


JSON = {"Content-Type": "application/json"}


def assert_clear(res) -> None:
    """A result, or a 4xx whose JSON body says what is wrong; never a 5xx or a non-JSON error."""
    assert res.status_code < 500, f"{res.status_code}: {res.text[:300]}"
    if res.headers.get("content-type", "").startswith("text/event-stream"):
        events = [ln[7:] for ln in res.text.splitlines() if ln.startswith("event: ")]
        assert events and events[-1] in ("done", "error"), res.text[:300]
        return
    doc = res.json()
    if res.status_code >= 400:
        assert isinstance(doc.get("error"), str) and doc["error"], doc


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["query", "k", "no_llm", "stream", "rating", "fixed", "comment"])
            | st.text(max_size=5),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)
SURROGATES = ["\ud800", "\udfff", "\udcff"]  # lone halves: JSON allows them as \\u escapes
query_texts = st.lists(
    st.one_of(st.sampled_from(LOG_PIECES + SURROGATES), st.text(max_size=30)), max_size=20
).map("".join)


@FUZZ
@given(st.binary(max_size=3000), st.sampled_from(["/api/ask", "/api/feedback"]))
def test_api_random_body(client, body, path):
    assert_clear(client.post(path, content=body, headers=JSON))


@FUZZ_SLOW
@given(json_values)
def test_api_ask_any_json(client, doc):
    body = json.dumps(doc).encode()
    assert_clear(client.post("/api/ask", content=body, headers=JSON))


@FUZZ_SLOW
@given(query_texts, st.booleans())
def test_api_ask_any_query(client, query, stream):
    # ensure_ascii writes lone surrogates as \\ud800 escapes, as a browser's JSON.stringify does.
    body = json.dumps({"query": query, "no_llm": True, "stream": stream})
    assert_clear(client.post("/api/ask", content=body.encode(), headers=JSON))


@FUZZ_SLOW
@given(st.text(max_size=300), st.integers(min_value=-5, max_value=100))
def test_api_search_any_query(client, q, k):
    assert_clear(client.get("/api/search", params={"q": q, "k": k}))


@FUZZ
@given(query_texts, json_values, st.text(max_size=100) | st.sampled_from(SURROGATES))
def test_api_feedback_any_fields(client, query, rating, comment):
    body = {"query": query, "rating": rating, "comment": comment, "fixed": "yes"}
    assert_clear(client.post("/api/feedback", content=json.dumps(body).encode(), headers=JSON))


@FUZZ
@given(st.text(max_size=200))
def test_api_article_any_id(client, article_id):
    for path in (f"/api/articles/{article_id}", f"/articles/{article_id}"):
        try:
            res = client.get(path)
        except Exception:  # the client itself refuses the URL (e.g. "?" or "#" in the id)
            continue
        assert res.status_code < 500, f"{path}: {res.text[:200]}"


HOSTILE_ARTICLES = {
    "billion-laughs": f"---\n{_laughs(8)}\nid: billion-laughs\nsymptoms: [*l7]\n---\n".encode(),
    "deep": ("---\nid: " + "[" * 10_000 + "]" * 10_000 + "\n---\n").encode(),
    "bad-utf8": b"---\nid: \xff\xfe\n---\n",
    "too-big": b"---\nid: too-big\n---\n" + b"x" * 600_000,
    "binary": bytes(range(256)) * 10,
}


def test_api_hostile_article_files_get_clear_errors(api_settings, tmp_path):
    """A broken article on disk costs its own page a clear 503 naming the file (not the server's
    directories), not the server a worker or a crash."""
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    for name, data in HOSTILE_ARTICLES.items():
        (hostile / f"{name}.md").write_bytes(data)
    settings = replace(api_settings, articles_dir=hostile)
    app = create_api(Assistant(settings), FeedbackStore(settings.feedback_db))
    client = TestClient(app, raise_server_exceptions=False)
    for name in HOSTILE_ARTICLES:
        for path in (f"/api/articles/{name}", f"/articles/{name}"):
            res = bounded(client.get, path, seconds=20)
            error = res.json()["error"]
            assert res.status_code == 503 and f"{name}.md" in error, res.text[:300]
            assert str(hostile) not in error


NESTED = '{"a":' * DEEP + "1" + "}" * DEEP


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/ask", '{"query": ' + NESTED + "}"),
        ("/api/ask", "[" * 100_000 + "]" * 100_000),
        ("/api/feedback", '{"query": "q", "rating": "helpful", "comment": ' + NESTED + "}"),
        ("/api/ask", b'{"query": "\xff\xfe loss nan \xc3\x28", "no_llm": true}'),
        ("/api/ask", b'{"query": "\x00\x00", "no_llm": true}'),
        ("/api/ask", '{"query": "loss nan fp16", "k": 1' + "0" * 5000 + "}"),
        ("/api/ask", '{"query": "x", "k": NaN}'),
        ("/api/ask", '{"query": "\\ud800 loss nan fp16", "no_llm": true}'),
        ("/api/ask", '{"query": "\\u0000 loss nan \\u0000", "no_llm": true}'),
        ("/api/ask", '{"query": "' + "\\u001b[31m" * 1000 + '", "no_llm": true}'),
        ("/api/ask", '{"query": "' + "x" * 900_000 + '", "no_llm": true}'),
        ("/api/feedback", '{"query": "\\udfff", "rating": "helpful", "comment": "\\ud800"}'),
        ("/api/ask", ""),
        ("/api/ask", "null"),
    ],
    ids=[
        "nested-query",
        "nested-list",
        "nested-comment",
        "bad-utf8",
        "raw-nul",
        "huge-k",
        "nan-k",
        "surrogate",
        "nul-escape",
        "ansi",
        "900k-line",
        "feedback-surrogate",
        "empty",
        "null",
    ],
)
def test_api_hostile_bodies_get_clear_answers(client, path, body):
    content = body if isinstance(body, bytes) else body.encode()
    res = bounded(client.post, path, content=content, headers=JSON, seconds=60)
    assert_clear(res)


@contextmanager
def live_server(app):
    """The app under a real uvicorn on a loopback port (TestClient buffers request bodies)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    end = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < end:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def _upload(port: int, total: int, chunked: bool) -> tuple[int, bytes]:
    """POST up to `total` body bytes, stopping as soon as the server answers or hangs up.

    Returns (body bytes sent, the response).
    """
    conn = socket.create_connection(("127.0.0.1", port), timeout=20)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}"
    conn.sendall(
        (
            "POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"{framing}\r\n\r\n"
        ).encode()
    )
    block = b" " * 65536
    piece = b"%x\r\n%s\r\n" % (len(block), block) if chunked else block
    sent = 0
    while sent < total:
        if select.select([conn], [], [], 0)[0]:
            break  # the server has answered (or closed): no point sending the rest
        try:
            conn.sendall(piece)
        except OSError:
            break
        sent += len(block)
    response = b""
    try:
        while b"\r\n\r\n" not in response or not response.rstrip().endswith(b"}"):
            data = conn.recv(65536)
            if not data:
                break
            response += data
    except OSError:
        pass
    conn.close()
    return sent, response


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_100mb_upload_refused_without_reading_it(app, chunked):
    total = 100 * 1024 * 1024
    with live_server(app) as port:
        tracemalloc.start()
        try:
            sent, response = bounded(_upload, port, total, chunked, seconds=60)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), response[:300]
    assert "body" in json.loads(body)["error"]
    assert sent < total // 4, f"the server let {sent} bytes in before refusing"
    assert peak < 5 * MAX_BODY_BYTES + 32 * 2**20, f"{peak / 2**20:.0f} MiB held for a refused body"


# --- atheris (coverage-guided), when installed ---------------------------------------------------

ATHERIS_HARNESS = """
import sys, tempfile, pathlib
import atheris

with atheris.instrument_imports(include=["kb", "assistant"]):
    from assistant.logs import analyze_bytes
    from kb.articles import parse_article
    from kb.errors import KbError

ARTICLE = pathlib.Path(tempfile.mkdtemp()) / "fuzz.md"


def one_input(data: bytes) -> None:
    if data.startswith(b"---"):  # seeded with the fixture articles
        ARTICLE.write_bytes(data)
        try:
            parse_article(ARTICLE)
        except KbError:
            pass
    else:  # seeded with the fixture logs
        analyze_bytes(data)


atheris.Setup(sys.argv, one_input)
atheris.Fuzz()
"""


def test_atheris_logs_and_articles(tmp_path):
    """Three seconds of libFuzzer-guided mutation from the fixture logs and articles; a crash
    (any exception but KbError) or a 10 s input fails it and leaves the input in tmp_path."""
    pytest.importorskip("atheris")
    harness = tmp_path / "harness.py"
    harness.write_text(ATHERIS_HARNESS)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for seed in [*(FIXTURES / "logs").iterdir(), *(FIXTURES / "articles").iterdir()]:
        (corpus / seed.name).write_bytes(seed.read_bytes()[:16384])
    run = subprocess.run(
        [sys.executable, str(harness), str(corpus), "-max_total_time=3", "-timeout=10",
         "-rss_limit_mb=2048", "-max_len=16384", f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert "Done" in run.stderr
