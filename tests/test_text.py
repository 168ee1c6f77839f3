import pytest

from kb.bm25 import BM25
from kb.text import join_cjk_bigrams, normalize_for_match, tokenize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("per_device_train_batch_size=1", {"per_device_train_batch_size", "batch", "size", "1"}),
        ("--vanilla_loss", {"vanilla_loss", "vanilla", "loss"}),
        ("loss 0.6931", {"loss", "0.6931"}),
        ("loss=1.19e+34", {"loss", "1.19e+34"}),
        ("qwen2.5-7b", {"qwen2.5-7b", "7b"}),
        ("loss一直是0", {"loss", "一直", "0"}),
        ("显存不足", {"显存", "不足", "存不"}),
    ],
)
def test_tokenize_keeps_code_tokens_and_chinese(text, expected):
    assert expected <= set(tokenize(text))


def test_numbers_are_not_split():
    assert "19e" not in tokenize("1.19e+34")


def test_normalize_for_match_drops_quotes_and_spaces():
    assert (
        normalize_for_match("Cannot  set a `non-string`\nvalue") == "cannot set a non-string value"
    )


def test_bm25_matches_brute_force():
    import math
    from collections import Counter

    docs = [["fp16", "nan", "loss"], ["pad", "token", "loss"], ["dpo", "0.6931", "loss", "loss"]]
    bm = BM25.build(docs)
    query = ["loss", "nan"]
    got = bm.scores(query)
    n = len(docs)
    avg = sum(map(len, docs)) / n
    for d, doc in enumerate(docs):
        tf = Counter(doc)
        want = 0.0
        for t in query:
            df = sum(1 for x in docs if t in x)
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            f = tf[t]
            want += idf * f * 2.2 / (f + 1.2 * (1 - 0.75 + 0.75 * len(doc) / avg))
        assert got[d] == pytest.approx(want, rel=1e-5)
    assert bm.matched_terms(query, 0) == ["nan", "loss"]


@pytest.mark.parametrize(
    "text, expected, absent",
    [
        ("grad_norm is exactly 0 from step 1", {"grad_norm=0"}, {"grad_norm=nan"}),
        ("{'loss': 0.0, 'grad_norm': nan}", {"loss=0", "grad_norm=nan"}, {"grad_norm=0"}),
        ("loss一直是0，梯度为nan", {"loss=0", "grad_norm=nan"}, set()),
        ("eval_loss: nan", {"eval_loss=nan"}, {"loss=nan"}),
        ("loss is 0.6931 and 0.01 later", set(), {"loss=0"}),  # small is not zero
    ],
)
def test_metric_with_a_telling_value_is_one_term(text, expected, absent):
    """'grad_norm 0' (no gradient) and 'grad_norm nan' (overflow) must not match each other."""
    terms = set(tokenize(text))
    assert expected <= terms and not (absent & terms), terms


def test_bm25_names_the_shared_terms_of_one_document_highest_weight_first():
    from kb.bm25 import BM25

    bm25 = BM25.from_texts(
        [
            "loss is nan with fp16 on a v100",
            "pad token missing for llama-3 reward model",
            "fp16 loss scale keeps halving",
        ]
    )
    query = tokenize("fp16 loss nan llama-3 pad")
    first = bm25.matched_terms(query, 0)
    assert set(first) == {"fp16", "loss", "nan", "loss=nan"}  # "loss nan" is also one metric term
    assert first[-1] in ("fp16", "loss")  # the terms two documents share weigh least
    assert set(bm25.matched_terms(query, 1)) >= {"pad", "llama-3"}
    assert bm25.matched_terms(tokenize("deepspeed"), 2) == []


@pytest.mark.parametrize(
    "terms, shown",
    [
        (["loss=nan", "直是", "fp16", "一直"], ["loss=nan", "fp16", "一直是"]),
        (["训练", "练不", "不收", "收敛", "loss"], ["训练不收敛", "loss"]),
        (["显存", "loss"], ["显存", "loss"]),
        # A cycle has no first bigram: both stay, nothing is dropped.
        (["环境", "境环"], ["环境", "境环"]),
    ],
)
def test_evidence_terms_join_overlapping_chinese_bigrams(terms, shown):
    assert join_cjk_bigrams(terms) == shown
