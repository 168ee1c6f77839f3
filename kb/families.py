"""Model families: a case written for one family cannot explain a report about another.

A GLM-4 finetune.py config error shares "finetune.py ... Traceback ... __init__() got an unexpected
keyword argument" with every script crash; when the report names its model and that model is of
no family the case lists, the case is contradicted (unless its error string matched), as a
vision-language case is by a text-only report (kb/modality.py).
"""

from __future__ import annotations

import re

from kb.articles import Article
from kb.text import ASCII_RIGHT

# Coarse families: the first word of a model name, with the spellings users write. Derivatives
# kb cannot tie to a base family (vicuna, alpaca, ziya ...) are not listed: a report naming only
# those names no family, and nothing is contradicted.
_FAMILY_OF = {
    "llama": "llama",
    "codellama": "llama",
    "tinyllama": "llama",
    "qwen": "qwen",
    "qwq": "qwen",
    "mistral": "mistral",
    "mixtral": "mistral",
    "gemma": "gemma",
    "paligemma": "gemma",
    "phi": "phi",
    "baichuan": "baichuan",
    "chatglm": "glm",
    "glm": "glm",
    "cogvlm": "glm",
    "internlm": "internlm",
    "internvl": "internvl",
    "deepseek": "deepseek",
    "yi": "yi",
    "falcon": "falcon",
    "bloom": "bloom",
    "bloomz": "bloom",
    "gpt2": "gpt2",
    "pythia": "pythia",
    "olmo": "olmo",
    "minicpm": "minicpm",
    "llava": "llava",
    "t5": "t5",
    "flan": "t5",
    "opt": "opt",
    "starcoder": "starcoder",
    "smollm": "smollm",
}
# A family word at the start of a name: "Qwen2.5-7B", "llama3", "Llama-2", "chatglm3-6b",
# "Baichuan2", "glm-4", "Qwen微调". Not inside a longer word ("optimizer", "philosophy", "yield");
# the right edge is kb.text's, since \b sees no edge between "n" and "微".
_NAME = re.compile(
    r"(?<![A-Za-z])(" + "|".join(sorted(_FAMILY_OF, key=len, reverse=True)) + r")"
    r"(?=[-_ .]?v?\d|[-_](?:[a-z]{2,}|\d)|" + ASCII_RIGHT + r")",
    re.IGNORECASE,
)
# Short or common words that only count as a family when a version or size follows ("phi-3",
# "yi-34b", "opt-1.3b", "t5-base"), never alone ("phi" in a path, "yi" in pinyin).
_NEEDS_VERSION = {"phi", "yi", "opt", "t5", "flan", "glm", "olmo"}
_VERSIONED = re.compile(r"[-_ .]?v?\d|-(?:base|large|small|xl|xxl|mini|chat|instruct)", re.I)


def families_named(text: str) -> frozenset[str]:
    """The model families the text names."""
    found = set()
    for m in _NAME.finditer(text[:200_000]):
        word = m.group(1).lower()
        if word in _NEEDS_VERSION and not _VERSIONED.match(text, m.end()):
            continue
        found.add(_FAMILY_OF[word])
    return frozenset(found)


def article_families(article: Article) -> frozenset[str]:
    """The families a case is limited to; empty when it is general ("any", a size, an unknown
    name): every model it lists must be of a known family."""
    families = set()
    for model in article.models:
        named = families_named(model)
        if not named:
            return frozenset()
        families |= named
    return frozenset(families)
