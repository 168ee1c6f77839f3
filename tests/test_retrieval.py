import pytest

from kb.embedding import load_embedder
from kb.index import build_index, load_index
from kb.retrieval import QueryContext, Retriever


@pytest.fixture
def retriever(tiny_settings):
    build_index(tiny_settings)
    return Retriever(load_index(tiny_settings), load_embedder("e5"))


@pytest.mark.parametrize(
    "query, expected",
    [
        (
            "ValueError: Cannot handle batch sizes > 1 if no padding token is defined.",
            "missing-pad-token-llama3-reward-model",
        ),
        (
            "llama3 没有 pad token，batch size 大于 1 就报错",
            "missing-pad-token-llama3-reward-model",
        ),
        ("{'loss': nan, 'grad_norm': nan} with fp16", "fixture-fp16-overflow"),
        ("训练时 loss 变成 nan", "fixture-fp16-overflow"),
        ("dpo loss 一直是 0.693 不下降", "fixture-dpo-stuck"),
        ("DPO loss stuck at 0.6931", "fixture-dpo-stuck"),
    ],
)
def test_hybrid_top_hit(retriever, query, expected):
    hits = retriever.search(query, k=3)
    assert hits[0].article.id == expected
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_signature_match_is_evidence_and_confident(retriever):
    hit = retriever.search("Cannot set a non-string value as the PAD token", k=1)[0]
    assert hit.article.id == "missing-pad-token-llama3-reward-model"
    assert hit.confidence > 0.9
    assert any("signature" in e for e in hit.evidence)


def test_signals_add_evidence(retriever):
    # A vague question: the anomaly the analyzer found in the log is what picks the case.
    anomaly = "DPO loss stuck at 0.6931 (ln 2) from step 1"
    ctx = QueryContext(phrases=(anomaly,), anomalies=(anomaly,), stage="dpo")
    hit = retriever.search("my training does not learn", k=1, context=ctx)[0]
    assert hit.article.id == "fixture-dpo-stuck"
    assert any(e.startswith("from your log") for e in hit.evidence)


def test_a_library_version_is_evidence_only_for_a_case_that_names_it(retriever):
    # The package word alone matches every case about it: "trl 0.11.0" is not evidence for a
    # case checked on TRL 0.19, while "trl 0.19.1" is.
    anomaly = "DPO loss stuck at 0.6931 (ln 2) from step 1"
    for version, shown in (("0.19.1", True), ("0.11.0", False)):
        phrases = (anomaly, f"trl {version}")
        ctx = QueryContext(
            phrases=phrases, anomalies=(anomaly,), stage="dpo", versions=(("trl", version),)
        )
        hit = retriever.search("my trl dpo training does not learn", k=1, context=ctx)[0]
        assert hit.article.id == "fixture-dpo-stuck"
        assert f"from your log: {anomaly}" in hit.evidence
        assert (f"from your log: trl {version}" in hit.evidence) is shown
        assert (f"来自你的日志：trl {version}" in hit.evidence_zh) is shown


def test_scores_are_ordered(retriever):
    hits = retriever.search("loss nan fp16 pad token dpo", k=3)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_case_naming_grad_norm_nan_is_demoted_when_the_run_logs_grad_norm_zero(retriever):
    # The fixture fp16 case names "grad_norm is nan"; a run whose grad_norm is exactly 0 has no
    # gradient at all, so that case contradicts the log (in English and Chinese).
    def score(text: str, *anomalies: str) -> float:
        hits = retriever.search(text, k=3, context=QueryContext(anomalies=anomalies))
        return {h.article.id: h.score for h in hits}["fixture-fp16-overflow"]

    for text, zero, nan in [
        (
            "fp16 training, grad_norm problem",
            "grad_norm is exactly 0 from step 1",
            "grad_norm is nan",
        ),
        ("fp16 训练，梯度有问题", "梯度为0", "梯度为nan"),
    ]:
        assert score(text, zero) < 0.75 * score(text, nan)
    # Both values in one run decide nothing: the case keeps the score an agreeing log gives it.
    text = "fp16 training, grad_norm problem"
    both = score(text, "grad_norm is 0 at step 1", "grad_norm is nan at step 9")
    assert both == score(text, "grad_norm is nan at step 9", "grad_norm is 0 at step 1")
    assert both > 0.75 * score(text, "grad_norm is nan at step 9", "grad_norm is nan at step 1")


def _mode_order(scored_rows, modes_of):
    """Article ids in the order order_by_mode puts them, from (score, id, signatures) rows."""
    from kb.retrieval import _Candidate, order_by_mode

    scored = [(score, aid, _Candidate(signatures=sigs)) for score, aid, sigs in scored_rows]
    return [aid for _, aid, _ in order_by_mode(scored, modes_of.__getitem__)]


def test_several_fitting_cases_of_one_mode_outrank_one_case_that_fits_a_little_better():
    modes = {"crash-a": "framework-bug", "ver-1": "version", "ver-2": "version", "ver-3": "version"}
    rows = [(1.00, "crash-a", []), (0.95, "ver-1", []), (0.94, "ver-2", []), (0.93, "ver-3", [])]
    # version: 0.95 + 0.1 * (0.94 + 0.93) = 1.137 > 1.0; the runners-up of a shown mode come last
    assert _mode_order(rows, modes) == ["ver-1", "crash-a", "ver-2", "ver-3"]


def test_a_mode_that_fits_clearly_worse_gains_nothing_from_its_many_cases():
    modes = {"rm": "lora-rm", **{f"fp16-{i}": "fp16" for i in range(8)}}
    rows = [(1.00, "rm", [])] + [(0.80 - i * 0.01, f"fp16-{i}", []) for i in range(8)]
    # fp16 scores below the gate (0.87 of the top): ungated, 0.8 + 0.1 * 5.32 would put it first
    assert _mode_order(rows, modes)[:2] == ["rm", "fp16-0"]


def test_the_top_case_with_a_matched_error_string_keeps_its_mode_first():
    modes = {"sig": "framework-bug", "ver-1": "version", "ver-2": "version", "ver-3": "version"}
    rows = [(1.00, "sig", ["KeyError: 'x'"]), (0.99, "ver-1", []), (0.98, "ver-2", [])]
    rows.append((0.97, "ver-3", []))
    assert _mode_order(rows, modes)[0] == "sig"
