"""Articles: one markdown file per case (YAML front matter + body sections) as dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter import front_matter_plugin

from kb.errors import ArticleError

SECTION_NAMES = ("Symptoms", "Cause", "Fix", "How to confirm", "Why")
MAX_ARTICLE_BYTES = 512 * 1024


@dataclass(frozen=True)
class Snippet:
    language: str  # python | yaml | json | bash
    target: str  # the library or tool whose names the code uses (see docs/ARTICLE_FORMAT.md)
    code: str
    valid_for: str = ""  # e.g. "transformers<4.41" for a snippet aimed at older versions

    def to_dict(self) -> dict:
        return {"language": self.language, "target": self.target, "code": self.code}


@dataclass(frozen=True)
class Rename:
    library: str
    old: str
    new: str
    since: str  # first version that has `new`


@dataclass(frozen=True)
class Article:
    id: str
    title: str
    failure_mode: str
    path: Path
    frameworks: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    symptoms: list[str] = field(default_factory=list)
    error_signatures: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    cause: str = ""
    fix: list[str] = field(default_factory=list)
    snippets: list[Snippet] = field(default_factory=list)
    confirm: list[str] = field(default_factory=list)
    renames: list[Rename] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    verified_with: dict[str, str] = field(default_factory=dict)
    zh: dict = field(default_factory=dict)  # {"title", "cause", "fix": [...], "confirm": [...]}
    sections: dict[str, str] = field(default_factory=dict)  # body heading -> text
    raw_front_matter: dict = field(default_factory=dict)  # kept for the validator

    def error_signatures_plain(self) -> list[str]:
        """Signatures as readable text (the `re:` prefix dropped) for the text indexes."""
        return [s[3:] if s.startswith("re:") else s for s in self.error_signatures]

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "failure_mode": self.failure_mode,
            "frameworks": self.frameworks,
            "stages": self.stages,
            "models": self.models,
            "symptoms": self.symptoms,
            "error_signatures": self.error_signatures,
            "conditions": self.conditions,
            "cause": self.cause,
            "fix": self.fix,
            "snippets": [s.to_dict() for s in self.snippets],
            "confirm": self.confirm,
            "sources": self.sources,
            "verified_with": self.verified_with,
            "zh": self.zh,
            "sections": self.sections,
        }


_md = MarkdownIt("commonmark").use(front_matter_plugin)


class _AliasRefused(Exception):
    """An alias in front matter: one line of `*name` can stand for billions of items."""


# libyaml when PyYAML was built with it: parsing 500+ front matters in pure Python was most of a
# cold `kb ask` (7.9 s -> 2.4 s at 539 articles on 2 cores); the C loader gives the same values.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_FRONT_MATTER_NESTING = 32  # articles use 3 levels; the C composer recurses without a guard


class _TooDeep(Exception):
    """Front matter nested deeper than any article needs."""


def _load_front_matter(front: str):
    """Refuse aliases and runaway nesting on the event stream, then build the values.

    A "billion laughs" front matter loads fast but expands when its fields are turned into
    strings, so aliases are refused outright; articles write their values out.
    """
    depth = 0
    for event in yaml.parse(front, Loader=_YAML_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise _AliasRefused(f"*{event.anchor} at line {event.start_mark.line + 2}")
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_FRONT_MATTER_NESTING:
                raise _TooDeep
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
    return yaml.load(front, Loader=_YAML_LOADER)


def split_document(text: str) -> tuple[str | None, dict[str, str]]:
    """Split a markdown document into its front matter source and its level-2 sections.

    "---\\nid: x\\n---\\n## Cause\\nfp16\\n" -> ("id: x", {"Cause": "fp16"})
    """
    tokens = _md.parse(text)
    lines = text.splitlines()
    front: str | None = None
    headings: list[tuple[str, int, int]] = []  # (title, heading line, first body line)
    for i, tok in enumerate(tokens):
        if tok.type == "front_matter":
            front = tok.content
        elif tok.type == "heading_open" and tok.tag == "h2" and tok.map:
            title = tokens[i + 1].content.strip()
            headings.append((title, tok.map[0], tok.map[1]))
    sections: dict[str, str] = {}
    for n, (title, _start, body_start) in enumerate(headings):
        end = headings[n + 1][1] if n + 1 < len(headings) else len(lines)
        sections[title] = "\n".join(lines[body_start:end]).strip()
    return front, sections


def _str_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, int, float)):
        return [str(value)]
    if isinstance(value, list):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return []


def _snippets(value: object) -> list[Snippet]:
    out = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict):
            out.append(
                Snippet(
                    language=str(item.get("language", "")).strip().lower(),
                    target=str(item.get("target", "")).strip().lower(),
                    code=str(item.get("code", "")),
                    valid_for=str(item.get("valid_for", "") or ""),
                )
            )
    return out


def _renames(value: object) -> list[Rename]:
    out = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and item.get("old") and item.get("new"):
            out.append(
                Rename(
                    library=str(item.get("library", "")),
                    old=str(item["old"]),
                    new=str(item["new"]),
                    since=str(item.get("since", "")),
                )
            )
    return out


def parse_article(path: Path) -> Article:
    """Parse one article file; raises ArticleError naming the file and what is wrong."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArticleError(f"{path}: cannot read ({exc.strerror})") from exc
    if len(data) > MAX_ARTICLE_BYTES:
        raise ArticleError(f"{path}: larger than {MAX_ARTICLE_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArticleError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    front, sections = split_document(text)
    if front is None:
        raise ArticleError(f"{path}: no YAML front matter (the file must start with '---')")
    try:
        meta = _load_front_matter(front)
    except yaml.YAMLError as exc:
        # Newer libyaml builds (PyYAML 6.0.4 here) stop runaway nesting themselves, first.
        if "nesting depth" in str(getattr(exc, "problem", "") or ""):
            raise ArticleError(f"{path}: front matter is too deeply nested") from exc
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark else ""
        raise ArticleError(f"{path}: front matter is not valid YAML{where}") from exc
    except _AliasRefused as exc:
        raise ArticleError(f"{path}: front matter uses the YAML alias {exc}; write it out") from exc
    except (RecursionError, _TooDeep) as exc:
        raise ArticleError(f"{path}: front matter is too deeply nested") from exc
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        # A scalar PyYAML cannot build: 2001-13-45, a 5000-digit int, "!!timestamp x" (its
        # constructor fails with AttributeError when the explicit tag's text is no date).
        raise ArticleError(f"{path}: front matter is not valid YAML ({exc})") from exc
    if not isinstance(meta, dict):
        raise ArticleError(f"{path}: front matter must be a mapping of fields")
    zh = meta.get("zh") if isinstance(meta.get("zh"), dict) else {}
    verified = meta.get("verified_with")
    return Article(
        id=str(meta.get("id", "") or "").strip(),
        title=str(meta.get("title", "") or "").strip(),  # "title: null" is missing, not "None"
        failure_mode=str(meta.get("failure_mode", "") or "").strip(),
        path=path,
        frameworks=_str_list(meta.get("frameworks")),
        stages=_str_list(meta.get("stages")),
        models=_str_list(meta.get("models")),
        symptoms=_str_list(meta.get("symptoms")),
        error_signatures=_str_list(meta.get("error_signatures")),
        conditions=_str_list(meta.get("conditions")),
        cause=str(meta.get("cause", "") or "").strip(),
        fix=_str_list(meta.get("fix")),
        snippets=_snippets(meta.get("snippets")),
        confirm=_str_list(meta.get("confirm")),
        renames=_renames(meta.get("renames")),
        sources=_str_list(meta.get("sources")),
        verified_with={str(k): str(v) for k, v in verified.items()}
        if isinstance(verified, dict)
        else {},
        zh={
            "title": str(zh.get("title", "") or "").strip(),
            "cause": str(zh.get("cause", "") or "").strip(),
            "fix": _str_list(zh.get("fix")),
            "confirm": _str_list(zh.get("confirm")),
        },
        sections=sections,
        raw_front_matter=meta,
    )


def article_paths(articles_dir: Path) -> list[Path]:
    if not articles_dir.is_dir():
        raise ArticleError(f"no articles directory at {articles_dir}")
    return sorted(p for p in articles_dir.glob("*.md") if not p.name.startswith(("_", ".")))


def load_articles(articles_dir: Path) -> list[Article]:
    """Load every article; the first unparseable file raises (run `kb validate` for all errors)."""
    return [parse_article(p) for p in article_paths(articles_dir)]
