"""Turn a pasted log into LogSignals: metrics, anomalies, tracebacks, error lines and the setting.

`Analyzer` reads line by line and keeps its state, so `assistant.watch` can feed a growing file;
`analyze(text)` is the one-shot entry point.
"""

from __future__ import annotations

import copy
import json
import re
from collections import deque

from assistant.anomalies import AnomalyMonitor
from assistant.context import extract_context
from assistant.errorlines import classify
from assistant.generation_talk import pad_as_eos_never_stops
from assistant.metrics import (
    RecordShape,
    parse_plain,
    parse_progress,
    parse_record,
    record_from_dict,
    record_shape,
)
from assistant.signals import Anomaly, ErrorInfo, LogSignals, Point
from assistant.tracebacks import TracebackCollector, split_prefix
from assistant.version_talk import version_change
from kb.signatures import WRAPPER, WRAPPER_ERRORS

MAX_REGEX_LINE = 10_000  # longer lines get only a cheap scan: no regex runs on them
MAX_ERROR_LINES = 60
CONTEXT_HEAD_CHARS = 3_000_000  # unique non-metric text kept for the setting (config, versions)
CONTEXT_TAIL_LINES = 3_000
MAX_JSON_BLOCK = 60  # lines of a multi-line JSON record (trainer_state.json log_history entry)
MAX_SHAPES = 8  # record shapes remembered; a Trainer log alternates two or three (train, eval)
BULK_ROWS = 16  # shorter runs of records are read record by record
RUN_BLOCK = 16  # lines of a run matched one by one before it is read in blocks of 64, 256, ...
MAX_RUN_BLOCK = 4096

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\x1b\][^\x07\n]*\x07?")
_JUNK_BYTES = bytes(
    [*range(0, 9), 11, 12, *range(14, 27), *range(28, 32), 127]
)  # keep \t \n \r, ESC
_DS_OVERFLOW = re.compile(r"OVERFLOW!.*?(?:reducing to|reducing loss scale to)\s*([\d.e+]+)", re.I)
_APEX_OVERFLOW = re.compile(
    r"Gradient overflow\.\s+Skipping step.*?reducing loss scale to\s*([\d.e+]+)"
)
# Bars for loading, preprocessing and evaluation: their counters are not training steps.
_AUX_BAR = re.compile(
    r"Loading|Map|Generat|Token|Filter|Download|Fetch|Convert|Preprocess|Running|Dataset|Batches"
    r"|Extract|Resolv|Eval|eval|Upload|Saving|Packing|Sampl|Shard",
)
_PREFIX_STARTS = ("[rank", "[default", "rank", "[RANK", "[1,", " [rank", "\t[rank")
_HOSTISH = "Traceback"
_DS_STEP = re.compile(r"\bstep=(\d+), skipped=(\d+)")


def clean(text: str) -> str:
    """Drop ANSI codes, NULs and control bytes; CRLF -> LF.

    "\\x1b[32mok\\x1b[0m\\r\\n" -> "ok\\n"
    """
    # bytes.translate deletes control bytes at memory speed; a regex over 20 MB is 10x slower.
    # Control characters are ASCII, so deleting them from the UTF-8 bytes is exact.
    data = text.encode("utf-8", errors="replace").translate(None, _JUNK_BYTES)
    text = data.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text).replace("\x1b", "")
    if "\ufffd" in text or "\ufeff" in text:
        text = text.replace("\ufffd", "").replace("\ufeff", "")
    return text.replace("\r\n", "\n")


def _progress_like(seg: str) -> bool:
    return "%|" in seg or "it/s]" in seg or "s/it]" in seg


def carriage_segments(line: str) -> list[str]:
    """Resolve "\\r" redraws: keep each progress bar's last state before other output.

    "10%|█ | 1/10\\r20%|██ | 2/10\\r{'loss': 0.5}\\r30%|███ | 3/10"
        -> ["20%|██ | 2/10", "{'loss': 0.5}", "30%|███ | 3/10"]
    """
    out: list[str] = []
    pending = None
    for seg in line.split("\r"):
        if not seg.strip():
            continue
        if _progress_like(seg):
            pending = seg
            continue
        if pending is not None:
            out.append(pending)
            pending = None
        out.append(seg)
    if pending is not None:
        out.append(pending)
    return out


class Analyzer:
    """Incremental log reader: feed lines, read `signals()` at any time."""

    def __init__(self) -> None:
        self.metrics: dict[str, list[Point]] = {}
        self.monitor = AnomalyMonitor()
        self.tracebacks = TracebackCollector()
        self.errors: list[ErrorInfo] = []
        self._error_keys: set[tuple[str, str]] = set()
        self.error_lines: list[str] = []
        self._error_line_keys: set[str] = set()
        self.has_error_line = False
        self._seen: set[str] = set()
        self._head: list[str] = []
        self._head_chars = 0
        self._tail: deque[str] = deque(maxlen=CONTEXT_TAIL_LINES)
        self._step: int | None = None  # the last step any line told us about
        self._bar_total: int | None = None  # total of the training progress bar
        self._ordinal = 0
        self._json_block: list[str] | None = None
        self._last_bar: str | None = None
        self._shapes: list[RecordShape] = []  # most recently used first

    # -- feeding -----------------------------------------------------------------------------
    def feed_text(self, text: str) -> None:
        text = clean(text)
        stripped = text.lstrip()
        if stripped[:1] == "{" and '"log_history"' in text[:200_000] and self._trainer_state(text):
            return
        self.feed_lines(text.split("\n"))

    def feed_lines(self, lines: list[str]) -> None:
        """feed_line() for each line, reading runs of same-shape metric records in bulk."""
        feed, i, n = self.feed_line, 0, len(lines)
        while i < n:
            line = lines[i]
            if line[:1] == "{" and self._json_block is None and not self.tracebacks._open:
                taken = self._record_run(lines, i)
                if taken:
                    i += taken
                    continue
            feed(line)
            i += 1

    def feed_line(self, line: str) -> None:
        if "\r" not in line:
            self._line(line)
        elif "{" in line or "rror" in line or "Traceback" in line or not _progress_like(line):
            for seg in carriage_segments(line):
                self._line(seg)
        else:
            # Only redraws of a progress bar: its last state is all that counts.
            last = line.rstrip("\r \t").rsplit("\r", 1)[-1]
            if "=" in last or "|" not in last or len(last) > MAX_REGEX_LINE:
                self._line(last)
            else:
                self._last_bar = last  # parsed only when a record needs its step

    def _line(self, line: str) -> None:
        if len(line) > MAX_REGEX_LINE:
            self._cheap_scan(line)
            return
        if self._json_block is not None:
            self._continue_json(line)
            return
        if line.startswith(_PREFIX_STARTS) or (_HOSTISH in line and ": " in line[:42]):
            prefix, body = split_prefix(line)
        else:
            prefix, body = "", line
        in_traceback = False
        if self.tracebacks._open or body.startswith("Traceback"):
            err = self.tracebacks.feed(prefix, body)
            if err is not None:
                self._add_error(err)
                return
            # Frames and source lines belong to the traceback, not to the error lines.
            in_traceback = self.tracebacks.pending and (
                body[:1] in " \t" or body[:9] == "Traceback"
            )
        if self._metric_line(body):
            return
        if body in self._seen:
            return
        if len(self._seen) < 200_000:
            self._seen.add(body)
        self._keep_context(body)
        if not in_traceback:
            self._check_error_line(body)

    def _metric_line(self, body: str) -> bool:
        if "{" in body:
            stripped = body.strip()
            if stripped == "{":
                self._json_block = [stripped]
                return True
            if ":" in body and ("'" in body or '"' in body):
                rec = parse_record(body)
                if rec is not None:
                    self._record(*rec)
                    return True
        if "|" in body and "/" in body and _progress_like(body):
            if "=" in body:
                self._bar(body)  # postfix metrics (loss=...) on every redraw
            else:
                self._last_bar = body  # parsed only when a record needs its step
            return True
        low = body.lower() if ("oss" in body or "OSS" in body or "norm" in body) else ""
        if "loss" in low or "norm" in low:
            plain = parse_plain(body)
            if plain is not None:
                self._record(*plain)
                return True
        self._deepspeed(body)
        return False

    def _record_run(self, lines: list[str], start: int) -> int:
        """Read the flat records from lines[start] on in bulk, as _line would one by one.

        Returns how many lines it took (0: lines[start] is no flat record). A run holds only
        metric lines, which leave the traceback, JSON-block and context state alone, so taking
        them together changes nothing but the time. Past its first lines a run is read in
        blocks, one findall over the joined block, while every line of a block matches.
        """
        shape = self._shape(lines[start])
        if shape is None:
            return 0
        match, rows, i, n = shape.pattern.fullmatch, [], start, len(lines)
        block = RUN_BLOCK
        while i < n:
            if i - start < RUN_BLOCK:  # line by line at first: most runs are a single record
                m = match(lines[i]) if len(lines[i]) <= MAX_REGEX_LINE else None
                if m is None:
                    break
                rows.append(m.groups())
                i += 1
                continue
            chunk = lines[i : i + block]
            if max(map(len, chunk)) <= MAX_REGEX_LINE:
                found = shape.lines.findall("\n".join(chunk))
                if len(found) == len(chunk):  # at most one match a line: every line matched
                    rows += found if shape.pattern.groups > 1 else [(t,) for t in found]
                    i += len(chunk)
                    block = min(block * 4, MAX_RUN_BLOCK)
                    if len(rows) >= MAX_RUN_BLOCK:  # hand on as we go: the tokens take memory
                        self._records(shape, rows)
                        rows = []
                    continue
            for line in chunk:  # the run ends in this chunk: find where
                m = match(line) if len(line) <= MAX_REGEX_LINE else None
                if m is None:
                    break
                rows.append(m.groups())
                i += 1
            break
        if rows:
            self._records(shape, rows)
        return i - start

    def _shape(self, line: str) -> RecordShape | None:
        """The shape `line` has: a remembered one, else a new one; None if it is no flat record."""
        shapes = self._shapes
        for i, shape in enumerate(shapes):
            if shape.pattern.fullmatch(line):
                if i:
                    shapes.insert(0, shapes.pop(i))
                return shape
        if len(line) > MAX_REGEX_LINE:
            return None
        shape = record_shape(line)
        if shape is None:
            return None
        shapes.insert(0, shape)
        del shapes[MAX_SHAPES:]
        return shape

    def _records(self, shape: RecordShape, rows: list[tuple[str, ...]]) -> None:
        """_record() for each row of number tokens read by `shape`, series by series."""
        pairs = list(zip(shape.names, shape.columns, strict=True))
        sc = shape.step_column
        if len(rows) < BULK_ROWS:
            # A record between progress bars: per record is cheaper than setting up columns.
            for row in rows:
                try:
                    values = {name: float(row[col]) for name, col in pairs}
                    step = None if sc is None else _step_of(float(row[sc]))
                except ValueError:
                    self.feed_line(shape.line(row))
                    continue
                self._record(step, values)
            return
        try:
            columns = {name: [float(row[col]) for row in rows] for name, col in pairs}
            steps = None if sc is None else [_step_of(float(row[sc])) for row in rows]
        except ValueError:
            # A token that is not a number (garbled or hostile): read these lines one by one.
            for row in rows:
                self.feed_line(shape.line(row))
            return
        if steps is not None:
            if None in steps:  # an unusable step: _record falls back to the bar's counter
                for i, step in enumerate(steps):
                    self._record(step, {name: columns[name][i] for name, _ in pairs})
                return
            self._step = steps[-1]
        else:
            # The first record takes the step the progress bar shows; with no bar line between
            # them, the others take what _record would give them: the same step, or None.
            first = self._current_step() if self._bar_total or self._last_bar else None
            if first is not None:
                self._step = first
            rest = self._step if self._bar_total else None
            steps = [first] + [rest] * (len(rows) - 1)
        self._ordinal += len(rows)
        for name, values in columns.items():
            series = self.metrics.get(name)
            if series is None:
                series = self.metrics[name] = []
            series.extend(zip(steps, values, strict=True))
        self.monitor.add_records(steps, columns)

    def _bar(self, body: str) -> None:
        prog = parse_progress(body)
        if prog is None:
            return
        done, total, values = prog
        if total > (self._bar_total or 1) and not _AUX_BAR.search(body[:60]):
            self._bar_total = total  # the training bar is the longest non-data bar
        if total == self._bar_total:
            self._step = done
            if values:
                self._record(done, values)
        # Otherwise an eval or data-loading bar: its counter is not the training step.

    def _current_step(self) -> int | None:
        if self._last_bar is not None:
            bar, self._last_bar = self._last_bar, None
            self._bar(bar)
        return self._step

    def _deepspeed(self, body: str) -> None:
        if "OVERFLOW" in body or "overflow" in body:
            m = _DS_OVERFLOW.search(body) or _APEX_OVERFLOW.search(body)
            if m or "Skipping step" in body:
                reduced = _float(m.group(1)) if m else None
                step = self._current_step()
                self.monitor.overflow(step, reduced)
                if reduced is not None:
                    self._add_point("loss_scale", step, reduced)
        if "already at minimum" in body or "at minimum loss scale" in body:
            self.monitor.scale_at_minimum(self._current_step())
        if "skipped=" in body:
            m = _DS_STEP.search(body)
            if m:
                self._step = int(m.group(1))

    def _record(self, step: int | None, values: dict[str, float]) -> None:
        if step is None:
            # An eval dict follows the train step it ran at; a train dict the bar's counter.
            step = self._current_step() if self._bar_total or self._last_bar else None
        if step is not None:
            self._step = step
        self._ordinal += 1
        metrics, add = self.metrics, self.monitor.add
        for name, value in values.items():
            series = metrics.get(name)
            if series is None:
                series = metrics[name] = []
            series.append((step, value))
            add(name, step, value)

    def _add_point(self, name: str, step: int | None, value: float) -> None:
        series = self.metrics.get(name)
        if series is None:
            series = self.metrics[name] = []
        series.append((step, value))
        self.monitor.add(name, step, value)

    def _continue_json(self, line: str) -> None:
        block = self._json_block
        block.append(line.strip())
        if line.strip().startswith("}") or len(block) > MAX_JSON_BLOCK:
            self._json_block = None
            text = " ".join(block).rstrip(",")
            rec = parse_record(text) if len(block) <= MAX_JSON_BLOCK else None
            if rec is not None:
                self._record(*rec)
            else:
                for held in block[1:]:
                    self._line(held)

    def _trainer_state(self, text: str) -> bool:
        """A whole trainer_state.json: read its log_history in one go."""
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return False
        history = doc.get("log_history") if isinstance(doc, dict) else None
        if not isinstance(history, list):
            return False
        for entry in history:
            if isinstance(entry, dict):
                rec = record_from_dict(entry)
                if rec is not None:
                    self._record(*rec)
        self._keep_context(json.dumps({k: v for k, v in doc.items() if k != "log_history"}))
        return True

    def _add_error(self, err: ErrorInfo) -> None:
        # The same error from eight ranks differs only in "GPU 3" / "rank 3".
        key = (err.type, re.sub(r"\d+", "#", err.message))
        if key not in self._error_keys:
            self._error_keys.add(key)
            self.errors.append(err)
        self._keep_context(err.line)
        for frame in err.frames:
            self._keep_context(frame)

    def _check_error_line(self, body: str) -> None:
        kind = classify(body)
        if kind is None:
            return
        if kind == "error" and not WRAPPER.search(body):
            self.has_error_line = True
        text = body.strip()[:300]
        key = re.sub(r"\d+", "#", text[:120])
        if key in self._error_line_keys or len(self.error_lines) >= MAX_ERROR_LINES:
            return
        self._error_line_keys.add(key)
        self.error_lines.append(text)

    def _cheap_scan(self, line: str) -> None:
        for needle in ("Error", "error:", "Traceback", "nan"):
            i = line.find(needle)
            if i >= 0:
                self._check_error_line(line[max(0, i - 100) : i + 200])
                return

    def _keep_context(self, body: str) -> None:
        if self._head_chars < CONTEXT_HEAD_CHARS:
            self._head.append(body)
            self._head_chars += len(body) + 1
        else:
            self._tail.append(body)

    # -- results -----------------------------------------------------------------------------
    def new_anomalies(self, since: int) -> list[Anomaly]:
        """Anomalies found after the first `since`, running the whole-series checks first."""
        self.monitor.check_series()
        return self.monitor.found[since:]

    def signals(self) -> LogSignals:
        # finish() a copy: a followed log goes on after this snapshot.
        anomalies = copy.deepcopy(self.monitor).finish()
        context_text = "\n".join(self._head) + "\n" + "\n".join(self._tail)
        ctx = extract_context(context_text, set(self.metrics))
        return LogSignals(
            metrics={k: list(v) for k, v in self.metrics.items()},
            anomalies=anomalies,
            errors=list(self.errors),
            error_lines=list(self.error_lines),
            flags=ctx.flags,
            versions=ctx.versions,
            model=ctx.model,
            stage=ctx.stage,
            framework=ctx.framework,
            hardware=ctx.hardware,
            precision=ctx.precision,
            has_error_text=self.has_error_line
            or any(not e.type.endswith(WRAPPER_ERRORS) for e in self.errors),
            version_change=version_change(context_text),
            pad_eos_endless=pad_as_eos_never_stops(context_text),
        )


def analyze(text: str) -> LogSignals:
    """Everything kb can read from a log, a traceback or a pasted report.

    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.1}" -> LogSignals(
        metrics={"loss": [(None, 0.0)], "grad_norm": [(None, nan)], ...},
        anomalies=[Anomaly("grad_norm_nan", ...), Anomaly("zero_collapse", ...)], ...)
    """
    analyzer = Analyzer()
    analyzer.feed_text(text)
    return analyzer.signals()


def analyze_bytes(data: bytes) -> LogSignals:
    """Like analyze(), for raw bytes: invalid UTF-8 is replaced, NULs and binary junk dropped."""
    return analyze(data.decode("utf-8", errors="replace"))


def _step_of(value: float) -> int | None:
    """int() of a step read as a float; None for nan and inf, as metrics._int gives."""
    try:
        return int(value)
    except (ValueError, OverflowError):
        return None


def _float(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None
