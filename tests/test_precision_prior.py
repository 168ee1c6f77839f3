"""A run that states bf16 is not answered with a case that only fp16 training has."""

from __future__ import annotations

import pytest

from kb.retrieval import FP16_ONLY_MODES

LOSS_ZERO_GRAD_NAN = "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.1}"


def _top_modes(real_assistant, text):
    return [hit.article.failure_mode for hit in real_assistant.prepare(text).hits[:2]]


@pytest.mark.parametrize(
    "command",
    [
        "accelerate launch sft.py --bf16 True --per_device_train_batch_size 4",
        "torchrun train_sft.py --model_name_or_path internlm-7b --bf16 true\n训练 loss 一直为0",
    ],
)
def test_a_bf16_run_gets_no_fp16_only_case_first(real_assistant, command):
    modes = _top_modes(real_assistant, f"{command}\n{LOSS_ZERO_GRAD_NAN}")
    assert not FP16_ONLY_MODES & set(modes)


def test_the_same_metrics_in_an_fp16_run_still_get_the_fp16_cases(real_assistant):
    modes = _top_modes(real_assistant, f"python train.py --fp16 True\n{LOSS_ZERO_GRAD_NAN}")
    assert modes[0] in FP16_ONLY_MODES


def test_an_fp16_error_string_overrides_a_stated_bf16(real_assistant):
    # The exact DeepSpeed fp16 error says the run was in fp16, whatever else the paste shows.
    text = (
        "--bf16 true\nException: Current loss scale already at minimum - cannot decrease scale "
        "anymore. Exiting run."
    )
    assert _top_modes(real_assistant, text)[0] == "deepspeed-loss-scale"
