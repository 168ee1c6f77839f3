"""End to end in headless Chromium (Debian's chromium, driven by Playwright): the web chat, the
docs widget on a page of another origin, and XSS payloads rendered inert. Screenshots go to
test-artifacts/."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from kb.index import build_index

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
REPO = Path(__file__).resolve().parents[1]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI needs Debian's chromium for the browser tests (make browser)")
    pytest.skip("chromium is not installed (run `make browser`)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The real app (`python app.py`) on one port, the example docs page on another origin."""
    base = tmp_path_factory.mktemp("browser")
    articles = base / "articles"
    shutil.copytree(Path(__file__).parent / "fixtures" / "articles", articles)
    app_port, docs_port = _free_port(), _free_port()
    env = dict(
        os.environ,
        KB_ARTICLES_DIR=str(articles),
        KB_INDEX_DIR=str(base / "index"),
        KB_FEEDBACK_DB=str(base / "fb.sqlite3"),
        KB_PORT=str(app_port),
        KB_CORS_ORIGINS=f"http://127.0.0.1:{docs_port}",
        KB_LLM_BACKEND="auto",
        KB_LLM_TIMEOUT_S="60",
        GRADIO_ANALYTICS_ENABLED="False",
    )
    from kb.settings import Settings

    build_index(Settings.from_env(articles_dir=articles, index_dir=base / "index"))
    log = (base / "app.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "app.py")],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    url = f"http://127.0.0.1:{app_port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError((base / "app.log").read_text()[-3000:])
        time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("app did not start: " + (base / "app.log").read_text()[-3000:])

    page = (REPO / "examples" / "docs-page.html").read_text().replace("http://127.0.0.1:7860", url)
    docs_dir = base / "docs"
    docs_dir.mkdir()
    (docs_dir / "index.html").write_text(page)
    handler = partial(SimpleHTTPRequestHandler, directory=str(docs_dir))
    handler.log_message = lambda *a: None
    docs = ThreadingHTTPServer(("127.0.0.1", docs_port), handler)
    threading.Thread(target=docs.serve_forever, daemon=True).start()
    yield url, f"http://127.0.0.1:{docs_port}/index.html"
    docs.shutdown()
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    return page, dialogs


def test_web_chat_diagnoses_a_pasted_log(servers, browser):
    url, _ = servers
    page, dialogs = _page(browser)
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#kb-input textarea", timeout=60_000)
    log = (
        "训练到第 40 步 loss 变成 nan，配置如下\n"
        "{'loss': 1.92, 'grad_norm': 3.1, 'learning_rate': 2e-05, 'epoch': 0.1}\n"
        "{'loss': nan, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.2}\n"
        "torchrun train.py --fp16 True --per_device_train_batch_size 4\n"
    )
    page.fill("#kb-input textarea", log)
    page.click("#kb-send")
    page.wait_for_selector("#kb-cards .kb-card", timeout=60_000)
    assert "fp16" in page.inner_text("#kb-cards")
    # The answer streams in: first the composed answer, then the model's summary (or its note).
    page.wait_for_function(
        "() => { const t = document.querySelector('#kb-chat').innerText;"
        " return t.includes('bf16') && (t.includes('Summary') || t.includes('dropped')"
        " || t.includes('failed')); }",
        timeout=120_000,
    )
    page.screenshot(path=str(ARTIFACTS / "web-chat.png"), full_page=True)
    assert dialogs == []


def test_web_chat_renders_xss_inert(servers, browser):
    url, _ = servers
    page, dialogs = _page(browser)
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#kb-input textarea", timeout=60_000)
    page.fill("#kb-input textarea", f"RuntimeError: loss nan {XSS} fp16")
    page.click("#kb-send")
    page.wait_for_selector("#kb-cards .kb-card", timeout=60_000)
    time.sleep(1)
    assert page.evaluate("window.__xss") is None
    assert page.locator("#kb-chat img[src='x']").count() == 0
    page.screenshot(path=str(ARTIFACTS / "web-chat-xss.png"), full_page=True)
    assert dialogs == []


def test_docs_widget_answers_from_another_origin(servers, browser):
    _, docs_url = servers
    page, dialogs = _page(browser)
    page.goto(docs_url, wait_until="load")
    page.click("#kb-widget >> .kb-btn")
    page.fill(
        "#kb-widget >> .kb-input",
        f"ValueError: Cannot handle batch sizes > 1 if no padding token is defined {XSS}",
    )
    page.click("#kb-widget >> .kb-ask")
    page.wait_for_selector("#kb-widget >> .kb-hits a", timeout=60_000)
    assert "pad" in page.inner_text("#kb-widget >> .kb-hits").lower()
    assert "pad_token" in page.inner_text("#kb-widget >> .kb-answer")
    assert page.evaluate("window.__xss") is None
    page.screenshot(path=str(ARTIFACTS / "docs-widget.png"), full_page=True)
    assert dialogs == []
