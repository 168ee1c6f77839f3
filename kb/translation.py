"""Does a Chinese line keep the code of the English line it translates?

A "how to confirm" check is mostly code (`tokenizer.pad_token is None`, `grep -n 'Accelerator('`,
"0.16.0 or newer"): a translation that drops or rewrites a name, a flag or a version tells the user
to check something else. Everything code-like in the English must appear verbatim in the Chinese.
"""

from __future__ import annotations

import re

_BACKTICKED = re.compile(r"`([^`]+)`")
_TOKEN = re.compile(r"[^\s,;，；。：（）()]+")
# A token that is code rather than a word: snake_case, key=value, a path, a number or version,
# camelCase, a call, a dotted name.
_CODE_LIKE = re.compile(r"[_=/<>\[\]]|\d|[a-z][A-Z]|\(\)|\.[a-z]")
_NOT_CODE = frozenset({"e.g", "i.e", "etc", "vs", "and/or"})


def code_tokens(line: str) -> set[str]:
    """The backticked spans of `line` and its code-like tokens (trailing punctuation removed)."""
    tokens = set(_BACKTICKED.findall(line))
    for token in _TOKEN.findall(_BACKTICKED.sub(" ", line)):
        token = token.strip(".,;:'\"!?")
        if token.endswith("'s"):  # "vLLM's" is the name vLLM in English grammar
            token = token[:-2]
        if token.lower() in _NOT_CODE:
            continue
        if len(token) > 1 and _CODE_LIKE.search(token) and re.search(r"[A-Za-z0-9]", token):
            tokens.add(token)
    return tokens


def lost_code(english: str, chinese: str) -> list[str]:
    """The code tokens of `english` that `chinese` does not contain, sorted."""
    return sorted(t for t in code_tokens(english) if t not in chinese)
