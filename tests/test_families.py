"""A case written for one model family does not answer a report about another family."""

import pytest

from kb.families import families_named
from kb.launchers import tools_named
from kb.retrieval import QueryContext

GLM4_CASE = "repo-glm4-finetune-config-unexpected-keyword-freezev"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Qwen2.5-7B-Instruct lora 微调报错", {"qwen"}),
        ("chatglm3-6b 多卡训练报错", {"glm"}),
        ("glm-4-9b-chat finetune.py fails", {"glm"}),
        ("Mixtral 8x7b and llama3 both crash", {"mistral", "llama"}),
        ("phi-3-mini qlora", {"phi"}),
        ("Baichuan2-13B 全量微调", {"baichuan"}),
        ("Qwen微调报错，换成 chatglm模型也一样", {"qwen", "glm"}),  # next to Chinese text
        # words that only look like a family: no version after the short ones, or inside a word
        ("the optimizer state and my options", set()),
        ("yield a batch, phi is the angle", set()),
        ("vicuna-7b lora 训练 loss 不降", set()),  # a derivative kb does not tie to a base family
    ],
)
def test_model_families_are_read_from_english_and_chinese_reports(text, expected):
    assert families_named(text) == expected


def _top_ids(real_assistant, text):
    return [hit.article.id for hit in real_assistant.prepare(text).hits]


def test_a_glm4_script_case_does_not_answer_a_qwen_report(real_assistant):
    text = (
        "用 finetune.py 微调 Qwen2.5-7B，Traceback 指向 main()，"
        "TypeError: __init__() got an unexpected keyword argument 'packing'"
    )
    assert GLM4_CASE not in _top_ids(real_assistant, text)
    # Its own error string still finds it, whatever model the report names.
    matched = text.replace("'packing'", "'freezeV'")
    assert _top_ids(real_assistant, matched)[0] == GLM4_CASE


def test_a_family_case_is_only_marked_unconfirmed_when_the_report_names_no_model(real_assistant):
    retriever = real_assistant.retriever
    unnamed = "训练时 TypeError: __init__() got an unexpected keyword argument 'packing'"
    cands = retriever.candidates(unnamed, QueryContext())
    assert GLM4_CASE in cands
    assert cands[GLM4_CASE].family_unconfirmed  # a GLM-4 case, and no model in the report
    general = [a for a in cands if not retriever._families.get(a) and not retriever._title_tools[a]]
    assert general and not any(cands[a].family_unconfirmed for a in general)
    # Its own error string confirms it whether or not the model is named.
    own = unnamed.replace("'packing'", "'freezeV'")
    assert not retriever.candidates(own, QueryContext())[GLM4_CASE].family_unconfirmed
    assert _top_ids(real_assistant, own)[0] == GLM4_CASE


UNSLOTH_V100_CASE = "unsloth-t4-v100-bf16-fp16-precision-mismatch"


@pytest.mark.parametrize(
    "text, tools",
    [
        ("Unsloth on T4 / V100: Your setup doesn't support bf16/gpu", {"unsloth"}),
        ("用 llamafactory-cli train 跑 Megatron 转换后的权重", {"llamafactory", "megatron"}),
        ("nanoGPT 在 V100 上 float16 训练几千步后 loss 变 nan", {"nanogpt"}),
        ("HF Trainer with fp16=True on a V100", set()),
        ("DeepSpeed-Chat step 3: 'Current loss scale already at minimum'", {"deepspeed-chat"}),
        ("bash training/step3_rlhf_finetuning/run_1.3b.sh 报错", {"deepspeed-chat"}),
        ("deepspeed --num_gpus 4 train.py --deepspeed ds_z3.json", set()),
    ],
)
def test_tools_are_read_from_titles_and_reports(text, tools):
    assert tools_named(text) == tools


def test_a_tool_case_is_unconfirmed_when_the_report_never_names_the_tool(real_assistant):
    retriever = real_assistant.retriever
    report = "T4 上 bf16 不支持，改成 fp16 之后又报精度不匹配"
    cands = retriever.candidates(report, QueryContext())
    assert UNSLOTH_V100_CASE in cands and cands[UNSLOTH_V100_CASE].family_unconfirmed
    named = retriever.candidates("unsloth: " + report, QueryContext())
    assert not named[UNSLOTH_V100_CASE].family_unconfirmed
