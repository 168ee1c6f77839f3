"""Tokenizer for BM25 and term evidence: Chinese text, English words and code-like tokens."""

from __future__ import annotations

import re

# ASCII word edges that also hold next to CJK text: "DPO失败" and "Lora微调" are English words,
# but \b sees no edge between "O" and "失" (both are word characters to Python's re).
ASCII_LEFT, ASCII_RIGHT = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_])"

# A code-like token keeps its inner punctuation (per_device_train_batch_size, 1.19e+34,
# qwen2.5-7b, --vanilla_loss); a CJK run is split into characters and bigrams below.
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_.+\-]*[a-z0-9]|[a-z0-9]|[\u3400-\u4dbf\u4e00-\u9fff]+")
_PART_SPLIT = re.compile(r"[_.+\-]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# A metric stated with a telling value, logged or in words ("grad_norm is exactly 0", "'loss': nan",
# "loss一直是0", "梯度为nan"): up to three linking words between the metric and the value.
_METRIC_STATEMENT = re.compile(
    r"(?<![A-Za-z0-9_])(?P<metric>(?:train[_ ]|eval[_ ]|training |validation )?loss"
    r"|grad[_ ]?norm|gradient norm|gradients?|grads?|梯度)['\"]?"
    r"(?:\s*(?:=|:|：|is|was|are|were|becomes?|became|goes|went|to|turns?|into|stays?|stuck|at"
    r"|always|still|all|just|exactly|keeps?|being|一直|都|始终|总是|变成了?|变为|为|是|等于|全是|全为"
    r"|直接|就|了)\s*){0,3}\s*"
    r"(?P<value>nan|inf(?:inity)?|-?0(?:\.0+)?)(?![A-Za-z0-9_.])",
    re.IGNORECASE,
)


def metric_statements(text: str) -> list[tuple[str, str]]:
    """(metric, value) for each metric stated with a telling value, in order of appearance:
    metric is loss / eval_loss / grad_norm, value is 0 / nan / inf.

    "训练时 loss一直是0，梯度为nan" -> [("loss", "0"), ("grad_norm", "nan")]
    "loss is 0.6931" -> []
    """
    found = []
    for m in _METRIC_STATEMENT.finditer(text):
        raw = m.group("metric").lower()
        if "loss" in raw:
            metric = "eval_loss" if raw.startswith(("eval", "validation")) else "loss"
        else:
            metric = "grad_norm"
        value = m.group("value").lower().lstrip("-")
        found.append((metric, "nan" if value == "nan" else "inf" if value[0] == "i" else "0"))
    return found


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
    # "grad_norm 0" (no gradient) and "grad_norm nan" (overflow) must not match each other only
    # through the shared word "grad_norm": the stated value is a term of its own.
    terms.extend(f"{metric}={value}" for metric, value in metric_statements(low))
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


_QUOTES = str.maketrans("", "", "`'\"‘’“”＇＂")


def normalize_for_match(text: str) -> str:
    """Case-folded, quote-free, single-spaced text for literal signature matching."""
    # Curly and full-width quotes too: a traceback pasted through a chat app or a Chinese IME
    # arrives with ‘GRPOConfig’ or “trl” instead of ASCII quotes.
    text = text.lower().translate(_QUOTES)
    return " ".join(text.split())


def join_cjk_bigrams(terms: list[str]) -> list[str]:
    """Matched terms as a person reads them: overlapping CJK bigrams become the run they came from.

    The tokenizer splits "一直是" into "一直" and "直是"; shown as evidence, "直是" is not a word.
    ["loss", "一直", "直是", "fp16"] -> ["loss", "一直是", "fp16"]
    """
    bigrams = [t for t in terms if len(t) == 2 and all(_CJK.match(ch) for ch in t)]
    followers = {b[0]: b for b in reversed(bigrams)}  # the first-listed bigram wins a tie
    used: set[str] = set()
    out = []
    for term in terms:
        if term not in bigrams:
            out.append(term)
            continue
        continues_another = any(b[1] == term[0] and b != term for b in bigrams)
        if term in used or continues_another:
            continue  # shown inside the run that another bigram starts
        run, last = term, term
        used.add(term)
        while last[1] in followers and followers[last[1]] not in used:
            last = followers[last[1]]
            used.add(last)
            run += last[1]
        out.append(run)
    # A cycle ("环境", "境环") has no start: its bigrams stay as they are.
    out.extend(b for b in dict.fromkeys(bigrams) if b not in used)
    return out
