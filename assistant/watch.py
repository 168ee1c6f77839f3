"""Follow a growing training log and report each new anomaly or error once, as it appears."""

from __future__ import annotations

import codecs
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from assistant.errorlines import classify
from assistant.logs import Analyzer, clean
from assistant.signals import Anomaly, ErrorInfo, LogSignals

Event = Anomaly | ErrorInfo
HEAD_BYTES = 256  # remembered from the start of the file to notice it being rewritten

# Error lines outside a traceback that end a run: worth an event of their own.
_FATAL = (
    "out of memory",
    "OutOfMemoryError",
    "NCCL",
    "Bus error",
    "Segmentation fault",
    "core dumped",
    "Killed",
    "SIGKILL",
    "already at minimum",
    "exitcode",
)


class LogFollower:
    """Incremental analyzer: feed chunks of text, get back the events they revealed.

    Partial lines are held until their newline arrives; metric series are kept and only the new
    points are judged, so following a long run costs as much as reading it once.

    >>> f = LogFollower()
    >>> f.feed("{'loss': 1.0}\\n{'loss': nan}\\n")
    [Anomaly(kind='nan', metric='loss', step=None, detail='loss is nan from logged point 2')]
    """

    def __init__(self) -> None:
        self._analyzer = Analyzer()
        self._buffer = ""
        self._anomalies_seen = 0
        self._errors_seen = 0
        self._lines_seen = 0
        self._reported: set[tuple[str, str]] = set()

    def feed(self, chunk: str) -> list[Event]:
        """Take the next piece of the log; return the anomalies and errors it made visible."""
        text = self._buffer + clean(chunk)
        lines = text.split("\n")
        self._buffer = lines.pop()
        if len(self._buffer) > 1_000_000:  # a newline-less stream (one huge \r bar): keep the tail
            self._buffer = self._buffer[-100_000:]
        for line in lines:
            self._analyzer.feed_line(line)
        return self._events()

    def feed_lines(self, lines: Iterable[str]) -> Iterator[Event]:
        """Events from an iterable of lines (stdin), yielded as soon as each line reveals one."""
        for line in lines:
            yield from self.feed(line if line.endswith("\n") else line + "\n")
        yield from self.close()

    def close(self) -> list[Event]:
        """End of input: flush a last unterminated line."""
        if not self._buffer:
            return []
        rest, self._buffer = self._buffer, ""
        self._analyzer.feed_line(rest)
        return self._events()

    def reset(self) -> None:
        """The file was truncated or replaced: start a fresh analysis, keep what was reported."""
        self._analyzer = Analyzer()
        self._buffer = ""
        self._anomalies_seen = self._errors_seen = self._lines_seen = 0

    def signals(self) -> LogSignals:
        return self._analyzer.signals()

    def _events(self) -> list[Event]:
        out: list[Event] = []
        a = self._analyzer
        for anomaly in a.new_anomalies(self._anomalies_seen):
            self._anomalies_seen += 1
            if self._once(("anomaly", f"{anomaly.kind}:{anomaly.metric}")):
                out.append(anomaly)
        for err in a.errors[self._errors_seen :]:
            self._errors_seen += 1
            if self._once(("error", err.line)):
                out.append(err)
        for line in a.error_lines[self._lines_seen :]:
            self._lines_seen += 1
            if any(f in line for f in _FATAL) and classify(line) == "error":
                if self._once(("line", line)):
                    out.append(ErrorInfo("error_line", line, []))
        return out

    def _once(self, key: tuple[str, str]) -> bool:
        if key in self._reported:
            return False
        self._reported.add(key)
        return True


def follow_file(
    path: str | Path,
    poll_s: float = 0.5,
    stop: threading.Event | None = None,
    from_start: bool = True,
) -> Iterator[Event]:
    """Yield events from a growing log file until `stop` is set.

    Handles truncation (size shrinks) and rotation (a new file at the same path) by starting over.
    """
    path = Path(path)
    follower = LogFollower()
    stop = stop or threading.Event()
    handle = None
    inode = None
    pos = 0
    decoder = _decoder()
    head = b""
    try:
        while not stop.is_set():
            if handle is None:
                try:
                    handle = open(path, "rb")  # kept open across polls, closed in finally
                except FileNotFoundError:
                    stop.wait(poll_s)
                    continue
                inode = os.fstat(handle.fileno()).st_ino
                if not from_start:
                    handle.seek(0, os.SEEK_END)
                pos = handle.tell()
                head = b""
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            if st is None or st.st_ino != inode or st.st_size < pos or _rewritten(handle, head):
                # Rotated or truncated: read what is left of the old handle, then start over.
                yield from follower.feed(decoder.decode(handle.read()))
                yield from follower.close()
                handle.close()
                handle = None
                follower.reset()
                decoder = _decoder()
                from_start = True
                continue
            data = handle.read()
            if data:
                if len(head) < HEAD_BYTES and pos < HEAD_BYTES:
                    head = (head + data)[:HEAD_BYTES]
                pos = handle.tell()
                yield from follower.feed(decoder.decode(data))
            else:
                stop.wait(poll_s)
        if handle is not None:
            yield from follower.feed(decoder.decode(handle.read(), final=True))
            yield from follower.close()
    finally:
        if handle is not None:
            handle.close()


def _rewritten(handle, head: bytes) -> bool:
    """Truncated and rewritten past the old size: the first bytes are no longer the ones we read."""
    if not head:
        return False
    return os.pread(handle.fileno(), len(head), 0) != head


def _decoder() -> codecs.IncrementalDecoder:
    # A read may end inside a multi-byte character; the incremental decoder holds it back.
    return codecs.getincrementaldecoder("utf-8")(errors="replace")
