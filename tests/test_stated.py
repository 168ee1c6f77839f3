"""Metric values stated in words become retrieval phrases, in English and Chinese."""

import pytest

from assistant.stated import stated_metrics


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Finetune for InternVL2-8B loss =13.6234, grad = nan", ["grad_norm is nan"]),
        ("训练loss一直是0，梯度为nan", ["loss is 0.0", "grad_norm is nan"]),
        ("qwen2.5 dpo 训练 loss变成nan了", ["loss is nan"]),
        ("loss is 0 with qwen2.5-7b", ["loss is 0.0"]),
        ("eval_loss is NaN after step 200, grad_norm inf", ["loss is nan", "grad_norm is inf"]),
        ("loss goes to 0 after 10 steps", ["loss is 0.0"]),
    ],
)
def test_stated_values_are_read(text, expected):
    assert stated_metrics(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "loss is 0.6931 and does not move",  # a value, not a collapse: the ln2 article's job
        "the loss is 0.05 at the end",
        "loss 0.3 然后上升",
        "gradient_checkpointing=True, lossless",
        "closs = 0",  # not a metric name
    ],
)
def test_ordinary_values_are_not_anomalies(text):
    assert stated_metrics(text) == []


def test_stated_nan_routes_a_title_only_report_to_precision(real_assistant):
    prepared = real_assistant.prepare("Finetune for InternVL2-8B loss =13.6234, grad = nan")
    # One of the precision cases first (which one is close: the report names no GPU or dtype).
    precision = {"fp16-overflow-nan", "attn-kernel-nan", "fp16-underflow-large-model"}
    assert prepared.hits[0].article.failure_mode in precision
    # The fp16 overflow case is among the cases shown. (Its closest articles are ms-swift's and
    # LLaMA-Factory's, which weigh less for a report that names no tool, so since session 12 the
    # learning-rate case can come before it.)
    assert "fp16-overflow-nan" in {h.article.failure_mode for h in prepared.hits}
    # A statement is not a logged curve: kb still asks for the metric lines.
    assert "metrics" in prepared.needs


def test_a_matched_error_string_is_error_text_even_without_its_exception_type(real_assistant):
    prepared = real_assistant.prepare(
        "Cannot handle batch sizes > 1 if no padding token is defined"
    )
    assert prepared.hits[0].article.failure_mode == "missing-pad-token"
    assert prepared.needs == []


def test_a_logged_series_says_more_than_a_sentence_about_it():
    assert stated_metrics("loss is 0, grad = nan", logged={"loss": [(1, 0.0)]}) == [
        "grad_norm is nan"
    ]
