"""The HTTP JSON API (FastAPI): ask, search, articles, feedback, health, and the docs widget."""

from __future__ import annotations

import hmac
import json
import logging
import re
from pathlib import Path

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from assistant.feedback import Feedback, FeedbackStore
from assistant.redact import redact
from assistant.render import article_html
from assistant.service import AskResult, Assistant, Prepared
from kb.errors import BadInput, KbError
from kb.library import get_article

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
MAX_BODY_BYTES = 2 * 1024 * 1024  # a JSON request; bigger logs go through the web app upload
MAX_QUERY_CHARS = 1_000_000


class AskRequest(BaseModel):
    query: str = Field(..., description="An error message, a traceback, a log or a question.")
    k: int = Field(5, ge=1, le=20)
    no_llm: bool = Field(False, description="Composed answer only (no language model).")
    stream: bool = Field(False, description="Server-sent events: meta, token..., done.")


class FeedbackRequest(BaseModel):
    query: str = Field(..., max_length=MAX_QUERY_CHARS)
    article_id: str | None = None
    failure_mode: str | None = None
    rating: str | None = Field(None, description="helpful | not_helpful")
    fixed: str | None = Field(None, description="did this fix your run? yes | no | partly")
    comment: str = ""


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413 without reading them: by Content-Length
    up front, and by counting as they arrive (a chunked upload declares no length)."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        message = f"request body over {self.limit // 1024} KiB"
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            return await JSONResponse({"error": message}, status_code=413)(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            event = await receive()
            seen += len(event.get("body", b""))
            if seen > self.limit:
                # FastAPI re-raises an HTTPException from reading the body: the handler answers.
                raise HTTPException(status_code=413, detail=message)
            return event

        await self.app(scope, counted, send)


def client_error(exc: KbError) -> tuple[dict, int]:
    """The caller's own mistake is a 400 with its message. A server-side problem (a broken
    article, a missing index or model) is a 503 that names the fix and the file, without the
    server's directories (those go to the log)."""
    if isinstance(exc, BadInput):
        return {"error": str(exc)}, 400
    log.error("server-side error answering a request: %s", exc)
    message = _SERVER_PATH.sub(lambda m: m.group(2), str(exc))
    return {"error": f"{message} (server-side: the maintainer should run kb validate)"}, 503


# "/srv/kb/articles/foo.md" -> "foo.md"; any absolute directory prefix is the server's business.
_SERVER_PATH = re.compile(r"(/[^\s:'\"]*/)([^/\s:'\"]+)")


def create_api(assistant: Assistant, feedback: FeedbackStore) -> FastAPI:
    settings = assistant.settings
    api = FastAPI(
        title="kb",
        version="0.1.0",
        description="Diagnose failed LLM fine-tuning runs from errors and logs.",
    )
    if settings.cors_origins:
        api.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )

    api.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)

    def require_token(request: Request) -> None:
        if not settings.api_token:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {settings.api_token}".encode()):
            raise HTTPException(status_code=401, detail="missing or wrong bearer token")

    @api.exception_handler(KbError)
    async def kb_error(request: Request, exc: KbError):
        body, status = client_error(exc)
        return JSONResponse(body, status_code=status)

    # Starlette's own HTTPException too: FastAPI raises it for a body it cannot parse, 404, 405.
    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    from fastapi.exceptions import RequestValidationError

    @api.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", []) if p != "body")
        message = first.get("msg", "invalid request")
        return JSONResponse(
            {"error": f"bad request: {where}: {message}" if where else f"bad request: {message}"},
            status_code=400,
        )

    @api.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok", "articles": len(assistant.retriever.index.articles)}

    @api.post("/api/ask", dependencies=[Depends(require_token)])
    async def ask(req: AskRequest):
        if len(req.query) > MAX_QUERY_CHARS:
            raise HTTPException(status_code=413, detail="query is too long")
        if req.stream:
            return StreamingResponse(_sse(assistant, req), media_type="text/event-stream")
        result = await run_in_threadpool(assistant.ask, req.query, req.k, not req.no_llm)
        return result.to_dict()

    @api.get("/api/search", dependencies=[Depends(require_token)])
    async def search(q: str, k: int = 5):
        if not 1 <= k <= 50:
            raise HTTPException(status_code=400, detail="k must be between 1 and 50")
        hits = await run_in_threadpool(assistant.search, q, k)
        return {"query": redact(q), "hits": [h.to_dict() for h in hits]}

    @api.get("/api/articles/{article_id}", dependencies=[Depends(require_token)])
    def article(article_id: str):
        return get_article(settings.articles_dir, article_id).to_dict()

    @api.get("/articles/{article_id}", response_class=HTMLResponse)
    def article_page(article_id: str):
        a = get_article(settings.articles_dir, article_id)
        return HTMLResponse(
            f"<!doctype html><meta charset='utf-8'><title>kb</title>"
            f"<body style='font-family:sans-serif;max-width:50em;margin:auto'>"
            f"{article_html(a)}</body>"
        )

    @api.post("/api/feedback", dependencies=[Depends(require_token)])
    def post_feedback(req: FeedbackRequest):
        row = feedback.add(
            Feedback(
                query=redact(req.query),
                article_id=req.article_id,
                failure_mode=req.failure_mode,
                rating=req.rating,
                fixed=req.fixed,
                comment=redact(req.comment),
            )
        )
        return {"id": row}

    @api.get("/widget.js")
    def widget() -> Response:
        return Response(
            (STATIC / "widget.js").read_text(encoding="utf-8"),
            media_type="application/javascript",
            headers={"Cache-Control": "no-cache"},
        )

    return api


async def _sse(assistant: Assistant, req: AskRequest):
    def event(name: str, data: object) -> str:
        return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    try:
        async for item in iterate_in_threadpool(
            assistant.stream(req.query, req.k, use_llm=not req.no_llm)
        ):
            if isinstance(item, Prepared):
                yield event(
                    "meta", {"abstained": item.abstained, "hits": [h.to_dict() for h in item.hits]}
                )
            elif isinstance(item, str):
                yield event("token", item)
            elif isinstance(item, AskResult):
                yield event("done", item.to_dict())
    except KbError as exc:
        yield event("error", client_error(exc)[0])
