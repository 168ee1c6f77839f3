"""Reading user input (argument, file or stdin) into text, with clear errors for unusable bytes."""

from __future__ import annotations

from pathlib import Path

from kb.errors import BadInput

DEFAULT_MAX_BYTES = 20 * 1024 * 1024


def decode_bytes(data: bytes, source: str) -> str:
    """UTF-8 (with BOM), then GB18030 (Chinese Windows logs); a few stray bytes are replaced.

    b"loss \\xff 0.0" -> "loss \\ufffd 0.0"; mostly-binary data raises BadInput.
    """
    if not data.strip():
        raise BadInput(f"{source} is empty: paste an error message, a traceback or a log")
    sample = data[:65536]
    if sample.count(b"\0") > len(sample) // 20:
        raise BadInput(f"{source} looks like a binary file, not a text log")
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    text = data.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(16, len(text) // 100):
        raise BadInput(f"{source} is not UTF-8 or GB18030 text (too many undecodable bytes)")
    return text


def read_text_file(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    if not path.exists():
        raise BadInput(f"no such file: {path}")
    if path.is_dir():
        raise BadInput(f"{path} is a directory, not a log file")
    size = path.stat().st_size
    if size > max_bytes:
        raise BadInput(
            f"{path} is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB limit; "
            "cut it to the part around the failure"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from exc
    return decode_bytes(data, str(path))


def read_stream(stream, max_bytes: int = DEFAULT_MAX_BYTES, source: str = "standard input") -> str:
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise BadInput(f"{source} is over the {max_bytes / 2**20:.0f} MiB limit")
    return decode_bytes(data, source)
