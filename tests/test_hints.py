"""Modes the log itself points to: a preference/RL run at an SFT-sized learning rate."""

import pytest

from assistant.logs import analyze
from assistant.service import hinted_modes

DPO_LINE = (
    "{{'loss': {loss}, 'learning_rate': {lr}, 'rewards/chosen': 9.7, 'rewards/rejected': 5.6, "
    "'rewards/accuracies': 1.0, 'rewards/margins': 4.1, 'epoch': 0.1}}"
)


def _dpo_log(lr: float) -> str:
    return "\n".join(DPO_LINE.format(loss=loss, lr=lr) for loss in (0.33, 4.3, 0.01, 2.9))


@pytest.mark.parametrize(
    "text, hinted",
    [
        (_dpo_log(1e-4), True),
        (_dpo_log(5e-7), False),  # the usual DPO range
        ("llamafactory-cli train --stage dpo --learning_rate 2e-4 --finetuning_type lora", True),
        ("DPO 训练 --stage dpo --learning_rate 5e-6，loss 震荡", False),
        ("--stage sft --learning_rate 2e-4", False),  # usual for LoRA SFT
        ("--stage dpo --learning_rate ${LR}", False),  # not a number
        # a crash: its error string decides, not the setting
        (
            "--stage dpo --learning_rate 1e-4\n"
            "ValueError: Asking to pad but the tokenizer does not have a padding token.",
            False,
        ),
    ],
)
def test_preference_run_at_a_high_learning_rate_hints_the_lr_mode(text, hinted):
    assert ("lr-too-high-divergence" in hinted_modes(analyze(text))) is hinted


def test_the_high_dpo_learning_rate_ranks_the_lr_case_first(real_assistant):
    prepared = real_assistant.prepare(_dpo_log(1e-4))
    assert not prepared.abstained
    assert prepared.hits[0].article.failure_mode == "lr-too-high-divergence"


def test_search_ranks_a_log_the_way_ask_answers_it(real_assistant):
    # `kb search` and the API's search read the log's signals too: the hinted learning-rate case
    # leads there as well, not only in `kb ask`.
    log = _dpo_log(1e-4)
    searched = [hit.article.id for hit in real_assistant.search(log, 3)]
    asked = [hit.article.id for hit in real_assistant.prepare(log, 3).hits]
    assert searched == asked
    assert real_assistant.search(log, 1)[0].article.failure_mode == "lr-too-high-divergence"
