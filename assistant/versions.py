"""Library versions named in a log: pip lists, env dumps, "transformers==4.46.0"."""

from __future__ import annotations

import re

PACKAGES = (  # the libraries whose versions tell; the rest of a pip list is noise
    "torch",
    "transformers",
    "trl",
    "peft",
    "deepspeed",
    "accelerate",
    "bitsandbytes",
    "flash-attn",
    "flash_attn",
    "vllm",
    "datasets",
    "tokenizers",
    "xformers",
    "llamafactory",
    "llmtuner",
    "ms-swift",
    "openrlhf",
    "axolotl",
    "unsloth",
    "verl",
    "safetensors",
    "triton",
    "numpy",
    "megatron-core",
    "apex",
    "pytorch",
    "python",
    "cuda",
)
_PKG = "|".join(re.escape(p) for p in sorted(PACKAGES, key=len, reverse=True))
# Applied at each occurrence of a package name in lower-cased text (found with str.find).
_VERSION_AT = re.compile(
    r"`?(?:\s+version)?(?:\s*\(gpu\?\))?(?:\s*(?:==|:|=|\s|\.{3,})\s*)v?"
    r"(\d+\.\d+(?:\.\d+)?(?:[\w.+\-]*\w)?)"
)
_MAX_OCCURRENCES = 300  # "torch" appears in every traceback path; the version is near the top
_PIP_LIST = re.compile(r"^(" + _PKG + r")[ \t]{2,}(\d+\.\d+[\w.+\-]*)[ \t]*$", re.M | re.I)


def extract_versions(text: str) -> dict[str, str]:
    """Library versions.

    "transformers==4.46.0", "- `transformers` version: 4.46.0", "deepspeed 0.14.3",
    "torch version .......... 2.1.0+cu121", "- PyTorch version (GPU?): 2.1.0 (True)"
        -> {"transformers": "4.46.0", "deepspeed": "0.14.3", "torch": "2.1.0+cu121"}
    """
    found: dict[str, str] = {}
    for name, version in _PIP_LIST.findall(text):
        found.setdefault(_package(name), version)
    low = text.lower()
    for pkg in PACKAGES:
        key = _package(pkg)
        if key in found:
            continue
        start, seen = 0, 0
        while seen < _MAX_OCCURRENCES:
            i = low.find(pkg, start)
            if i < 0:
                break
            seen += 1
            start = i + len(pkg)
            before = low[i - 1] if i else " "
            after = low[start] if start < len(low) else " "
            if before.isalnum() or before in "_/.-" or after.isalnum() or after in "_-/":
                if not (before == "`" or after == "`"):
                    continue
            m = _VERSION_AT.match(low, start)
            if m:
                found[key] = text[m.start(1) : m.end(1)]
                break
    return found


def _package(name: str) -> str:
    n = name.lower().replace("_", "-")
    return {"pytorch": "torch", "llmtuner": "llamafactory"}.get(n, n)
