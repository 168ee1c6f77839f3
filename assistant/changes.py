"""What the fix changes in *this* run: the user's settings beside the values the snippet sets.

"fp16: true -> false, zero_stage: 2 -> 3" says in one line what a 40-line snippet means for the
config the user already has; only settings read from their own log or config are compared.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from assistant.guard import name_uses, strip_comments
from kb.articles import Article, Snippet

# DeepSpeed JSON paths that the log analyzer reports under a flat name.
_JSON_PATHS = {
    ("zero_optimization", "stage"): "zero_stage",
    ("fp16", "enabled"): "fp16",
    ("bf16", "enabled"): "bf16",
}
MAX_CHANGES = 6
# GPUs without native bf16 (before Ampere): transformers refuses bf16=True on them.
NO_BF16_GPUS = ("V100", "T4", "P100", "P40", "K80", "2080Ti")
_PRECISION_KEYS = ("bf16", "fp16", "pure_bf16", "bf16_full_eval", "fp16_full_eval")
NOT_SET = {"en": "(not set)", "zh": "（未设置）"}
_BF16_ON_KEYS = ("bf16", "pure_bf16", "bf16_full_eval")
_CAPABILITY_CHECKS = ("get_device_capability", "is_bf16_supported")


@dataclass(frozen=True)
class Change:
    key: str
    yours: str | None  # None: the user's run does not show this setting
    fix: str

    def __str__(self) -> str:
        return self.text("en")

    def text(self, language: str) -> str:
        yours = NOT_SET.get(language, NOT_SET["en"]) if self.yours is None else self.yours
        return f"{self.key}: {yours} → {self.fix}"


def snippet_settings(snippet: Snippet) -> dict[str, str]:
    """The settings a snippet assigns, by name: kwargs, CLI flags, YAML keys, DeepSpeed JSON."""
    code = snippet.code
    if snippet.language == "json":
        try:
            data = json.loads(code)
        except ValueError:
            return {}
        out = {}
        for (section, key), name in _JSON_PATHS.items():
            value = data.get(section, {}).get(key) if isinstance(data.get(section), dict) else None
            if value is not None:
                out[name] = json.dumps(value).strip('"')
        return out
    if snippet.language not in ("python", "bash", "yaml"):
        return {}
    # The guard's reader of `name=value`, `name: value` and `--flag value` (also LLaMA-Factory's
    # `bf16=true` overrides after the YAML), on the code without its comments.
    out = {}
    for use in name_uses(strip_comments(code)):
        value = use.value
        if value is None or value.startswith(("-", "\\")):
            value = "true"  # a bare flag: "--fp16", "--fp16 --bf16", "--fp16 \\"
        out.setdefault(use.name, value.strip("'\""))
    return out


def lacks_bf16(hardware: str | None) -> bool:
    return hardware in NO_BF16_GPUS


def bf16_in_fix(article: Article) -> bool:
    """The fix itself is about bf16 (switch to it, or what to do without it)."""
    return "bf16" in " ".join(article.fix).lower()


def enables_bf16(snippet: Snippet) -> bool:
    """True when following the snippet puts bf16 on the GPU (a flag, a key, a bfloat16 dtype).

    "bf16=True  # not fp16" and `"bf16": {"enabled": true}` do; "fp16: true  # no bf16 here"
    does not (comments are not read), nor does code that picks bf16 only after checking the GPU
    (`bf16=torch.cuda.get_device_capability()[0] >= 8`).
    """
    code = snippet.code if snippet.language == "json" else strip_comments(snippet.code)
    if any(check in code for check in _CAPABILITY_CHECKS):
        return False
    settings = snippet_settings(snippet)
    if any(_same(settings.get(key, "false"), "true") for key in _BF16_ON_KEYS):
        return True
    return "bfloat16" in code


def changes_for_run(
    snippets: list[Snippet],
    flags: dict[str, str],
    fix_words: set[str],
    hardware: str | None = None,
) -> list[Change]:
    """Settings of the user's run that the snippets change, in snippet order.

    Settings the user did not show are listed as additions only for names the fix itself is
    about, and only beside a real change: otherwise kb cannot tell what their run has.
    """
    changed: dict[str, Change] = {}
    added: dict[str, Change] = {}
    for snippet in snippets:
        for key, fix_value in snippet_settings(snippet).items():
            if key in changed or key in added or _unknown(fix_value):
                continue
            if lacks_bf16(hardware) and key in _PRECISION_KEYS:
                continue  # the bf16 half of a precision fix cannot run on this GPU
            yours = flags.get(key)
            if yours is None:
                if key in fix_words:
                    added[key] = Change(key, None, _shown(fix_value))
            elif not _unknown(yours) and not _same(yours, fix_value):
                changed[key] = Change(key, _shown(yours), _shown(fix_value))
    if not changed:
        return []
    return [*changed.values(), *added.values()][:MAX_CHANGES]


def _unknown(value: str) -> bool:
    # "auto" defers to the Trainer; a variable or call is not a value to compare.
    return value.lower() in ("auto", "none", "") or bool(re.search(r"[(\[{$]", value))


def _shown(value: str) -> str:
    low = value.lower()
    return low if low in ("true", "false") else value


def _same(a: str, b: str) -> bool:
    a, b = a.strip().lower(), b.strip().lower()
    if a == b:
        return True
    truthy = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
    if a in truthy and b in truthy:
        return truthy[a] == truthy[b]
    try:
        return float(a) == float(b)
    except ValueError:
        return False
