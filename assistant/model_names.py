"""The model a log trains: its name, family ("qwen2.5") and size in billions, from flags or text."""

from __future__ import annotations

import re
from collections import Counter

_FAMILIES = (
    "codellama",
    "tinyllama",
    "llama",
    "qwen",
    "mistral",
    "mixtral",
    "gemma",
    "phi",
    "baichuan",
    "chatglm",
    "glm",
    "internlm",
    "yi",
    "deepseek",
    "falcon",
    "bloom",
    "gpt2",
    "gpt-neox",
    "pythia",
    "starcoder",
    "olmo",
    "smollm",
    "minicpm",
    "opt",
)
_FAM = "(?:" + "|".join(_FAMILIES) + ")(?![a-z])"
_FAMILY = re.compile(
    "(" + _FAM + r")(?:[-_ ]?v?(\d+(?:\.\d+)?)(?![\d.]*[bBmMkK](?![a-zA-Z])|x\d))?",
    re.IGNORECASE,
)
_HF_ID = re.compile(
    r"(?<![\w./-])([A-Za-z0-9][\w.-]{1,40})/((?:[\w.-]*[-_.])?" + _FAM + r"[\w.-]*)",
    re.IGNORECASE,
)
_CACHE_ID = re.compile(r"models--([\w.-]+?)--([\w.-]+)")
_BARE_MODEL = re.compile(
    r"(?<![\w/.-])((?:meta-)?(?:" + "|".join(_FAMILIES) + r")[-_]?v?\d[\w.-]*)", re.IGNORECASE
)
_SIZE = re.compile(r"(?<![\w.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bBmM])(?![a-zA-Z])")
_BARE_SIZE = re.compile(r"(?<![\w.])(0\.5|1\.5|1\.8|1\.1|\d{1,3})\s?[bB](?![\w.])")
_KNOWN_SIZES = {
    0.5,
    1,
    1.1,
    1.5,
    1.8,
    2,
    3,
    4,
    6,
    7,
    8,
    9,
    13,
    14,
    27,
    32,
    33,
    34,
    40,
    65,
    70,
    72,
    110,
    175,
    236,
    405,
    671,
}
_MODEL_FLAGS = (
    "model_name_or_path",
    "pretrain",
    "base_model",
    "model_id",
    "model_path",
    "model",
    "model_name",
    "model_type",
)


def extract_model(text: str, flags: dict[str, str]) -> dict:
    """{"name", "family", "size_b"} from flags, HF ids, cache paths or bare names; {} if none."""
    name = None
    for key in _MODEL_FLAGS:
        value = (flags.get(key) or "").split(" ", 1)[0]
        if value and _FAMILY.search(value.rsplit("/", 1)[-1]):
            name = _model_id(value)
            break
    if name is None:
        ids = Counter(
            f"{a}/{b}" for a, b in _HF_ID.findall(text) if not b.endswith((".py", ".json"))
        )
        cache = _CACHE_ID.search(text)
        if cache:
            name = f"{cache.group(1)}/{cache.group(2)}"
        elif ids:
            name = ids.most_common(1)[0][0]
        else:
            bare = _BARE_MODEL.search(text)
            name = bare.group(1).rstrip(".-_") if bare else None
    size = _size_of(name.rsplit("/", 1)[-1]) if name else None
    if size is None:
        sizes = Counter(float(s) for s in _BARE_SIZE.findall(text) if float(s) in _KNOWN_SIZES)
        size = sizes.most_common(1)[0][0] if sizes else None
    if name is None and size is None:
        return {}
    return {"name": name, "family": family_of(name) if name else None, "size_b": size}


def _model_id(value: str) -> str:
    value = value.strip().rstrip("/")
    parts = value.replace("\\", "/").split("/")
    if len(parts) > 2 or value.startswith(("/", ".", "~")):
        return parts[-1]  # a local path: its last component names the model
    return value


def family_of(name: str) -> str | None:
    """Family with its version; a number before B/M is a size, not a version.

    'Meta-Llama-3.1-8B-Instruct' -> 'llama3.1', 'Qwen2.5-7B' -> 'qwen2.5', 'Mistral-7B' -> 'mistral'
    """
    m = _FAMILY.search(name.rsplit("/", 1)[-1])
    if not m:
        return None
    return m.group(1).lower() + (m.group(2) or "")


def _size_of(name: str) -> float | None:
    for experts, num, unit in _SIZE.findall(name):
        value = float(num) * (int(experts) if experts else 1)
        return value / 1000 if unit in "mM" else value
    return None
