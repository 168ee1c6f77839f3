"""The versions a reporter says work become a pin; versions that failed too never do."""

import pytest

from assistant.version_talk import WorkingVersion, working_versions


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "This does not occur when I downgrade to **trl==v0.19.1**, same model",
            [("trl", "0.19.1")],
        ),
        (
            "when I use peft==0.9.0, loss is always NAN, when I use peft==0.3.0, loss is normal.",
            [("peft", "0.3.0")],
        ),
        ("It works fine with transformers 4.38.2 but not 4.39", [("transformers", "4.38.2")]),
        ("works on the older deepspeed 0.12.6.", [("deepspeed", "0.12.6")]),
        ("回退到 transformers 4.40.0 就正常了", [("transformers", "4.40.0")]),
        ("transformers==4.36.2 时没问题，4.37 报错", [("transformers", "4.36.2")]),
        ("Works with trl 0.8.6. Fails with 0.9.0, still.", [("trl", "0.8.6")]),
        (
            "rolled back to torch 2.1.2 and flash_attn 2.5.8 works",
            [("torch", "2.1.2"), ("flash-attn", "2.5.8")],
        ),
    ],
)
def test_versions_said_to_work_are_found(text, expected):
    assert [(w.package, w.version) for w in working_versions(text)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "it doesn't work with trl 0.19.1 either",
        "降级到 transformers 4.40 也不行",
        "I still get it when I downgrade to peft 0.10.0",
        "after I upgraded to transformers 4.57.3, the loss stopped decreasing",
        "I use torch 2.1 and trl 0.7.4",
        "降级到 peft 0.9.0 还是一样的报错",
    ],
)
def test_versions_that_failed_or_are_only_listed_are_not_offered(text):
    assert working_versions(text) == []


def test_the_pin_is_a_pip_command_with_the_pip_name():
    assert working_versions("works with pytorch 2.1.2")[0].pin == 'pip install "torch==2.1.2"'
    assert WorkingVersion("flash-attn", "2.5.8").pin == 'pip install "flash-attn==2.5.8"'


def test_the_answer_offers_the_pin_in_the_users_language(real_assistant):
    zh = real_assistant.prepare(
        "升级 trl 之后 DPO 训练报错 TypeError: DPOTrainer.__init__() got an unexpected keyword "
        "argument 'tokenizer'，回退到 trl 0.11.4 就正常了"
    )
    assert 'pip install "trl==0.11.4"' in zh.composed.text
    assert "固定这些版本" in zh.composed.text
    en = real_assistant.prepare(
        "TypeError: DPOTrainer.__init__() got an unexpected keyword argument 'tokenizer'"
    )
    assert "versions worked" not in en.composed.text
