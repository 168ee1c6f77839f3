"""The guard on generated text, with crafted bad generations (no model needed)."""

from pathlib import Path

import pytest

from assistant.guard import (
    contradictions,
    invented_names,
    repetitive,
    trim_to_sentence,
    ungrounded,
)
from kb.articles import parse_article
from kb.retrieval import Hit

FIXTURES = Path(__file__).parent / "fixtures" / "articles"


@pytest.fixture
def fp16_hit():
    article = parse_article(FIXTURES / "fixture-fp16-overflow.md")
    return Hit(article=article, score=1.0, rank=1, confidence=0.9)


@pytest.mark.parametrize(
    "text, invented",
    [
        ("Set bf16=True and fp16=False in TrainingArguments.", []),
        ("Set use_bfloat16_mode=True to fix it.", ["use_bfloat16_mode"]),
        ("Run with --bf16 True --magic_precision 2.", ["magic_precision"]),
        ("fp16_full_eval: true\nsuper_stable: yes", ["super_stable"]),
        ("把 per_device_train_batch_size=1 改成 2，并设置 bf16=True。", []),
    ],
)
def test_invented_names(fp16_hit, text, invented):
    assert invented_names(text, [fp16_hit]) == invented


@pytest.mark.parametrize(
    "text, bad",
    [
        ("Use bf16=True and fp16=False.", False),
        ("Set bf16=False and fp16=True to fix it.", True),  # flipped booleans
        ("Enable fp16 to avoid the overflow.", True),  # the case turns fp16 off
        ("Keep --fp16 False and use --bf16 True.", False),
    ],
)
def test_contradictions(fp16_hit, text, bad):
    assert bool(contradictions(text, fp16_hit.article)) is bad


def test_ungrounded_numbers_and_words():
    sources = ["Activations exceed the fp16 range (65504) and overflow to inf, then nan."]
    assert ungrounded("Activations exceed the fp16 range (65504).", sources) == []
    assert ungrounded("Batch sizes above 20 overflow.", sources)[0] == "number 20"
    assert ungrounded("Reinstall the graphics driver and reboot the computer.", sources)


def test_repetition_and_trimming():
    assert repetitive("on Llama-3.1 + on Llama-3.1 + on Llama-3.1 + on Llama-3.1")
    assert not repetitive("Set bf16=True. It keeps the fp16 range problem away.")
    assert trim_to_sentence("Use bf16. This can be") == "Use bf16."
    assert trim_to_sentence("改用 bf16。然后") == "改用 bf16。"


def test_a_value_named_in_a_snippet_comment_or_set_both_ways_is_not_held_against_the_model():
    from dataclasses import replace

    from kb.articles import Snippet

    article = parse_article(FIXTURES / "fixture-fp16-overflow.md")
    commented = replace(
        article,
        snippets=[
            Snippet(
                "python",
                "transformers",
                "args = TrainingArguments(\n"
                "    bf16=True,  # instead of fp16=True\n"
                "    fp16=False,\n"
                ")",
            ),
        ],
    )
    assert contradictions("Set fp16=False and bf16=True.", commented) == []
    assert contradictions("Set fp16=True.", commented) != []
    both_ways = replace(
        commented,
        snippets=[*commented.snippets, Snippet("bash", "hf-trainer-cli", "# V100\n--fp16 True")],
    )
    assert contradictions("On a V100 keep fp16=True.", both_ways) == []
