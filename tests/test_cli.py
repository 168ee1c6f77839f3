"""Every CLI command over arguments, files and stdin: JSON on stdout, errors on stderr."""

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from kb.cli import main


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def cli_env(tiny_settings, monkeypatch):
    monkeypatch.setenv("KB_ARTICLES_DIR", str(tiny_settings.articles_dir))
    monkeypatch.setenv("KB_INDEX_DIR", str(tiny_settings.index_dir))
    monkeypatch.setenv("KB_FEEDBACK_DB", str(tiny_settings.feedback_db))
    monkeypatch.setenv("KB_LLM_BACKEND", "none")
    return tiny_settings


def test_every_command_has_help(runner):
    assert runner.invoke(main, ["--help"]).exit_code == 0
    for name, command in main.commands.items():
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert command.help and "Example" in command.help, name


def test_index_then_search_json(runner, cli_env):
    built = runner.invoke(main, ["index", "--json"])
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["index"]["n_articles"] == 3
    again = json.loads(runner.invoke(main, ["index", "--json"]).stdout)
    assert again["unchanged"] and again["embedded"] == 0
    res = runner.invoke(
        main,
        [
            "search",
            "Cannot handle batch sizes > 1 if no padding token is defined",
            "--json",
            "-k",
            "2",
        ],
    )
    doc = json.loads(res.stdout)
    assert doc["hits"][0]["article_id"] == "missing-pad-token-llama3-reward-model"
    assert set(doc["hits"][0]) >= {"article_id", "failure_mode", "title", "score", "evidence"}
    assert len(doc["hits"]) == 2


def test_index_out_dir(runner, cli_env, tmp_path):
    out = tmp_path / "artefact" / "index"
    assert runner.invoke(main, ["index", "--out", str(out)]).exit_code == 0
    assert (out / "manifest.json").exists()


def test_ask_json_contract_chinese(runner, cli_env):
    res = runner.invoke(main, ["ask", "dpo 训练 loss 一直是 0.693 不下降", "--json", "--no-llm"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc) >= {"query", "abstained", "hits", "answer", "signals"}
    assert set(doc["answer"]) >= {"text", "snippets", "sources"}
    assert doc["hits"][0]["article_id"] == "fixture-dpo-stuck"
    assert not doc["abstained"]
    assert "原因" in doc["answer"]["text"]  # a Chinese question gets Chinese headings
    assert doc["answer"]["snippets"][0]["target"] == "trl"


def test_ask_from_stdin_and_file(runner, cli_env, tmp_path):
    log = "step 10 {'loss': nan, 'grad_norm': nan, 'learning_rate': 2e-05}\n--fp16\n"
    res = runner.invoke(main, ["ask", "-", "--json", "--no-llm"], input=log)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["hits"][0]["article_id"] == "fixture-fp16-overflow"
    path = tmp_path / "train.log"
    path.write_text(log)
    res = runner.invoke(main, ["ask", "--file", str(path), "--json", "--no-llm"])
    assert json.loads(res.stdout)["hits"][0]["article_id"] == "fixture-fp16-overflow"


def test_ask_human_output(runner, cli_env):
    res = runner.invoke(
        main,
        [
            "ask",
            "ValueError: Cannot handle batch sizes > 1 if no padding token is defined",
            "--no-llm",
        ],
    )
    assert res.exit_code == 0
    assert "Diagnosis" in res.stdout and "pad_token" in res.stdout


def test_unrelated_question_abstains(runner, cli_env):
    res = runner.invoke(
        main, ["ask", "how do I bake sourdough bread at home", "--json", "--no-llm"]
    )
    doc = json.loads(res.stdout)
    assert doc["abstained"] is True
    assert "No known case matches" in doc["answer"]["text"]


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (["ask", ""], None, "query is empty"),
        (["ask", "   "], None, "query is empty"),
        (["ask", "--file", "/nonexistent/train.log"], None, "no such file"),
        (["ask", "-"], b"", "is empty"),
        (["ask", "-"], b"\x00\x01\x02" * 1000, "binary"),
        (["ask", "-"], bytes(range(128, 256)) * 200, "undecodable"),
        (["show", "../../etc/passwd"], None, "not an article id"),
        (["show", "no-such-article"], None, "no article"),
        (["eval", "--cases", "/nonexistent.jsonl"], None, "no such cases file"),
    ],
)
def test_bad_input_is_one_line_error(runner, cli_env, args, stdin, message):
    res = runner.invoke(main, args, input=stdin)
    assert res.exit_code != 0
    assert message in res.stderr
    assert "Traceback" not in res.stderr + res.stdout


def test_pasted_report_starting_with_a_dash(runner, cli_env):
    # The transformers issue template starts with "- `transformers` version: ...".
    report = "- `transformers` version: 4.31.0\n- 训练时 loss 变成 nan"
    res = runner.invoke(main, ["ask", report])
    assert res.exit_code == 2
    assert "put -- before it" in res.stderr and "No such option" not in res.stderr
    # A mistyped flag keeps click's own message.
    assert "No such option '--jsn'" in runner.invoke(main, ["ask", "--jsn", "x"]).stderr
    assert runner.invoke(main, ["index"]).exit_code == 0
    res = runner.invoke(main, ["search", "--json", "--", report])
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["hits"]


def test_corrupt_index_message(runner, cli_env):
    assert runner.invoke(main, ["index"]).exit_code == 0
    (cli_env.index_dir / "manifest.json").write_text("{not json")
    from kb.errors import CorruptIndex
    from kb.index import load_index

    with pytest.raises(CorruptIndex):
        load_index(cli_env)
    # The CLI rebuilds a damaged index rather than failing the user's question.
    res = runner.invoke(main, ["search", "fp16 nan", "--json"])
    assert res.exit_code == 0, res.stderr


def test_show_and_list(runner, cli_env):
    res = runner.invoke(main, ["show", "fixture-dpo-stuck", "--json"])
    assert json.loads(res.stdout)["failure_mode"] == "dpo-loss-stuck-0693"
    assert "## Cause" in runner.invoke(main, ["show", "fixture-dpo-stuck"]).stdout
    listed = json.loads(runner.invoke(main, ["list", "--json"]).stdout)
    assert {a["id"] for a in listed} >= {"fixture-dpo-stuck"}
    assert json.loads(runner.invoke(main, ["list", "--mode", "oom", "--json"]).stdout) == []


def test_validate_exit_codes(runner, cli_env):
    res = runner.invoke(main, ["validate", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["errors"] == []
    bad = cli_env.articles_dir / "fixture-dpo-stuck.md"
    bad.write_text(bad.read_text().replace("dpo-loss-stuck-0693", "no-such-mode"))
    res = runner.invoke(main, ["validate"])
    assert res.exit_code == 1
    assert "fixture-dpo-stuck.md: failure_mode: unknown taxonomy id" in res.stderr


def test_eval_json_shape(runner, cli_env, tmp_path):
    cases = tmp_path / "cases.jsonl"
    rows = [
        {
            "id": "a",
            "query": "loss 变成 nan with fp16",
            "failure_mode": "fp16-overflow-nan",
            "fix_keywords": ["bf16"],
        },
        {
            "id": "b",
            "query": "DPO loss stuck at 0.6931",
            "failure_mode": "dpo-loss-stuck-0693",
            "fix_keywords": ["trainable"],
        },
        {"id": "c", "query": "what is the capital of France", "failure_mode": "out-of-scope"},
    ]
    cases.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    res = runner.invoke(main, ["eval", "--cases", str(cases), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc) >= {
        "n",
        "in_scope",
        "hit@1",
        "hit@3",
        "mrr",
        "abstain_precision",
        "abstain_recall",
        "baselines",
        "latency_ms",
        "per_mode",
    }
    assert doc["n"] == 3 and doc["in_scope"] == 2 and doc["hit@1"] == 1.0
    assert set(doc["baselines"]) == {"bm25", "dense"}
    assert doc["abstain_recall"] == 1.0
    answers = json.loads(
        runner.invoke(main, ["eval", "--cases", str(cases), "--answers", "--json"]).stdout
    )
    assert answers["fix_keyword_recall"] == 1.0 and answers["invented_keys"] == 0
    rows_out = tmp_path / "rows.jsonl"
    res = runner.invoke(
        main, ["eval", "--cases", str(cases), "--answers", "--cases-out", str(rows_out)]
    )
    assert res.exit_code == 0, res.output
    per_case = {r["id"]: r for r in map(json.loads, rows_out.read_text().splitlines())}
    assert per_case["a"]["rank"] == 1 and per_case["a"]["keywords_missing"] == []
    assert per_case["c"]["abstained"] and per_case["c"]["rank"] is None
    assert set(per_case["b"]["baseline_rank"]) == {"bm25", "dense"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    res = runner.invoke(main, ["eval", "--cases", str(bad)])
    assert res.exit_code == 1 and "failure_mode" in res.stderr


def test_settings_env_override(monkeypatch):
    from kb.settings import Settings

    monkeypatch.setenv("KB_TOP_K", "9")
    assert Settings.from_env().top_k == 9
    assert Settings.from_env(top_k=3).top_k == 3
    assert replace(Settings(), top_k=2).top_k == 2


def test_watch_stdin_reports_anomaly_and_exits(runner, cli_env):
    healthy = "".join(
        f"{{'loss': {2.0 - i * 0.01:.2f}, 'grad_norm': 1.1, 'step': {i}}}\n" for i in range(1, 30)
    )
    res = runner.invoke(main, ["watch", "-", "--exit-on-anomaly"], input=healthy)
    assert res.exit_code == 0 and res.stdout == ""  # silent while healthy
    broken = healthy + "{'loss': nan, 'grad_norm': nan, 'step': 30}\n" * 3
    res = runner.invoke(main, ["watch", "-", "--exit-on-anomaly"], input=broken)
    assert res.exit_code == 3
    assert "[kb watch]" in res.stdout and "fixture-fp16-overflow" in res.stdout


def test_show_prompt_matches_the_configured_model(runner, cli_env, monkeypatch):
    # The bundled 135M model gets the short fill-in prompt (no pasted log in it); a served
    # model gets the rich one, with the user's log quoted as data.
    query = "训练时 loss 变成 nan, fp16"
    small = runner.invoke(main, ["ask", query, "--show-prompt", "--json"])
    assert small.exit_code == 0, small.output
    monkeypatch.setenv("KB_LLM_BACKEND", "auto")
    monkeypatch.setenv("KB_LLM_URL", "http://127.0.0.1:9")
    rich = runner.invoke(main, ["ask", query, "--show-prompt", "--json"])
    assert rich.exit_code == 0, rich.output
    small_prompt = json.loads(small.stdout)["prompt"]
    rich_prompt = json.loads(rich.stdout)["prompt"]
    assert "Excerpt of the user's log" in rich_prompt and query in rich_prompt
    assert "Excerpt of the user's log" not in small_prompt


def test_gaps_from_feedback_groups_not_helpful_answers(runner, cli_env):
    from assistant.feedback import Feedback, FeedbackStore

    store = FeedbackStore(cli_env.feedback_db)
    store.add(
        Feedback("dpo loss 一直是 0.693", "fixture-dpo-stuck", "dpo-loss-stuck-0693", "helpful")
    )
    store.add(
        Feedback("训练时 loss 变成 nan", "fixture-fp16-overflow", "fp16-overflow-nan", fixed="no")
    )
    store.add(Feedback("stuck at step 0", None, None, "not_helpful", comment="hangs, no error"))
    result = runner.invoke(main, ["gaps", "--feedback", "--json"])
    assert result.exit_code == 0, result.output
    grouped = json.loads(result.stdout)
    assert set(grouped) == {"fp16-overflow-nan", "abstained"}
    assert grouped["fp16-overflow-nan"][0]["query"] == "训练时 loss 变成 nan"
    assert grouped["abstained"][0]["comment"] == "hangs, no error"


def test_gaps_needs_exactly_one_source(runner, cli_env):
    result = runner.invoke(main, ["gaps"])
    assert result.exit_code != 0
    assert "--cases FILE or --feedback" in result.stderr
    assert "Traceback" not in result.output


def test_gaps_from_cases_lists_the_misses_by_mode(runner, cli_env, tmp_path):
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": "hit", "query": "dpo loss 一直是 0.693", "failure_mode": "dpo-loss-stuck-0693"},
        {"id": "miss", "query": "训练时 loss 变成 nan", "failure_mode": "oom"},
    ]
    cases.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    result = runner.invoke(main, ["gaps", "--cases", str(cases), "--json"])
    assert result.exit_code == 0, result.output
    grouped = json.loads(result.stdout)
    assert list(grouped) == ["oom"] and grouped["oom"][0]["id"] == "miss"
