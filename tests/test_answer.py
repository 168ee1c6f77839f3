"""The composed answer speaks the user's language, down to why kb has no matching case."""

from pathlib import Path

import pytest

from assistant.answer import ZH_REASONS, compose_answer
from kb.scope import Scope


@pytest.mark.parametrize(
    "scope",
    [
        Scope(training_cues=0, serving_cues=0, feature_request=True),
        Scope(training_cues=1, serving_cues=2, feature_request=False),
        Scope(training_cues=1, serving_cues=0, feature_request=False, non_llm=True),
        Scope(training_cues=0, serving_cues=0, feature_request=False, using_cues=1),
        Scope(training_cues=0, serving_cues=0, feature_request=False, used_after_training=True),
        Scope(training_cues=2, serving_cues=0, feature_request=False, speed_question=True),
    ],
)
def test_every_scope_reason_has_a_chinese_form(scope):
    assert scope.out_of_scope
    assert scope.reason in ZH_REASONS


def test_chinese_abstention_gives_the_reason_in_chinese():
    reason = "the closest cases are not similar enough"
    zh = compose_answer([], True, "zh", [], reason).text
    en = compose_answer([], True, "en", [], reason).text
    assert ZH_REASONS[reason] in zh and reason not in zh
    assert reason in en


def _hits(confidences):
    from kb.articles import load_articles
    from kb.retrieval import Hit

    fixtures = Path(__file__).parent / "fixtures" / "articles"
    articles = sorted(load_articles(fixtures), key=lambda a: a.id)
    return [
        Hit(article=a, score=1.0 / i, rank=i, confidence=c)
        for i, (a, c) in enumerate(zip(articles, confidences, strict=False), 1)
    ], articles


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_runner_up_that_fits_almost_as_well_gets_its_cause_and_every_fix_step(language):
    hits, articles = _hits([0.90, 0.85, 0.40])
    text = compose_answer(hits, False, language, []).text
    second, third = articles[1], articles[2]
    steps = second.zh["fix"] if language == "zh" and second.zh.get("fix") else second.fix
    also = text.split("### " + ("也可能是" if language == "zh" else "Also possible"))[1]
    for step in steps:
        assert step in also
    # and the checks that tell it apart from the first case, in the reader's language
    checks = second.zh["confirm"] if language == "zh" else second.confirm
    assert checks and all(check in also for check in checks[:2])
    assert ("几乎同样吻合" if language == "zh" else "fit almost as well") in text
    # The third is far below the first: not offered as an equal.
    assert third.title not in text and third.zh.get("title", third.title) not in text


def test_chinese_answer_gives_the_checks_in_chinese_unless_half_translated():
    from dataclasses import replace

    hits, _ = _hits([0.95, 0.40, 0.30])
    top = hits[0].article
    assert top.zh["confirm"] and len(top.zh["confirm"]) == len(top.confirm)
    zh = compose_answer(hits, False, "zh", []).text.split("### 如何确认")[1]
    assert all(check in zh for check in top.zh["confirm"])
    assert not any(check in zh for check in top.confirm if check not in top.zh["confirm"])
    # A list with a check missing would silently drop one: the English list is shown instead.
    half = replace(
        top, zh={**top.zh, "confirm": top.zh["confirm"][:-1]}, confirm=top.confirm + ["x"]
    )
    text = compose_answer([replace(hits[0], article=half)], False, "zh", []).text
    assert all(check in text for check in half.confirm)


def test_no_also_possible_when_the_first_case_clearly_leads():
    hits, _ = _hits([0.95, 0.60, 0.50])
    text = compose_answer(hits, False, "en", []).text
    assert "Also possible" not in text and "fit almost as well" not in text


def test_first_sentences_cuts_at_a_sentence_end_in_both_languages():
    from assistant.answer import first_sentences

    en = "Weights overflow in fp16. " * 30
    assert first_sentences(en, 60) == "Weights overflow in fp16. Weights overflow in fp16."
    zh = "fp16 下激活值溢出。" * 40
    assert first_sentences(zh, 30).endswith("。") and len(first_sentences(zh, 30)) <= 30
    assert first_sentences("short cause", 60) == "short cause"


@pytest.mark.parametrize(
    "query",
    [
        "xtuner train 报错：command error: "
        "'Adafactor is already registered in optimizer at torch.optim'",
        "Qwen2.5-7B 微调 loss 一直是 0，grad_norm 是 nan",
    ],
)
def test_a_chinese_answer_says_why_it_matched_in_chinese(real_assistant, query):
    result = real_assistant.ask(query, use_llm=False)
    assert not result.abstained
    line = next(t for t in result.answer.text.splitlines() if t.startswith("依据"))
    for english in (
        "matches the known signature",
        "shared terms",
        "similar in meaning",
        "from your log",
    ):
        assert english not in line, line
    assert result.hits[0].evidence, "the English reasons stay for English answers and the JSON"


def test_case_cards_for_a_chinese_reader_are_labelled_and_reasoned_in_chinese():
    from assistant.render import case_cards_html
    from kb.retrieval import Hit

    hits, articles = _hits([0.9])
    hit = Hit(
        article=articles[0],
        score=1.0,
        rank=1,
        confidence=0.9,
        evidence=["shared terms in summary: loss"],
        evidence_zh=["与标题和症状共有的词：loss"],
    )
    zh = case_cards_html([hit], abstained=False, language="zh")
    en = case_cards_html([hit], abstained=False, language="en")
    assert "原因" in zh and "依据" in zh and "与标题和症状共有的词" in zh
    assert "Cause:" not in zh and "shared terms" not in zh
    assert "Cause:" in en and "shared terms in summary" in en


@pytest.mark.parametrize(
    "confidences, abstains",
    [
        ([0.20, 0.60, 0.10], False),  # the first case shown is weak, the runner-up is close
        ([0.20, 0.30, 0.10], True),  # none of the cases shown is close
    ],
)
def test_abstains_only_when_no_case_shown_is_similar_enough(confidences, abstains):
    from assistant.service import _abstain

    hits, _ = _hits(confidences)
    # Chinese training talk, so the scope rules leave the decision to the similarity check.
    abstained, reason = _abstain("SFT 训练 loss 一直是 nan，grad_norm 也是 nan", hits, 0.35)
    assert abstained is abstains
    assert reason == ("the closest cases are not similar enough" if abstains else "")
