"""Guard for generated text: every config name must be real; the fix must not be contradicted."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.articles import Article
from kb.namelists import all_known_names
from kb.retrieval import Hit

# `name=value`, `name: value` (YAML), `--flag`: the forms a config name takes in an answer.
_ASSIGN = re.compile(
    r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(True|False|true|false|None|-?[\d.]+(?:e[+-]?\d+)?"
    r"|\"[^\"\n]*\"|'[^'\n]*'|[A-Za-z_][\w.]*)"
)
_YAML = re.compile(r"^\s*([a-z_][a-z0-9_]*):\s*(\S+)\s*$", re.MULTILINE)
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9_]*(?:[-_][a-z0-9]+)*)(?:[ =]+(\S+))?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names that are not configuration: plain code variables a correct answer may show.
_CODE_WORDS = frozenset({"model", "tokenizer", "trainer", "args", "config", "name", "x", "i"})


@dataclass(frozen=True)
class NameUse:
    name: str
    value: str | None  # as written, None for a bare flag


def name_uses(text: str) -> list[NameUse]:
    uses = [NameUse(m.group(1), m.group(2)) for m in _ASSIGN.finditer(text)]
    uses += [NameUse(m.group(1), m.group(2)) for m in _YAML.finditer(text)]
    uses += [NameUse(m.group(1).replace("-", "_"), m.group(2)) for m in _FLAG.finditer(text)]
    return uses


_NAMES_CACHE: dict[tuple[str, str, int], frozenset[str]] = {}


def _article_names(article: Article) -> frozenset[str]:
    key = (article.id, str(article.path), hash(article.cause))
    if key not in _NAMES_CACHE:
        _NAMES_CACHE[key] = _collect_names(article)
    return _NAMES_CACHE[key]


def _collect_names(article: Article) -> frozenset[str]:
    parts = [
        article.title,
        article.cause,
        *article.fix,
        *article.confirm,
        *article.conditions,
        *article.symptoms,
        *(s.code for s in article.snippets),
        *article.sections.values(),
    ]
    text = "\n".join(parts)
    # Flags as the answer's checker reads them too: `--no-build-isolation` -> no_build_isolation.
    return frozenset(_IDENT.findall(text)) | {use.name for use in name_uses(text)}


def known_names(hits: list[Hit]) -> frozenset[str]:
    names = set(all_known_names())
    for hit in hits:
        names |= _article_names(hit.article)
    return frozenset(names)


def invented_names(text: str, hits: list[Hit]) -> list[str]:
    """Config names in `text` that neither the libraries nor the retrieved articles know."""
    known = known_names(hits)
    out = []
    for use in name_uses(text):
        if use.name in _CODE_WORDS or use.name.lower() in known or use.name in known:
            continue
        out.append(use.name)
    return sorted(set(out))


def _norm_value(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().strip("\"'").rstrip(",").lower()
    return {"1": "true", "0": "false"}.get(v, v)


def strip_comments(code: str) -> str:
    """Code without its `#` comments (Python, YAML and shell snippets)."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in code.splitlines())


def contradictions(text: str, article: Article) -> list[str]:
    """Values in `text` that differ from the value the article's snippets give the same name."""
    seen: dict[str, set[str]] = {}
    for snippet in article.snippets:
        # Comments name the old value ("bf16=True  # instead of fp16=True"): not what the case sets.
        for use in name_uses(strip_comments(snippet.code)):
            value = _norm_value(use.value)
            if value in ("true", "false"):
                seen.setdefault(use.name, set()).add(value)
    # A name the snippets set both ways (fp16=False on Ampere, fp16=True on a V100) has no one
    # right value to hold the model to.
    expected = {name: values.pop() for name, values in seen.items() if len(values) == 1}
    problems = []
    for use in name_uses(text):
        value = _norm_value(use.value)
        want = expected.get(use.name)
        if want and value in ("true", "false") and value != want:
            problems.append(f"{use.name}={use.value} contradicts the case ({use.name}={want})")
    # A bare "enable X" / "use X" for a precision the case turns off.
    for name, want in expected.items():
        if want == "false" and re.search(
            rf"\b(enable|use|set)\s+`?{re.escape(name)}\b(?!`?\s*[=:]\s*[`'\"]?(?:false|0|no)\b)",
            text,
            re.I,
        ):
            problems.append(f"suggests enabling {name}, which the case turns off")
    return sorted(set(problems))


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z][A-Za-z_]{3,}")
_COMMON = frozenset(
    """this that with from your have will when they their there which would could should about
    into than then them these those what were been being also only more most such other some
    make made sure need needs used using user users case cause fix fixes known run runs ran
    because problem issue error errors happen happens happened restate copy copied""".split()
)
# Share of content words that must come from the case or the user's facts.
MIN_GROUNDED = 0.8


def ungrounded(text: str, sources: list[str]) -> list[str]:
    """Numbers and content words of `text` that appear in none of `sources` (case + log facts)."""
    pool = "\n".join(sources).lower()
    numbers = [n for n in _NUMBER.findall(text) if n not in pool]
    words = [w.lower() for w in _WORD.findall(text) if w.lower() not in _COMMON]
    missing = [w for w in words if w not in pool]
    out = [f"number {n}" for n in dict.fromkeys(numbers)]
    if words and len(missing) / len(words) > 1 - MIN_GROUNDED:
        out.append("words not in the case: " + ", ".join(list(dict.fromkeys(missing))[:6]))
    return out


def repetitive(text: str) -> bool:
    """Degenerate loops ("on Llama-3.1 + on Llama-3.1 + ..."): a word trigram seen 3+ times."""
    words = text.lower().split()
    grams = [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]
    return any(grams.count(g) >= 3 for g in set(grams))


def trim_to_sentence(text: str) -> str:
    """Drop a trailing half sentence left by the token budget."""
    text = text.strip()
    if not text or text[-1] in ".!?。！？`)":
        return text
    cut = max(text.rfind(c) for c in ".!?。！？")
    return text[: cut + 1] if cut > 0 else text
