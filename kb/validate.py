"""`kb validate`: schema, taxonomy, uniqueness, body sections and snippet checks for articles."""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from kb.articles import SECTION_NAMES, Article, Snippet, article_paths, parse_article
from kb.errors import ArticleError
from kb.namelists import LAUNCHER_FLAGS, PY_CLASSES, LibraryMissing, class_params, target_names
from kb.oneliners import one_liner_problem, one_liners
from kb.text import has_cjk
from kb.translation import lost_code

TAXONOMY_FILE = Path(__file__).resolve().parent / "taxonomy.txt"
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
LANGUAGES = {"python", "yaml", "json", "bash"}
TARGETS = {
    "transformers",
    "trl",
    "peft",
    "torch",
    "hf-trainer-cli",
    "trl-cli",
    "deepspeed",
    "llamafactory",
    "openrlhf",
    "medicalgpt",
    "ms-swift",
    "accelerate",
    "shell",
}
REQUIRED_LISTS = (
    "frameworks",
    "stages",
    "models",
    "symptoms",
    "conditions",
    "fix",
    "snippets",
    "confirm",
    "sources",
)
REQUIRED_TEXT = ("id", "title", "failure_mode", "cause")
RENAME_KEYS = ("library", "old", "new", "since")
# Tokens that start a training program inside a shell command: flags after them are its own.
PROGRAM_MARKERS = re.compile(
    r"(\.py$|^train$|^sft$|^rlhf$|^dpo$|^grpo$|^kto$|^reward$|^pt$|^rm$"
    r"|^[a-z_]+\.cli\.\w+$)"  # a module run with `--module` / `-m` (openrlhf.cli.train_sft)
)


@dataclass(frozen=True)
class Problem:
    path: str
    field: str
    message: str
    severity: str = "error"  # "error" fails validation; "warning" is reported only

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


def taxonomy_ids() -> set[str]:
    lines = TAXONOMY_FILE.read_text().splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def validate_corpus(articles_dir: Path) -> tuple[list[Article], list[Problem]]:
    problems: list[Problem] = []
    articles: list[Article] = []
    modes = taxonomy_ids() - {"out-of-scope"}
    seen: dict[str, str] = {}
    for path in article_paths(articles_dir):
        try:
            article = parse_article(path)
        except ArticleError as exc:
            problems.append(Problem(path.name, "file", str(exc).split(": ", 1)[-1]))
            continue
        articles.append(article)
        problems.extend(validate_article(article, modes))
        if article.id in seen:
            problems.append(Problem(path.name, "id", f"duplicate id, also in {seen[article.id]}"))
        seen[article.id] = path.name
    if not articles and not problems:
        problems.append(Problem(str(articles_dir), "articles", "no articles found"))
    return articles, problems


def validate_article(article: Article, modes: set[str]) -> list[Problem]:
    name = article.path.name
    meta = article.raw_front_matter
    out: list[Problem] = []

    def err(field: str, message: str, severity: str = "error") -> None:
        out.append(Problem(name, field, message, severity))

    for key in REQUIRED_TEXT:
        if not str(meta.get(key) or "").strip():
            err(key, "missing or empty")
    for key in REQUIRED_LISTS:
        if not isinstance(meta.get(key), list) or not meta.get(key):
            err(key, "must be a non-empty list")
    if not isinstance(meta.get("error_signatures", None), list):
        err("error_signatures", "must be a list (empty when the mode has no error text)")
    if not isinstance(meta.get("verified_with"), dict) or not meta.get("verified_with"):
        err("verified_with", "must map library names to the versions checked")
    if article.id and not ID_RE.match(article.id):
        err("id", f"{article.id!r} is not a lowercase slug")
    if article.id and article.id != article.path.stem:
        err("id", f"{article.id!r} does not match the file name {article.path.stem!r}")
    if article.failure_mode and article.failure_mode not in modes:
        err("failure_mode", f"unknown taxonomy id {article.failure_mode!r}")
    if article.symptoms and not any(has_cjk(s) for s in article.symptoms):
        err("symptoms", "needs Chinese phrasings too (users write in Chinese)")
    if article.symptoms and all(has_cjk(s) for s in article.symptoms):
        err("symptoms", "needs English phrasings too")
    for sig in article.error_signatures:
        if sig.startswith("re:"):
            try:
                re.compile(sig[3:])
            except re.error as exc:
                err("error_signatures", f"bad regex {sig!r}: {exc}")
    for url in article.sources:
        if not re.match(r"^https?://\S+$", url):
            err("sources", f"not a URL: {url!r}")
    for key in ("title", "cause", "fix", "confirm"):
        if not article.zh.get(key):
            err(f"zh.{key}", "missing: a Chinese question gets a Chinese answer")
    zh_checks = article.zh.get("confirm") or []
    if zh_checks and len(zh_checks) != len(article.confirm):
        err("zh.confirm", f"{len(zh_checks)} checks, confirm has {len(article.confirm)}: one each")
    for i, (english, chinese) in enumerate(zip(article.confirm, zh_checks, strict=False)):
        lost = lost_code(english, chinese)
        if lost:
            err(f"zh.confirm[{i}]", f"does not keep the code of confirm[{i}] verbatim: {lost}")
    for section in SECTION_NAMES:
        if not article.sections.get(section, "").strip():
            err(f"## {section}", "body section missing or empty")
    texts = {
        "fix": "\n".join(article.fix),
        "confirm": "\n".join(article.confirm),
        "zh.fix": "\n".join(article.zh.get("fix") or []),
        "zh.confirm": "\n".join(zh_checks),
        # Markdown prose wraps lines inside inline code: a soft break there is a space.
        **{f"## {name}": " ".join(body.split("\n")) for name, body in article.sections.items()},
        **{f"snippets[{i}]": s.code for i, s in enumerate(article.snippets)},
    }
    for where, text in texts.items():
        for code in one_liners(text):
            problem = one_liner_problem(code)
            if problem:
                err(where, f"python -c one-liner {problem}: {code[:80]!r}")
    renames = meta.get("renames")
    if renames is not None and not isinstance(renames, list):
        err("renames", "must be a list of {library, old, new, since}")
    for i, item in enumerate(renames if isinstance(renames, list) else []):
        # A snippet pasted one list too low lands here and would be dropped without a word.
        missing = [
            key
            for key in RENAME_KEYS
            if not isinstance(item, dict) or not str(item.get(key) or "").strip()
        ]
        if missing:
            err(f"renames[{i}]", f"missing {', '.join(missing)}")
    allowed_old = {r.old for r in article.renames}
    for i, snippet in enumerate(article.snippets):
        for message in check_snippet(snippet, allowed_old):
            severity = "warning" if message.startswith("not checked") else "error"
            err(f"snippets[{i}]", message, severity)
    return out


def check_snippet(snippet: Snippet, allowed_old: set[str] = frozenset()) -> list[str]:
    """Problems with one snippet: syntax, then every name against the target's real names."""
    if snippet.language not in LANGUAGES:
        return [f"language {snippet.language!r} is not one of {sorted(LANGUAGES)}"]
    if snippet.target not in TARGETS:
        return [f"target {snippet.target!r} is not one of {sorted(TARGETS)}"]
    if not snippet.code.strip():
        return ["code is empty"]
    extra = allowed_old if snippet.valid_for else set()
    try:
        if snippet.language == "python":
            return _check_python(snippet.code, extra)
        if snippet.language == "yaml":
            return _check_mapping(snippet, _load_yaml(snippet.code), extra)
        if snippet.language == "json":
            return _check_mapping(snippet, _load_json(snippet.code), extra)
        return _check_bash(snippet, extra)
    except LibraryMissing as exc:
        return [f"not checked: {exc}"]
    except _SyntaxProblem as exc:
        return [str(exc)]


def _check_python(code: str, extra: set[str]) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"python does not compile: {exc.msg} (line {exc.lineno})"]
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        call = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if call not in PY_CLASSES:
            continue
        known = class_params(call)
        for kw in node.keywords:
            if kw.arg and kw.arg not in known and kw.arg not in extra:
                problems.append(f"{call}() has no argument {kw.arg!r}")
    return problems


def _load_yaml(code: str) -> object:
    try:
        return yaml.safe_load(code)
    except yaml.YAMLError as exc:
        raise _SyntaxProblem(f"yaml does not parse: {exc}") from exc


def _load_json(code: str) -> object:
    try:
        return json.loads(code)
    except ValueError as exc:
        raise _SyntaxProblem(f"json does not parse: {exc}") from exc


class _SyntaxProblem(Exception):
    pass


def _keys(value: object) -> list[str]:
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            out.append(str(k))
            out.extend(_keys(v))
        return out
    if isinstance(value, list):
        return [k for item in value for k in _keys(item)]
    return []


def _check_mapping(snippet: Snippet, loader_result: object, extra: set[str]) -> list[str]:
    if snippet.target not in ("deepspeed", "llamafactory", "ms-swift", "medicalgpt", "openrlhf"):
        return []
    known = target_names(snippet.target) | extra
    if snippet.target == "deepspeed":
        keys = _keys(loader_result)
    else:  # framework YAML configs are flat: only top-level keys are argument names
        keys = [str(k) for k in loader_result] if isinstance(loader_result, dict) else []
    return [f"{snippet.target} has no key {k!r}" for k in dict.fromkeys(keys) if k not in known]


def _check_bash(snippet: Snippet, extra: set[str]) -> list[str]:
    result = subprocess.run(
        ["bash", "-n"], input=snippet.code, capture_output=True, text=True, timeout=10
    )
    if result.returncode != 0:
        return [f"bash does not parse: {result.stderr.strip()[:200]}"]
    if snippet.target in ("shell", "accelerate", "torch", "transformers", "trl", "peft"):
        return []
    known = target_names(snippet.target) | extra
    problems = []
    for flag in _program_flags(snippet.code):
        if flag not in known:
            problems.append(f"{snippet.target} has no flag --{flag}")
    return problems


def _program_flags(code: str) -> list[str]:
    """`--flags` given to the training program (launcher flags before the script are skipped)."""
    joined = re.sub(r"\\\n", " ", code)
    flags: list[str] = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0]
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            tokens = line.split()
        in_program = not any(PROGRAM_MARKERS.search(t) for t in tokens)
        for tok in tokens:
            if not in_program and PROGRAM_MARKERS.search(tok):
                in_program = True
                continue
            if tok.startswith("--") and len(tok) > 2:
                name = tok[2:].split("=", 1)[0]
                if in_program:
                    flags.append(name)
                elif name not in LAUNCHER_FLAGS:
                    flags.append(name)
    return list(dict.fromkeys(flags))
