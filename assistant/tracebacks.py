"""Python tracebacks in a log, possibly interleaved from several ranks: frames and the exception."""

from __future__ import annotations

import re

from assistant.signals import ErrorInfo

# "[rank0]: ", "[default3]:", "rank1: ", "[1,0]<stderr>:"; pdsh "worker-2: " only before a traceback
_PREFIX = re.compile(
    r"^\s*(\[(?:rank|default|RANK)\s?\d+\]\s*:?|rank\s?\d+\s*:|\[\d+,\d+\]<std(?:err|out)>:)\s?"
)
_HOST_PREFIX = re.compile(
    r"^([\w.-]{1,40}): (?=Traceback \(|\s+File \"|[\w.]*(?:Error|Exception)\b)"
)
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)(?:, in (.+))?')
_EXC = re.compile(
    r"^([A-Za-z_][\w.]{0,100}?(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault|Timeout"
    r"|StopIteration|Exceeded)|[a-z_][\w]*(?:\.[\w]+)+\.[A-Z]\w*)(?::\s?(.*))?$"
)
MAX_FRAMES = 5
MAX_NOISE = 30  # unrelated lines tolerated inside a traceback before we call it cut off


def split_prefix(line: str) -> tuple[str, str]:
    """Rank prefix and the rest.

    "[rank1]: Traceback (most recent call last):" -> ("[rank1]:", "Traceback (most recent ...")
    """
    c = line[:1]
    if c in "[r \t":
        m = _PREFIX.match(line)
        if m:
            return m.group(1).replace(" ", ""), line[m.end() :]
    elif ": " in line[:42]:
        m = _HOST_PREFIX.match(line)
        if m:
            return m.group(1), line[m.end() :]
    return "", line


def short_frame(path: str, lineno: str, func: str | None) -> str:
    """A frame as "file:line function", library paths cut after site-packages.

    '/x/site-packages/transformers/trainer.py', '1234', 'train'
        -> 'transformers/trainer.py:1234 train'
    """
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        i = p.rfind(marker)
        if i >= 0:
            p = p[i + len(marker) :]
            break
    else:
        p = "/".join(p.split("/")[-2:])
    return f"{p}:{lineno} {func.strip()}" if func else f"{p}:{lineno}"


class _Open:
    __slots__ = ("frames", "noise")

    def __init__(self) -> None:
        self.frames: list[str] = []
        self.noise = 0


class TracebackCollector:
    """Feed prefix-stripped lines; `feed` returns the ErrorInfo when a traceback completes.

    ["Traceback (most recent call last):", '  File "a.py", line 3, in <module>',
     "    main()", "ValueError: bad"] -> ErrorInfo("ValueError", "bad", ["a.py:3 <module>"])
    One traceback is followed per rank prefix, so interleaved ranks do not mix frames.
    """

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self.cut_off = 0  # tracebacks that never reached their exception line

    @property
    def pending(self) -> bool:
        return bool(self._open)

    def feed(self, key: str, line: str) -> ErrorInfo | None:
        if line.startswith("Traceback (most recent call last)"):
            if key in self._open:
                self.cut_off += 1
            self._open[key] = _Open()
            return None
        tb = self._open.get(key)
        if tb is None:
            return None
        m = _FRAME.match(line)
        if m:
            tb.frames.append(short_frame(*m.groups()))
            if len(tb.frames) > 50:
                del tb.frames[:-MAX_FRAMES]
            return None
        if not line or line[0] in " \t^~" or not line.strip():
            return None  # source lines, carets, blank lines
        m = _EXC.match(line.strip())
        if m:
            del self._open[key]
            message = (m.group(2) or "").strip()
            return ErrorInfo(m.group(1), message[:500], tb.frames[-MAX_FRAMES:])
        tb.noise += 1
        if tb.noise > MAX_NOISE:
            del self._open[key]
            self.cut_off += 1
        return None

    def finish(self) -> int:
        """Count the tracebacks left open at the end of the text (cut off by the paste)."""
        self.cut_off += len(self._open)
        self._open.clear()
        return self.cut_off
