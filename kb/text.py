"""Tokenizer for BM25 and term evidence: Chinese text, English words and code-like tokens."""

from __future__ import annotations

import re

# A code-like token keeps its inner punctuation (per_device_train_batch_size, 1.19e+34,
# qwen2.5-7b, --vanilla_loss); a CJK run is split into characters and bigrams below.
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_.+\-]*[a-z0-9]|[a-z0-9]|[\u3400-\u4dbf\u4e00-\u9fff]+")
_PART_SPLIT = re.compile(r"[_.+\-]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# A metric with a telling value ("grad_norm is exactly 0", "'loss': nan", "loss一直是0") also
# becomes one term ("grad_norm=0"), so that "grad_norm 0" (no gradient) and "grad_norm nan"
# (overflow) stop matching each other through the shared word "grad_norm".
_METRIC_VALUE = re.compile(
    r"(?<![a-z0-9_])(grad_norm|grad norm|gradient norm|梯度|train_loss|eval_loss|loss)['\"]?"
    r"(?:\s|[:=]|is|was|stays?|stuck at|became|becomes|goes to|went to|exactly|always|"
    r"一直是|一直为|始终是|变成了?|变为|都是|为|是)*"
    r"(nan|inf|-?0(?:\.0+)?)(?![0-9a-z.])"
)
_METRIC_NAME = {
    "grad norm": "grad_norm",
    "gradient norm": "grad_norm",
    "梯度": "grad_norm",
    "train_loss": "loss",
}

STOPWORDS = frozenset(
    """a an and are as at be been but by can could do does did for from had has have how i if in
    into is it its me my no not of on or our so such that the their then there these they this to
    was we were what when where which while who why will with would you your after before also
    just get got use using used any all one very
    的 了 是 在 我 也 和 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 这个 那个
    请问 怎么 什么 吗 呢 啊 吧""".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercased terms for BM25.

    "Loss一直是0, per_device_train_batch_size=1" ->
    ["loss", "一", "直", "是", "一直", "直是", "0", "per_device_train_batch_size", "per", "device",
     "train", "batch", "size", "1"] (stopwords removed)
    """
    terms: list[str] = []
    low = text.lower()
    for match in _METRIC_VALUE.finditer(low):
        name = _METRIC_NAME.get(match.group(1), match.group(1))
        value = match.group(2).lstrip("-")
        terms.append(f"{name}={'0' if value.startswith('0') else value}")
    for match in _TOKEN.finditer(low):
        tok = match.group(0)
        if _CJK.match(tok):
            terms.extend(ch for ch in tok if ch not in STOPWORDS)
            terms.extend(
                tok[i : i + 2] for i in range(len(tok) - 1) if tok[i : i + 2] not in STOPWORDS
            )
            continue
        if tok in STOPWORDS:
            continue
        terms.append(tok)
        if _PART_SPLIT.search(tok) and not is_number(tok):
            for part in _PART_SPLIT.split(tok):
                if part and part not in STOPWORDS and part != tok:
                    terms.append(part)
    return terms


def is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def normalize_for_match(text: str) -> str:
    """Case-folded, quote-free, single-spaced text for literal signature matching."""
    text = text.lower().replace("`", "").replace("'", "").replace('"', "")
    return " ".join(text.split())
