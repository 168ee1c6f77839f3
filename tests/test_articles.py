from pathlib import Path

import pytest

from kb.articles import parse_article, split_document
from kb.errors import ArticleError


def test_split_document_sections():
    front, sections = split_document("---\nid: x\n---\n## Cause\nfp16\n\n## Fix\nuse bf16\n")
    assert front.strip() == "id: x"
    assert sections == {"Cause": "fp16", "Fix": "use bf16"}


def test_parse_fixture_article(tiny_articles: Path):
    a = parse_article(tiny_articles / "fixture-fp16-overflow.md")
    assert a.id == "fixture-fp16-overflow"
    assert a.failure_mode == "fp16-overflow-nan"
    assert a.zh["title"] == "fp16 训练 loss 变成 nan"
    assert [s.target for s in a.snippets] == ["transformers", "hf-trainer-cli"]
    assert set(a.sections) == {"Symptoms", "Cause", "Fix", "How to confirm", "Why"}


@pytest.mark.parametrize(
    "content, message",
    [
        ("## Cause\nno front matter\n", "no YAML front matter"),
        ("---\nid: [unclosed\n---\n## Cause\nx\n", "not valid YAML"),
        ("---\n- a list\n---\n", "must be a mapping"),
    ],
)
def test_parse_errors_name_the_problem(tmp_path: Path, content: str, message: str):
    path = tmp_path / "bad.md"
    path.write_text(content)
    with pytest.raises(ArticleError, match=message):
        parse_article(path)


def test_non_utf8_article(tmp_path: Path):
    path = tmp_path / "bad.md"
    path.write_bytes(b"---\nid: \xff\xfe\n---\n")
    with pytest.raises(ArticleError, match="not valid UTF-8"):
        parse_article(path)
