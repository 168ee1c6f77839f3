"""A case written for one model family does not answer a report about another family."""

import pytest

from kb.families import families_named
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
    general = [a for a, c in cands.items() if not retriever._families.get(a)]
    assert general and not any(cands[a].family_unconfirmed for a in general)
    # Its own error string confirms it whether or not the model is named.
    own = unnamed.replace("'packing'", "'freezeV'")
    assert not retriever.candidates(own, QueryContext())[GLM4_CASE].family_unconfirmed
    assert _top_ids(real_assistant, own)[0] == GLM4_CASE
