"""Snippets adapted to the user's run: their values kept, the fix's own keys untouched, renames."""

from dataclasses import replace
from pathlib import Path

from assistant.logs import analyze
from assistant.tailor import tailor_snippets
from kb.articles import Rename, Snippet, parse_article

FIXTURES = Path(__file__).parent / "fixtures" / "articles"


def _fp16_article():
    return parse_article(FIXTURES / "fixture-fp16-overflow.md")


def test_cli_run_gets_cli_snippet_with_own_batch_size():
    signals = analyze(
        "torchrun train.py --fp16 True --per_device_train_batch_size 16\n"
        "{'loss': nan, 'grad_norm': nan}"
    )
    snippets = tailor_snippets(_fp16_article(), signals)
    assert snippets[0].language == "bash"
    assert "--per_device_train_batch_size 16" in snippets[0].code
    assert "--bf16 True --fp16 False" in snippets[0].code  # the fix keeps its own values
    python = next(s for s in snippets if s.language == "python")
    assert "per_device_train_batch_size=16" in python.code


def test_renamed_argument_follows_the_users_version():
    article = replace(
        _fp16_article(),
        renames=[Rename("transformers", "evaluation_strategy", "eval_strategy", "4.41")],
        snippets=[
            Snippet(
                "python", "transformers", 'TrainingArguments(output_dir="o", eval_strategy="steps")'
            )
        ],
    )
    old = tailor_snippets(article, analyze("transformers==4.38.2\nloss nan"))[0].code
    new = tailor_snippets(article, analyze("transformers==4.46.0\nloss nan"))[0].code
    assert "evaluation_strategy=" in old and "eval_strategy=" not in old.replace(
        "evaluation_strategy", ""
    )
    assert 'eval_strategy="steps"' in new and "evaluation_strategy" not in new


def test_no_signals_leaves_snippets_as_written():
    article = _fp16_article()
    snippets = tailor_snippets(article, analyze("loss becomes nan"))
    assert [s.code for s in snippets] == [s.code for s in article.snippets[:2]]


def test_a_v100_run_is_never_handed_a_bf16_snippet_for_a_precision_fix():
    article = replace(
        _fp16_article(),
        snippets=[
            *_fp16_article().snippets,
            Snippet("python", "transformers", 'TrainingArguments(output_dir="o")  # fp32, no bf16'),
        ],
    )
    on_v100 = tailor_snippets(article, analyze("8卡V100 训练 loss 变成 nan，fp16"))
    assert [s.code.strip() for s in on_v100] == [
        'TrainingArguments(output_dir="o")  # fp32, no bf16'
    ]
    on_a100 = tailor_snippets(article, analyze("A100 training, loss becomes nan with fp16"))
    assert any("bf16=True" in s.code for s in on_a100)


def test_a_snippet_with_incidental_bf16_gets_a_note_on_a_gpu_without_bf16():
    loading = Snippet(
        "python",
        "transformers",
        'model = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.bfloat16)',
    )
    article = replace(
        _fp16_article(), fix=["Pass the tokenizer as processing_class."], snippets=[loading]
    )
    snippet = tailor_snippets(article, analyze("Tesla T4, DPO crashes at start"))[0]
    assert snippet.code.startswith("# your T4 has no bf16")
    assert "torch.bfloat16" in snippet.code
