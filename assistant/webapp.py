"""The web surfaces in one process: the Gradio chat (at /), the JSON API (/api) and the widget."""

from __future__ import annotations

import hmac
import html
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from assistant.api import create_api
from assistant.feedback import Feedback, FeedbackStore
from assistant.render import article_html, case_cards_html
from assistant.service import AskResult, Assistant, Prepared
from kb.articles import load_articles
from kb.errors import KbError
from kb.inputs import read_text_file
from kb.settings import Settings

log = logging.getLogger("kb.web")

# Examples written for first-time visitors (not taken from any eval set).
EXAMPLES = [
    "loss is 0 with qwen2.5-7b when I train with --fp16",
    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.1}",
    "ValueError: Cannot handle batch sizes > 1 if no padding token is defined.",
    "DPO 训练时 loss 一直是 0.6931，rewards/chosen 和 rewards/rejected 都是 0",
    "多卡训练 RuntimeError: DataLoader worker (pid 123) is killed by signal: Bus error.",
]
MAX_SHOWN_CHARS = 3000
CSS = """
.kb-card{border:1px solid #d0d7de;border-radius:8px;padding:10px;margin-bottom:10px}
.kb-card-title{font-weight:600;margin-bottom:4px}
.kb-abstain{color:#9a6700}
"""


@dataclass
class LastAnswer:
    query: str = ""
    article_id: str | None = None
    failure_mode: str | None = None


def _user_bubble(text: str) -> str:
    shown = text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "\n… (truncated)"
    # A fenced block shows the paste as text: markdown and HTML inside it stay inert.
    return "```text\n" + shown.replace("```", "ˋˋˋ") + "\n```"


def _safe_markdown(text: str) -> str:
    """Answer markdown with any HTML from the user's log shown as text, not rendered."""
    out, in_code = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            in_code = not in_code
            out.append(line)
        else:
            out.append(line if in_code else html.escape(line, quote=False))
    return "\n".join(out)


def _curve_image(signals) -> str | None:
    from assistant.plot import write_png
    from assistant.signals import NoMetrics

    path = Path(tempfile.mkstemp(prefix="kb-curve-", suffix=".png")[1])
    try:
        write_png(signals, path)
    except NoMetrics:
        path.unlink(missing_ok=True)
        return None
    return str(path)


def build_demo(assistant: Assistant, feedback: FeedbackStore) -> gr.Blocks:
    settings = assistant.settings
    articles = {a.id: a for a in load_articles(settings.articles_dir)}

    def diagnose(message: str, upload, use_llm: bool, history: list, last: LastAnswer):
        history = list(history or [])
        try:
            text = message or ""
            if upload is not None:
                text = read_text_file(Path(upload), settings.max_input_bytes)
            if not text.strip():
                raise KbError("Paste an error, a traceback or a log, or upload a log file.")
        except KbError as exc:
            history.append({"role": "assistant", "content": f"⚠️ {exc}"})
            yield history, gr.update(), gr.update(), last, ""
            return
        history.append({"role": "user", "content": _user_bubble(text)})
        history.append({"role": "assistant", "content": "Diagnosing…"})
        yield history, gr.update(), gr.update(), last, ""
        summary, composed_md = "", ""
        try:
            for item in assistant.stream(text, use_llm=use_llm):
                if isinstance(item, Prepared):
                    cards = case_cards_html(item.hits, item.abstained, item.language)
                    plot = _curve_image(item.signals)
                    top = item.hits[0].article if item.hits and not item.abstained else None
                    last = LastAnswer(
                        item.query[:4000],
                        top.id if top else None,
                        top.failure_mode if top else None,
                    )
                    composed_md = _safe_markdown(item.composed.text)
                    history[-1] = {"role": "assistant", "content": composed_md}
                    yield history, cards, plot, last, ""
                    if use_llm and not item.abstained:
                        history[-1] = {
                            "role": "assistant",
                            "content": "**Summary:** …\n\n" + composed_md,
                        }
                elif isinstance(item, str):
                    summary += item
                    history[-1] = {
                        "role": "assistant",
                        "content": "**Summary:** "
                        + _safe_markdown(summary)
                        + " …\n\n"
                        + composed_md,
                    }
                    yield history, gr.update(), gr.update(), last, ""
                elif isinstance(item, AskResult):
                    answer = item.answer
                    body = _safe_markdown(answer.text)
                    if answer.llm_text:
                        body = f"**Summary:** {_safe_markdown(answer.llm_text)}\n\n{body}"
                    elif use_llm and not item.abstained and answer.llm_note:
                        body = f"_{html.escape(answer.llm_note)}_\n\n{body}"
                    history[-1] = {"role": "assistant", "content": body}
                    yield history, gr.update(), gr.update(), last, ""
        except KbError as exc:
            history[-1] = {"role": "assistant", "content": f"⚠️ {html.escape(str(exc))}"}
            yield history, gr.update(), gr.update(), last, ""

    def rate(rating: str | None, fixed: str | None, comment: str, last: LastAnswer) -> str:
        if not last.query:
            return "Ask something first."
        try:
            feedback.add(
                Feedback(
                    query=last.query,
                    article_id=last.article_id,
                    failure_mode=last.failure_mode,
                    rating=rating,
                    fixed=fixed or None,
                    comment=comment or "",
                )
            )
        except KbError as exc:
            return f"⚠️ {exc}"
        return "Thanks: feedback recorded."

    def browse_search(query: str):
        if not query.strip():
            choices = sorted(articles)
        else:
            choices = [h.article.id for h in assistant.search(query, 10)]
        return gr.update(choices=choices, value=choices[0] if choices else None)

    def browse_show(article_id: str | None) -> str:
        if not article_id or article_id not in articles:
            return ""
        return article_html(articles[article_id])

    with gr.Blocks(title="kb — fine-tuning troubleshooter") as demo:
        gr.Markdown(
            "# kb — diagnose a failed fine-tuning run\nPaste an error, a traceback or "
            "a training log (or upload the log file). 粘贴报错、堆栈或训练日志。"
        )
        last = gr.State(LastAnswer())
        with gr.Tab("Diagnose"):
            with gr.Row():
                with gr.Column(scale=3):
                    chat = gr.Chatbot(label="kb", height=520, sanitize_html=True, elem_id="kb-chat")
                    message = gr.Textbox(
                        label="Error, traceback or log",
                        lines=6,
                        elem_id="kb-input",
                        placeholder="Paste here / 粘贴到这里",
                    )
                    with gr.Row():
                        upload = gr.File(
                            label="…or upload a log file",
                            type="filepath",
                            file_types=[".log", ".txt", ".json", ".yaml", ".yml", ".out", ".err"],
                        )
                        use_llm = gr.Checkbox(
                            value=settings.llm_backend != "none", label="Add a local-model summary"
                        )
                    send = gr.Button("Diagnose", variant="primary", elem_id="kb-send")
                    gr.Examples(EXAMPLES, inputs=[message], label="Examples")
                with gr.Column(scale=2):
                    cards = gr.HTML(label="Matched cases", elem_id="kb-cards")
                    plot = gr.Image(label="Loss curve", type="filepath", interactive=False)
                    with gr.Accordion("Was this helpful?", open=False):
                        with gr.Row():
                            helpful = gr.Button("👍 Helpful", elem_id="kb-helpful")
                            not_helpful = gr.Button("👎 Not helpful", elem_id="kb-not-helpful")
                        fixed = gr.Radio(["yes", "no", "partly"], label="Did this fix your run?")
                        comment = gr.Textbox(label="Comment (optional)", lines=2)
                        send_fb = gr.Button("Send")
                        fb_status = gr.Markdown(elem_id="kb-fb-status")
            outputs = [chat, cards, plot, last, message]
            send.click(diagnose, [message, upload, use_llm, chat, last], outputs)
            message.submit(diagnose, [message, upload, use_llm, chat, last], outputs)
            helpful.click(lambda c, lst: rate("helpful", None, c, lst), [comment, last], fb_status)
            not_helpful.click(
                lambda c, lst: rate("not_helpful", None, c, lst), [comment, last], fb_status
            )
            send_fb.click(
                lambda f, c, lst: rate(None, f, c, lst), [fixed, comment, last], fb_status
            )
        with gr.Tab("Browse articles"):
            query = gr.Textbox(label="Search the articles", elem_id="kb-browse-q")
            pick = gr.Dropdown(choices=sorted(articles), label="Article", elem_id="kb-browse-pick")
            shown = gr.HTML(elem_id="kb-article")
            query.submit(browse_search, query, pick)
            pick.change(browse_show, pick, shown)
    return demo


def create_app(settings: Settings, warm: bool = True):
    """FastAPI app with the API routes and the Gradio UI mounted at /; models load once here."""
    assistant = Assistant(settings)
    if warm:
        assistant.retriever  # noqa: B018 - load index + embedder at start-up, not on first ask
        if settings.llm_backend != "none":
            try:
                assistant.generator()
            except KbError as exc:
                log.warning("language model unavailable, answers will be composed only: %s", exc)
    feedback = FeedbackStore(settings.feedback_db)
    api = create_api(assistant, feedback)
    demo = build_demo(assistant, feedback).queue(default_concurrency_limit=2)
    return gr.mount_gradio_app(
        api,
        demo,
        path="/",
        css=CSS,
        max_file_size=settings.max_input_bytes,
        # With a token, the chat UI (and Gradio's own /gradio_api routes behind it, which would
        # otherwise answer anyone) asks for it too: any user name, the token as the password.
        auth=token_login(settings.api_token) if settings.api_token else None,
        auth_message="This kb server needs its access token (KB_API_TOKEN) as the password.",
    )


def token_login(token: str):
    def check(_username: str, password: str) -> bool:
        return hmac.compare_digest(password.encode(), token.encode())

    return check


def serve(settings: Settings) -> None:
    import uvicorn

    app = create_app(settings)
    print(
        f"kb serving on http://{settings.host}:{settings.port}  (API at /api, widget at "
        f"/widget.js)",
        flush=True,
    )
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
