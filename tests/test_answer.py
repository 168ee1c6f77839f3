"""The composed answer speaks the user's language, down to why kb has no matching case."""

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
    ],
)
def test_every_scope_reason_has_a_chinese_form(scope):
    assert scope.out_of_scope
    assert scope.reason in ZH_REASONS


def test_chinese_abstention_gives_the_reason_in_chinese():
    reason = "the closest cases are not similar enough"
    zh = compose_answer([], True, "zh", [], None, reason).text
    en = compose_answer([], True, "en", [], None, reason).text
    assert ZH_REASONS[reason] in zh and reason not in zh
    assert reason in en
