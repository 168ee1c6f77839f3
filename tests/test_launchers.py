"""A case for one framework's own script does not answer a report about another launcher."""

from pathlib import Path

import pytest

from kb.articles import parse_article
from kb.launchers import article_launchers, launchers_named
from kb.retrieval import QueryContext

ARTICLES = Path(__file__).resolve().parent.parent / "articles"
SWIFT_ARGV_CASE = "ms-swift-remaining-argv-renamed-arguments"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml 报错", {"llamafactory"}),
        ("用 LLaMA-Factory 微调 qwen 报错", {"llamafactory"}),
        ("swift sft --model Qwen/Qwen2.5-7B 训练报错", {"ms-swift"}),
        ("Using mlx-lm.lora --config config.yaml reports an error", {"mlx"}),
        ("python -m verl.trainer.main_ppo 报错，换成 OpenRLHF 也一样", {"verl", "openrlhf"}),
        ("litgpt finetune_lora checkpoints/meta-llama fails", {"litgpt"}),
        # a library every launcher runs on names no launcher; "swift" alone is a language
        ("transformers Trainer with deepspeed zero3 crashes", set()),
        ("my swift app calls the model", set()),
    ],
)
def test_launchers_are_read_from_english_and_chinese_reports(text, expected):
    assert launchers_named(text) == expected


def test_only_a_case_limited_to_launchers_is_limited():
    swift_case = parse_article(ARTICLES / f"{SWIFT_ARGV_CASE}.md")
    assert article_launchers(swift_case) == {"ms-swift"}
    # a case that also lists transformers is about the library underneath too
    general = parse_article(ARTICLES / "missing-pad-token-sft-collator-asking-to-pad.md")
    assert "transformers" in general.frameworks
    assert article_launchers(general) == frozenset()


def test_an_ms_swift_argument_case_is_contradicted_by_an_mlx_report(real_assistant):
    retriever = real_assistant.retriever
    text = (
        "mlx_lm.lora --config config.yaml 报错 ValueError: Must provide at least one of "
        "--train or --test，但是 config 里已经写了 train: true, train_type lora"
    )
    cands = retriever.candidates(text, QueryContext())
    assert SWIFT_ARGV_CASE in cands  # it shares the words, so fusion would rank it
    assert "mlx" in cands[SWIFT_ARGV_CASE].contradicts
    # Its own error string still finds it, whatever launcher the report names.
    own = "mlx 之后又装了 ms-swift: ValueError: remaining_argv: ['--sft_type', 'lora']"
    own_cands = retriever.candidates(own, QueryContext())
    assert own_cands[SWIFT_ARGV_CASE].contradicts == ""
    assert real_assistant.prepare(own).hits[0].article.id == SWIFT_ARGV_CASE
