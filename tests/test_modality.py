"""A vision-language case does not answer a report that mentions no image, vision or VLM."""

import pytest

from kb.modality import mentions_vision


@pytest.mark.parametrize(
    "text, expected",
    [
        ("LLaVA lora 微调到一半 loss 突然上升", True),
        ("Qwen2.5-VL sft: Image features and image tokens do not match", True),
        ("多模态模型微调，图片太大显存不够", True),
        ("InternVL2-4B 微调报错", True),
        ("mistral qlora fine tuning, the loss is really big", False),
        ("Qwen/finetune.py with model_max_length 32768 crashes", False),
        ("qwen2 lora 微调 loss 很大 降不下来", False),
        ("visualize the loss curve", False),  # "visualize" is not "visual"
    ],
)
def test_vision_talk_is_recognised_in_english_and_chinese(text, expected):
    assert mentions_vision(text) is expected


def test_a_text_only_loss_report_is_not_answered_with_a_vlm_case(real_assistant):
    text = "mistral qlora fine tuning, the loss suddenly jumps after many steps and never recovers"
    hits = real_assistant.prepare(text).hits
    assert hits and not hits[0].article.id.startswith(("llava-", "vlm-"))
    vlm = real_assistant.prepare("LLaVA-1.5 " + text).hits
    assert vlm[0].article.id == "llava-vlm-lora-loss-jumps-mid-training-lr"
