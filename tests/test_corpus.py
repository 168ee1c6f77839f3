"""The shipped corpus answers its own seed cases, in English and Chinese (real index, real e5)."""

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "query, expected_mode",
    [
        ("loss is 0 with qwen2.5-7b", "fp16-underflow-large-model"),
        (
            "换成 qwen2.5-7b 以后 SFT 和 DPO 的 loss 一直是 0，0.5b 正常",
            "fp16-underflow-large-model",
        ),
        ("Cannot handle batch sizes > 1 if no padding token is defined", "missing-pad-token"),
        ("llama3 奖励模型训练 batch size 大于 1 报错，没有 padding token", "missing-pad-token"),
        (
            "OpenRLHF KTO training with --vanilla_loss gives nan loss on Qwen2",
            "kto-vanilla-loss-nan",
        ),
        ("OpenRLHF 训练 Qwen2 KTO，开了 vanilla_loss 之后 loss 变成 nan", "kto-vanilla-loss-nan"),
        (
            "TRL padding_free gives abnormally high loss that grows with batch size",
            "padding-free-high-loss",
        ),
        ("TRL 开启 padding_free 后 loss 异常高，batch size 越大越明显", "padding-free-high-loss"),
        (
            "LoRA reward model, lora_task_type SEQ_CLS: loss 1.19e+34, grad_norm nan, then 0",
            "lora-reward-model-seq-cls",
        ),
        (
            "用 LoRA 训练奖励模型，loss 出现 1.19e+34，grad_norm 是 nan，然后变成 0",
            "lora-reward-model-seq-cls",
        ),
    ],
)
def test_seed_cases_rank_first(real_assistant, query, expected_mode):
    result = real_assistant.ask(query, use_llm=False)
    assert not result.abstained
    assert result.hits[0].article.failure_mode == expected_mode, [
        h.article.id for h in result.hits[:3]
    ]


def test_qwen_7b_loss_zero_points_to_bf16(real_assistant):
    result = real_assistant.ask("loss is 0 with qwen2.5-7b", use_llm=False)
    assert "bf16" in result.answer.text


def test_out_of_scope_abstains(real_assistant):
    result = real_assistant.ask(
        "How do I deploy my model with vllm serve and enable tool calling?", use_llm=False
    )
    assert result.abstained and "No known case matches" in result.answer.text


def test_report_without_error_text_asks_for_it(real_assistant):
    result = real_assistant.ask("LoRA 微调报错了，见截图", use_llm=False)
    assert "traceback" in result.needs
    assert "完整的报错堆栈" in result.answer.text
