"""The answer says what the fix changes in the user's own settings, and never bf16 on a V100."""

from assistant.changes import NOT_SET, changes_for_run, snippet_settings
from assistant.logs import analyze
from kb.articles import Snippet

YAML = Snippet("yaml", "llamafactory", "per_device_train_batch_size: 4\nbf16: true\n# fp16: true\n")
CLI = Snippet("bash", "llamafactory", "llamafactory-cli train x.yaml bf16=true fp16=false\n")
DS = Snippet(
    "json", "deepspeed", '{"zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}}'
)
PY = Snippet("python", "transformers", "TrainingArguments(output_dir='out', learning_rate=2e-5)")


def test_settings_are_read_from_every_snippet_form_and_comments_are_not_settings():
    assert snippet_settings(YAML) == {"per_device_train_batch_size": "4", "bf16": "true"}
    assert snippet_settings(CLI) == {"bf16": "true", "fp16": "false"}
    assert snippet_settings(DS) == {"zero_stage": "3", "bf16": "auto"}
    assert snippet_settings(PY) == {"output_dir": "out", "learning_rate": "2e-5"}


def test_only_values_that_differ_are_changes_and_numbers_compare_as_numbers():
    flags = {"fp16": "True", "zero_stage": "2", "learning_rate": "0.00002"}
    changes = changes_for_run([CLI, DS, PY], flags, fix_words={"bf16", "fp16"})
    assert [str(c) for c in changes] == [
        "fp16: true → false",
        "zero_stage: 2 → 3",
        f"bf16: {NOT_SET['en']} → true",
    ]


def test_additions_alone_are_not_shown_since_kb_cannot_see_the_users_settings():
    assert changes_for_run([CLI], {}, fix_words={"bf16", "fp16"}) == []
    assert changes_for_run([CLI], {"fp16": "false"}, fix_words={"bf16", "fp16"}) == []


def test_a_gpu_without_bf16_gets_no_precision_changes():
    changes = changes_for_run([CLI, DS], {"fp16": "true", "zero_stage": "2"}, {"bf16"}, "V100")
    assert [c.key for c in changes] == ["zero_stage"]


def test_gpu_is_read_next_to_chinese_text():
    assert analyze("8卡V100 32G全量微调").hardware == "V100"
    assert analyze("用A100显卡训练").hardware == "A100"


def test_chinese_oom_report_on_v100_gets_its_changes_and_no_bf16(real_assistant):
    prepared = real_assistant.prepare(
        "8卡V100 全量微调 llama-7b OOM\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.14 GiB\n"
        '{"zero_optimization": {"stage": 2}, "fp16": {"enabled": true}}\n'
        "--per_device_train_batch_size 4 --fp16\n"
    )
    text = prepared.composed.text
    assert "你的配置需要改的地方" in text
    assert "`zero_stage: 2 → 3`" in text
    changes_part = text.split("你的配置需要改的地方")[1].split("###")[0]
    assert "bf16" not in changes_part
    assert "你的显卡（V100）不支持 bf16" in text


def test_zero_stage_is_read_from_chinese_prose_and_llamafactory_config_names():
    assert analyze("使用的是readme中的deepspeed zero stage2示例配置").flags["zero_stage"] == "2"
    lf = "deepspeed: examples/deepspeed/ds_z3_offload_config.json"
    assert analyze(lf).flags["zero_stage"] == "3"
    assert "zero_stage" not in analyze("zero12 retries").flags


def test_a_setting_the_run_does_not_show_reads_as_not_set_in_the_users_language():
    flags = {"fp16": "True"}
    changes = changes_for_run([CLI], flags, fix_words={"bf16", "fp16"})
    assert [c.text("zh") for c in changes] == ["fp16: true → false", "bf16: （未设置） → true"]
    assert [c.text("en") for c in changes][1] == "bf16: (not set) → true"
