"""What the user says about versions: that a change made the difference ("works on 0.19, not
0.20"), and which versions work ("downgrading to trl==0.19.1 fixes it", "回退到 4.40 就正常").

A version the reporter has seen work is the quickest way to train again tonight, whatever the
root cause turns out to be; the answer offers it as a pin, next to the article's real fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Packages whose pin is a pip command people can paste (import names map to their pip name).
PIP_NAMES = {
    "transformers": "transformers",
    "trl": "trl",
    "peft": "peft",
    "deepspeed": "deepspeed",
    "accelerate": "accelerate",
    "torch": "torch",
    "pytorch": "torch",
    "datasets": "datasets",
    "tokenizers": "tokenizers",
    "vllm": "vllm",
    "bitsandbytes": "bitsandbytes",
    "flash-attn": "flash-attn",
    "flash_attn": "flash-attn",
    "xformers": "xformers",
    "triton": "triton",
    "unsloth": "unsloth",
    "llamafactory": "llamafactory",
    "ms-swift": "ms-swift",
    "openrlhf": "openrlhf",
    "verl": "verl",
    "numpy": "numpy",
}
_LIB = "|".join(sorted((re.escape(k) for k in PIP_NAMES), key=len, reverse=True))
# "trl==v0.19.1", "trl 0.19.1", "transformers version 4.40.0", "peft=0.3.0", "`trl==0.19.1`"
_PINNED = (
    rf"(?P<lib>{_LIB})[\s*`'\"]*(?:==|=|\bversion\b|版本)?[\s*`'\"]*v?"
    r"(?P<ver>\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|post|rc)\d*)?)(?!\w|\.\d)"
)
# Each pattern holds one _PINNED (re cannot repeat a group name across alternatives).
_WORKS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # "downgrade to trl==0.19.1", "rolled back to peft 0.3.0"
        r"(?:downgrad\w*|roll(?:ed|ing)? back|revert\w*|went back|go(?:ing)? back)"
        r"(?:\s+(?:to|the|my|\w+ version of))*[\s*`'\"(]*" + _PINNED,
        # "works fine with transformers 4.40", "no issue on the older trl 0.8.6"
        r"(?:works?|worked|working|runs?|ran|is fine|was fine|no (?:issue|problem|error)s?)"
        r"(?:\s+(?:fine|well|ok|normally|correctly|perfectly|again))?\s+(?:with|on|in|using|under)"
        r"\s+(?:the\s+)?(?:older\s+|previous\s+)?[\s*`'\"(]*" + _PINNED,
        # "回退到 transformers 4.40", "降级成 peft 0.3.0"
        r"(?:回退|降级|降|退回|换)(?:到|至|成)?\s*" + _PINNED,
        # "trl 0.19.1 works", "peft==0.3.0 时 loss 正常", "transformers 4.40 没问题"
        _PINNED + r"[\s*`'\")]*(?:,\s*)?(?:(?:it|everything|training|the loss|loss)\s+)?"
        r"(?:works?|worked|is fine|was fine|runs? fine|is normal|was normal"
        r"|trains? (?:fine|normally)"
        r"|(?:时|的时候)?\s*(?:loss\s*)?(?:没问题|没有问题|正常|可以|就好了|能跑))",
    )
)


# "doesn't work with trl 0.19.1": a negation right before the match.
_NEGATED_BEFORE = re.compile(r"\b(?:not|never|no longer)\b|n't|不\s*$", re.IGNORECASE)
# "I still get it when I downgrade to peft 0.10", "降级到 4.40 也不行": the sentence says it failed.
_FAILED_ANYWAY = re.compile(
    r"\b(?:still|either|no luck|same (?:error|issue|problem|result))\b|(?:does|did)n't help"
    r"|也不|还是|仍然|依然|同样的|一样的?(?:错|问题|报错)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?。！？\n]\s")
# Every _WORKS match holds one of these (lower-cased). The patterns open with alternations the
# regex engine cannot skip ahead on, so a pasted 200 kB log is only scanned where a line pair
# names a library next to one of them (0.14 s -> a few ms on a mixed training log).
_CUES = (
    "downgrad", "roll", "revert", "back", "work", " ran ", "run", "fine", "no ", "normal",
    "回退", "降", "退回", "换", "问题", "正常", "可以", "好了", "能跑",
)  # fmt: skip


@dataclass(frozen=True)
class WorkingVersion:
    package: str  # the pip name
    version: str

    @property
    def pin(self) -> str:
        return f'pip install "{self.package}=={self.version}"'


def working_versions(text: str, limit: int = 3) -> list[WorkingVersion]:
    """Versions the text says work, in the order said, one per package.

    "This does not occur when I downgrade to **trl==v0.19.1**" -> [WorkingVersion("trl", "0.19.1")]
    """
    found: dict[str, WorkingVersion] = {}
    text = text[:200_000]
    hits = {
        m.start(): m
        for lo, hi in _windows(text)
        for pattern in _WORKS
        for m in pattern.finditer(text, lo, hi)
    }
    for m in sorted(hits.values(), key=lambda m: m.start()):
        if _NEGATED_BEFORE.search(
            text[max(0, m.start() - 10) : m.start()]
        ) or _FAILED_ANYWAY.search(_sentence(text, m.start(), m.end())):
            continue
        package = PIP_NAMES[m.group("lib").lower()]
        found.setdefault(package, WorkingVersion(package, m.group("ver")))
    return list(found.values())[:limit]


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence around text[start:end] (bounded, so a log without full stops stays cheap)."""
    lo = max(0, start - 200)
    before = [b.end() for b in _SENTENCE_END.finditer(text, lo, start)]
    after = _SENTENCE_END.search(text, end, end + 200)
    return text[before[-1] if before else lo : after.start() + 1 if after else end + 200]


def _windows(text: str):
    """(start, end) of each pair of adjacent lines that names a library and a cue word."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for i, line in enumerate(lines):
        pair = (line + (lines[i + 1] if i + 1 < len(lines) else "")).lower()
        if any(c in pair for c in _CUES) and any(lib in pair for lib in PIP_NAMES):
            yield starts[i], starts[min(i + 2, len(lines))]


# The user says a library version change made the difference: the mark of a version mismatch.
VERSION_CHANGE = re.compile(
    r"\b(downgrad\w*|after (?:upgrading|updating)|since (?:upgrading|updating)|"
    r"(?:worked|works|working) (?:fine )?(?:with|on|in) (?:the )?(?:older|previous|v?\d+\.\d+)|"
    r"(?:new|latest) version (?:breaks|broke)|regression)\b"
    r"|降级|升级[^。\n]{0,30}?(?:之后|以后|后)|(?:换|回退)到?旧版本|版本(?:不兼容|问题)",
    re.IGNORECASE,
)


# Every VERSION_CHANGE match holds one of these, lower-cased. Its leading \b alternation defeats
# the engine's prefix search, so over megabytes of context it runs only on the lines holding one.
_VERSION_NEEDLES = (
    "downgrad",
    "upgrading",
    "updating",
    "work",
    "version",
    "regression",
    "降级",
    "升级",
    "版本",
)
# re.IGNORECASE matches these to "i" and "s" but str.lower() keeps them (and lengthens "İ").
_FOLD_ODDITIES = ("\u0130", "\u0131", "\u017f")


def version_change(text: str) -> bool:
    """VERSION_CHANGE.search(text), quickly.

    "It works on 0.19 but not 0.20" -> True
    """
    if any(c in text for c in _FOLD_ODDITIES):
        return bool(VERSION_CHANGE.search(text))
    low = text.lower()
    for needle in _VERSION_NEEDLES:
        at = low.find(needle)
        while at >= 0:
            start = low.rfind("\n", 0, at) + 1
            end = low.find("\n", at)
            end = len(low) if end < 0 else end
            if VERSION_CHANGE.search(text, start, end):  # matches never cross a line
                return True
            at = low.find(needle, end)
    return False
