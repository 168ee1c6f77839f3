from pathlib import Path

import pytest

from kb.articles import Snippet
from kb.oneliners import one_liner_problem, one_liners
from kb.validate import check_snippet, taxonomy_ids, validate_corpus

SHARED_TAXONOMY = Path(__file__).resolve().parents[2] / "shared" / "taxonomy.md"


def test_fixture_corpus_is_valid(tiny_articles):
    articles, problems = validate_corpus(tiny_articles)
    assert len(articles) == 3
    assert [p for p in problems if p.severity == "error"] == []


def test_shipped_corpus_is_valid():
    articles, problems = validate_corpus(Path(__file__).resolve().parents[1] / "articles")
    assert len(articles) >= 45
    assert [str(p) for p in problems if p.severity == "error"] == []


@pytest.mark.skipif(not SHARED_TAXONOMY.exists(), reason="shared/ is not beside the checkout")
def test_taxonomy_copy_matches_shared():
    import re

    shared = set(re.findall(r"^\| `([a-z0-9-]+)`", SHARED_TAXONOMY.read_text(), re.M))
    assert taxonomy_ids() == shared


TITLE_LINE = 'title: "Loss becomes nan in fp16 training"'


def _break(tiny_articles: Path, old: str, new: str) -> list[str]:
    path = tiny_articles / "fixture-fp16-overflow.md"
    path.write_text(path.read_text().replace(old, new, 1))
    _, problems = validate_corpus(tiny_articles)
    return [str(p) for p in problems if p.severity == "error"]


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("failure_mode: fp16-overflow-nan", "failure_mode: fp16-too-big", "unknown taxonomy id"),
        ("id: fixture-fp16-overflow", "id: fixture-dpo-stuck", "duplicate id"),
        ("## Why\nfp16 has a 5-bit exponent.", "## Why\n", "## Why: body section missing"),
        ('  - "loss 变成 nan"\n', "", "needs Chinese phrasings"),
        ("bf16=True, fp16=False,", "bf16=True, fp16_mode=False,", "no argument 'fp16_mode'"),
        ("--bf16 True --fp16 False", "--bf16 True --use_bf16 True", "no flag --use_bf16"),
        ('re:loss.{0,5}nan"', 're:loss.{0,5(nan"', "bad regex"),
        (
            "https://huggingface.co/docs/transformers/perf_train_gpu_one",
            "see the docs",
            "not a URL",
        ),
        ('  title: "fp16 训练 loss 变成 nan"\n', "", "zh.title"),
        (TITLE_LINE + "\n", "title: null\n", "title"),  # null is missing, not the text "None"
        (  # a snippet indented into the renames list would otherwise vanish silently
            "\nconfirm:\n",
            "\nrenames:\n  - language: python\n    target: torch\n    code: x = 1\nconfirm:\n",
            "renames[0]: missing library, old, new, since",
        ),
        (  # a translated check that rewrote the name it tells the user to look at
            '"第一个 nan 紧跟在一次 grad_norm 尖峰之后出现"',
            '"第一个 nan 紧跟在一次梯度范数尖峰之后出现"',
            "zh.confirm[0]: does not keep the code of confirm[0] verbatim: ['grad_norm']",
        ),
        (
            '  - "第一个 nan 紧跟在一次 grad_norm 尖峰之后出现"\n',
            "",
            "zh.confirm: missing",
        ),
        (
            '  - "the first nan appears right after a grad_norm spike"',
            '  - "python -c \\"print(args.fp16)\\" prints True"',
            "confirm: python -c one-liner uses args without defining",
        ),
    ],
)
def test_each_error_is_reported_with_file_and_field(tiny_articles, old, new, expected):
    errors = _break(tiny_articles, old, new)
    assert any(expected in e and e.startswith("fixture-") for e in errors), errors


@pytest.mark.parametrize(
    "snippet, expected",
    [
        (Snippet("python", "transformers", "x = (\n"), "does not compile"),
        (Snippet("yaml", "llamafactory", "a: [1,\n"), "yaml does not parse"),
        (Snippet("json", "deepspeed", "{'fp16': 1}"), "json does not parse"),
        (
            Snippet("json", "deepspeed", '{"fp16": {"enabled": true, "lossscale": 0}}'),
            "no key 'lossscale'",
        ),
        (
            Snippet("yaml", "llamafactory", "stage: sft\nfinetuning_typ: lora\n"),
            "no key 'finetuning_typ'",
        ),
        (
            Snippet("bash", "openrlhf", "deepspeed --module openrlhf.cli.train_dpo --beta_x 0.1"),
            "no flag --beta_x",
        ),
        (Snippet("bash", "shell", "if then fi fi"), "bash does not parse"),
        (Snippet("python", "peft", "LoraConfig(r=8, lora_rank=16)"), "no argument 'lora_rank'"),
        (Snippet("python", "trl", "DPOConfig(output_dir='o', betta=0.1)"), "no argument 'betta'"),
    ],
)
def test_snippet_checks(snippet, expected):
    assert any(expected in m for m in check_snippet(snippet))


@pytest.mark.parametrize(
    "snippet",
    [
        Snippet(
            "json", "deepspeed", '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 3}}'
        ),
        Snippet("yaml", "llamafactory", "stage: dpo\nfinetuning_type: lora\nbf16: true\n"),
        Snippet(
            "bash",
            "hf-trainer-cli",
            "torchrun --nproc_per_node 8 run_clm.py --model_name_or_path x --bf16 True",
        ),
        Snippet(
            "python",
            "transformers",
            "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype='bfloat16')",
        ),
    ],
)
def test_real_names_pass(snippet):
    assert check_snippet(snippet) == []


def test_old_names_allowed_only_for_old_version_snippets():
    code = "TrainingArguments(output_dir='o', evaluation_strategy='steps')"
    assert check_snippet(Snippet("python", "transformers", code), {"evaluation_strategy"}) != []
    old = Snippet("python", "transformers", code, valid_for="transformers<4.41")
    assert check_snippet(old, {"evaluation_strategy"}) == []


@pytest.mark.parametrize(
    "text, problem",
    [
        ('python -c "import torch; print(torch.__version__)"', None),
        # `import a.b as m` binds m only: the version print raised NameError for the user.
        (
            'python -c "import transformers.models.llama as m; print(transformers.__version__)"',
            "uses transformers without",
        ),
        ("python3 -c 'import json,sys; [print(k) for k in json.load(sys.stdin)]' < f.json", None),
        ('python -c "from trl import SFTConfig as C; f = lambda x: x; print(f(C))"', None),
        ('python -c "print(trainer.args)"', "uses trainer without"),
        ('python -c "import flash_attn;"  # 训练前先检查', None),
        ('python -c "import torch; print(torch.cuda.is_available()"', "does not parse"),
    ],
)
def test_python_c_one_liners_must_run_in_a_fresh_shell(text, problem):
    [code] = one_liners(text)
    found = one_liner_problem(code)
    assert (found is None) if problem is None else (problem in found)


def test_escaped_quotes_inside_a_yaml_string_are_one_one_liner():
    assert one_liners('run python -c \\"import torch\\" then') == []  # shown escaped, no match
    assert one_liners('python -c "print(\\"a\\")"') == ['print("a")']
