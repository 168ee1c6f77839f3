import pytest

from assistant.generation_talk import pad_as_eos_never_stops
from assistant.logs import analyze
from assistant.service import hinted_modes


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "tokenizer.pad_token = tokenizer.eos_token\n"
            "After fine-tuning it keeps generating text until max_new_tokens",
            True,
        ),
        ("I set the pad token to the eos token and the model never stops generating", True),
        ("pad_token 设为 eos_token 之后，微调后的模型生成停不下来", True),
        (
            "tokenizer.pad_token_id = tokenizer.eos_token_id; it only stops at the max length",
            True,
        ),
        # Either half alone is not the case: pad = eos is a common default, endless output has
        # other causes.
        ("tokenizer.pad_token = tokenizer.eos_token; loss is nan at step 3", False),
        ("the fine-tuned model never stops generating", False),
        ("微调后模型一直生成，停不下来", False),
        # Training words, not generation: max_steps, a loss that does not stop falling.
        ("tokenizer.pad_token = tokenizer.eos_token; I trained until max_steps=500", False),
        ("tokenizer.pad_token = tokenizer.eos_token and the loss does not stop decreasing", False),
    ],
)
def test_pad_as_eos_with_endless_generation(text, expected):
    assert pad_as_eos_never_stops(text) is expected


def test_the_report_points_to_the_pad_eos_case():
    report = "tokenizer.pad_token = tokenizer.eos_token\n微调以后模型不会停止，一直生成到最大长度"
    signals = analyze(report)
    assert signals.pad_eos_endless
    assert "eos-pad-same-token" in hinted_modes(signals)
    assert not analyze("tokenizer.pad_token = tokenizer.eos_token\nloss is 0").pad_eos_endless
