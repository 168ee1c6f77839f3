"""Training launchers: a case for one framework's own script cannot explain another's crash.

ms-swift, LLaMA-Factory, axolotl, OpenRLHF, verl and MedicalGPT each parse their own arguments and
ship their own trainers; mlx-lm, LitGPT, xtuner and torchtune are others kb files under "other".
An ms-swift argument-parsing case shares "ValueError ... --train" with an mlx-lm config error, so
when the report names only launchers the case does not list, the case is contradicted (unless
its error string matched), as a case for another model family is (kb/families.py). Libraries that
every launcher runs on (transformers, peft, trl, deepspeed, accelerate, unsloth, vllm) never
contradict: a LLaMA-Factory run raises transformers' errors.
"""

from __future__ import annotations

import re

from kb.articles import Article
from kb.text import ASCII_LEFT, ASCII_RIGHT

# Launchers with a `frameworks` name of their own in the articles.
LISTED = frozenset({"llamafactory", "ms-swift", "axolotl", "openrlhf", "verl", "medicalgpt"})

# How reports name each launcher. The unlisted ones (articles say "other") count only on the
# report side: naming mlx-lm and nothing else rules out an ms-swift-only case.
_SPELLINGS = {
    "llamafactory": r"llama[-_ ]?factory|llamafactory-cli|llmtuner",
    "ms-swift": r"ms-swift|swift (?:sft|rlhf|pt|infer|export|deploy)|swift[./]llm|\[INFO:swift\]",
    "axolotl": r"axolotl",
    "openrlhf": r"openrlhf",
    "verl": r"verl",
    "medicalgpt": r"medicalgpt|supervised_finetuning\.py|dpo_training\.py|orpo_training\.py",
    "mlx": r"mlx(?:[-_]lm|[-_]examples)?",
    "litgpt": r"lit[-_]?gpt|lit[-_]llama",
    "xtuner": r"xtuner",
    "torchtune": r"torchtune|tune run",
    "colossalai": r"colossal[-_ ]?ai",
    "fastchat": r"fastchat",
    "firefly": r"firefly",
    "easyr1": r"easyr1",
}


def _compile(spellings: dict[str, str]) -> dict[str, re.Pattern[str]]:
    return {
        name: re.compile(ASCII_LEFT + r"(?:" + spelling + r")" + ASCII_RIGHT, re.IGNORECASE)
        for name, spelling in spellings.items()
    }


def _names_in(text: str, patterns: dict[str, re.Pattern[str]]) -> frozenset[str]:
    head = text[:200_000]
    return frozenset(name for name, pattern in patterns.items() if pattern.search(head))


_NAMED = _compile(_SPELLINGS)


def launchers_named(text: str) -> frozenset[str]:
    """The training launchers the report names."""
    return _names_in(text, _NAMED)


# Libraries a launcher-only case may still list: they run under the launcher, and name nothing
# a user calls directly.
_UNDERNEATH = frozenset({"torch", "vllm", "deepspeed", "flash-attn", "bitsandbytes"})


def article_launchers(article: Article) -> frozenset[str]:
    """The launchers a case is limited to: only when it lists nothing but launchers (and what runs
    under them). A case that also lists transformers, trl or peft is about those libraries too,
    and one that lists "other" names a tool kb cannot tell apart."""
    frameworks = set(article.frameworks)
    launchers = frameworks & LISTED
    if not launchers or frameworks - LISTED - _UNDERNEATH:
        return frozenset()
    return frozenset(launchers)


# Tools a case's title can be about, beyond the launchers: "Unsloth on T4 / V100 ...",
# "Megatron ... context parallel". A title that names a tool says the case is that tool's.
_TITLE_SPELLINGS = {
    **_SPELLINGS,
    "unsloth": r"unsloth",
    "megatron": r"megatron|nemo",
    "nanogpt": r"nano[-_]?gpt",
    # DeepSpeed-Chat's scripts are named for their steps; its reports quote them more often than
    # the application's name.
    "deepspeed-chat": r"deepspeed[-_ ]?chat|deepspeedexamples|e2e_rlhf(?:\.py)?"
    r"|step[123]_(?:supervised|reward_model|rlhf)_finetuning|enable_hybrid_engine"
    r"|actor_model_name_or_path",
}
_TITLE_NAMED = _compile(_TITLE_SPELLINGS)


def tools_named(text: str) -> frozenset[str]:
    """The launchers and tools (unsloth, Megatron, nanoGPT) the text names."""
    return _names_in(text, _TITLE_NAMED)


def title_tools(article: Article) -> frozenset[str]:
    """The tools a case's title names: the case is about running that tool."""
    return tools_named(article.title)
