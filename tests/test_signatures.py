"""Signature regexes with a gap ("this frame, then later that error") are matched in linear time."""

import re
from pathlib import Path

from kb.articles import load_articles
from kb.signatures import _Chain, compile_signature, only_says_a_process_died

ROOT = Path(__file__).resolve().parents[1]
SIGNATURES = sorted(
    {
        sig[3:]
        for article in load_articles(ROOT / "articles")
        for sig in article.error_signatures
        if sig.startswith("re:")
    }
)
TEXTS = [p.read_text(errors="replace") for p in sorted((ROOT / "tests/fixtures/logs").iterdir())]
TEXTS += [
    'File "trl/trainer/dpo_trainer.py", line 9\ntorch.OutOfMemoryError: CUDA out of memory.',
    "OutOfMemoryError first\nthen dpo_trainer.py",  # pieces in the wrong order: no match
    "logits = logits.float()\n" * 3 + "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB",
]


def test_gapped_patterns_are_split_and_others_are_not():
    assert isinstance(compile_signature(r"(dpo|kto)_trainer\.py[\s\S]*(OutOfMemoryError)"), _Chain)
    for whole in (
        r"a[\s\S]*b|c",
        r"(a[\s\S]*b)",
        r"plain error text",
        r"a[^\s\S]*b",
        r"a\w*[\s\S]*bc",  # "abc": a\w* must give back "bc", which a chain could not
    ):
        assert not isinstance(compile_signature(whole), _Chain)


def test_every_corpus_signature_finds_what_the_plain_regex_finds():
    differ = []
    for source in SIGNATURES:
        matcher, plain = compile_signature(source), re.compile(source, re.IGNORECASE)
        for text in TEXTS:
            if (matcher.span_in(text) is not None) != bool(plain.search(text)):
                differ.append((source, text[:60]))
    assert len(SIGNATURES) > 500 and not differ


def test_chain_keeps_piece_order_and_a_plus_gap_needs_a_character():
    chain = compile_signature(r"frame A[\s\S]*error B")
    assert chain.span_in("x frame A ... error B") == (2, 21)
    assert chain.span_in("error B then frame A") is None
    assert compile_signature(r"ab[\s\S]+cd").span_in("abcd") is None
    assert compile_signature(r"ab[\s\S]+cd").span_in("ab-cd") == (0, 5)
    assert compile_signature(r"(?s)ab[\s\S]*c.d").span_in("ab\nc\nd") == (0, 6)


def test_a_paste_repeating_a_frame_name_is_not_searched_from_every_repeat():
    # The plain regex retries from each of the 14,000 frame names to the end of the text (over a
    # minute for the corpus); the chain searches each piece once.
    hostile = ("dpo_trainer.py " * 14_000)[:200_000]
    chain = compile_signature(r"(dpo|kto)_trainer\.py[\s\S]*(CUDA out of memory|OutOfMemoryError)")
    assert isinstance(chain, _Chain) and chain.span_in(hostile) is None
    assert chain.span_in(hostile + "OutOfMemoryError") == (0, 200_016)


def test_curly_and_full_width_quotes_match_an_ascii_signature():
    from kb.signatures import SignatureMatcher

    articles = [
        a
        for a in load_articles(ROOT / "articles")
        if a.id == "trl-too-old-cannot-import-grpoconfig"
    ]
    matcher = SignatureMatcher(articles)
    # pasted through a chat app / a Chinese IME, and TRL's lazy module, which prints no quotes
    for text in (
        "ImportError: cannot import name ‘GRPOConfig’ from “trl”",
        "报错 cannot import name ＇GRPOTrainer＇ from ＇trl＇",
        "AttributeError: module trl has no attribute GRPOConfig. Did you mean: 'ORPOConfig'?",
    ):
        assert [m.article_id for m in matcher.match(text)], text


def test_launcher_lines_are_told_from_errors_that_say_why():
    assert not only_says_a_process_died("torch.distributed.elastic.multiprocessing.errors")
    assert only_says_a_process_died("ChildFailedError")
    assert only_says_a_process_died("Root Cause (first observed failure)")
    assert not only_says_a_process_died("re:failed \\(exitcode: -9\\) local_rank: \\d+")
    assert not only_says_a_process_died("CUDA out of memory")
    assert not only_says_a_process_died("re:exitcode\\s*:\\s*-11")  # SIGSEGV names the crash
    assert only_says_a_process_died("failed (exitcode: -15)")  # SIGTERM: the launcher's own stop
