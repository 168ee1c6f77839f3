"""The log analyzer on realistic fixtures, single-line forms and hostile input."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from assistant.logs import analyze, analyze_bytes, carriage_segments, clean
from assistant.metrics import parse_plain, parse_progress, parse_record
from assistant.signals import MAX_POINTS, LogSignals
from kb.bench import mixed_log

FIXTURES = Path(__file__).parent / "fixtures" / "logs"


def load(name: str) -> LogSignals:
    return analyze_bytes((FIXTURES / name).read_bytes())


@pytest.mark.parametrize(
    "name, anomalies, error_type, expect",
    [
        (
            "hf_fp16_7b_zero.log",
            [("zero_collapse", "loss", 40), ("grad_norm_nan", "grad_norm", 40)],
            None,
            {
                "precision": "fp16",
                "hardware": "V100",
                "framework": "transformers",
                "model": {"name": "meta-llama/Llama-2-7b-hf", "family": "llama2", "size_b": 7.0},
                "versions": {"torch": "2.1.2", "transformers": "4.36.2"},
                "flags": {"fp16": "true", "per_device_train_batch_size": "1"},
            },
        ),
        (
            "dpo_stuck_ln2.log",
            [("stuck_ln2", "loss", 10)],
            None,
            {
                "stage": "dpo",
                "framework": "trl",
                "precision": "bf16",
                "versions": {"trl": "0.8.6"},
                "model": {"family": "qwen2", "size_b": 1.5},
            },
        ),
        (
            "trl_rm_explode.log",
            [("explosion", "loss", 40), ("nan", "loss", 50), ("grad_norm_nan", "grad_norm", 50)],
            None,
            {
                "stage": "rm",
                "framework": "trl",
                "precision": "fp16",
                "versions": {"transformers": "4.40.1", "trl": "0.8.6"},
            },
        ),
        (
            "deepspeed_overflow.log",
            [("overflow_skips", "loss_scale", None), ("loss_scale_min", "loss_scale", 15)],
            None,
            {
                "precision": "fp16",
                "framework": "deepspeed",
                "versions": {"deepspeed": "0.14.3"},
                "flags": {"zero_stage": "2", "fp16": "true"},
            },
        ),
        (
            "llamafactory_nan_zh.log",
            [("nan", "loss", None), ("grad_norm_nan", "grad_norm", None)],
            "RuntimeError",
            {
                "stage": "sft",
                "framework": "llamafactory",
                "precision": "fp16",
                "hardware": "2080Ti",
                "model": {"name": "Qwen2.5-7B-Instruct", "family": "qwen2.5", "size_b": 7.0},
                "flags": {"finetuning_type": "lora", "template": "qwen"},
                "versions": {"transformers": "4.45.2", "llamafactory": "0.9.0"},
            },
        ),
        (
            "openrlhf_kto_nan.log",
            [("nan", "kto_loss", 4)],
            None,
            {
                "stage": "kto",
                "framework": "openrlhf",
                "precision": "bf16",
                "flags": {"vanilla_loss": "true", "zero_stage": "3", "beta": "0.1"},
                "model": {"family": "llama3", "size_b": 8.0},
            },
        ),
        ("healthy_sft.log", [], None, {"precision": "bf16", "model": {"family": "mistral"}}),
        ("healthy_dpo.log", [], None, {"stage": "dpo"}),
        (
            "trainer_state.json",
            [("grad_norm_zero", "grad_norm", 65), ("zero_collapse", "loss", 65)],
            None,
            {},
        ),
        (
            "crlf_ansi_tqdm.log",
            [("inf", "loss", 20), ("nan", "loss", 30), ("grad_norm_nan", "grad_norm", 30)],
            None,
            {"stage": "rm", "framework": "llamafactory"},
        ),
        ("multirank_traceback.log", [], "torch.OutOfMemoryError", {}),
    ],
)
def test_fixture(name, anomalies, error_type, expect):
    s = load(name)
    found = {(a.kind, a.metric, a.step) for a in s.anomalies}
    for item in anomalies:
        assert item in found, (item, s.anomalies)
    if not anomalies:
        assert s.anomalies == []
    if error_type:
        assert s.errors and s.errors[0].type == error_type
        assert s.has_error_text
    for key, value in expect.items():
        actual = getattr(s, key)
        if isinstance(value, dict):
            for k, v in value.items():
                assert actual.get(k) == v, (key, k, actual)
        else:
            assert actual == value, (key, actual)


def test_multirank_dedupes_ranks_and_keeps_library_frames():
    s = load("multirank_traceback.log")
    types = [e.type for e in s.errors]
    assert types.count("torch.OutOfMemoryError") == 1
    assert types[-1].endswith("ChildFailedError")
    oom = s.errors[0]
    assert "CUDA out of memory" in oom.message
    assert any(f.startswith("transformers/trainer.py") for f in oom.frames)
    # the root cause leads the evidence, the launcher's wrapper error comes after it
    phrases = s.evidence_phrases()
    assert phrases[0].startswith("torch.OutOfMemoryError")


def test_crlf_ansi_progress_is_clean():
    s = load("crlf_ansi_tqdm.log")
    assert [st for st, _ in s.metrics["loss"]] == [10, 20, 30]
    assert all("\x1b" not in line and "\r" not in line for line in s.error_lines)
    assert any("LogSoftmaxBackward0" in line for line in s.error_lines)


def test_chinese_paragraph_survives():
    s = load("llamafactory_nan_zh.log")
    assert s.errors[0].message.startswith("probability tensor contains")
    assert s.errors[0].frames[-1].startswith("transformers/generation/utils.py")


@pytest.mark.parametrize(
    "line, step, values",
    [
        (
            "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.1}",
            None,
            {"loss": 0.0, "grad_norm": math.nan, "learning_rate": 2e-05},
        ),
        (
            '{"train/loss": 1.19e+34, "train/grad_norm": Infinity, "step": 12}',
            12,
            {"loss": 1.19e34, "grad_norm": math.inf},
        ),
        (
            "{'loss': -inf, 'rewards/chosen': -1.5, 'rewards/margins': 0.25, 'epoch': 1.0}",
            None,
            {"loss": -math.inf, "rewards/chosen": -1.5, "rewards/margins": 0.25},
        ),
        (
            "{'loss': tensor(0.6931, device='cuda:0'), 'grad_norm': np.float64(1.5)}",
            None,
            {"loss": 0.6931, "grad_norm": 1.5},
        ),
        (
            "{'loss': 1.23, 'acc': 0.6, 'grad_norm': 1.2, 'learning_rate': 1e-4, "
            "'memory(GiB)': 17.5, "
            "'train_speed(iter/s)': 0.12, 'epoch': 0.1, 'global_step/max_steps': '10/100', "
            "'percentage': '10.00%'}",
            10,
            {"loss": 1.23, "acc": 0.6, "grad_norm": 1.2, "learning_rate": 1e-4},
        ),
        (
            "{'eval_loss': 0.91, 'eval_runtime': 12.3, 'eval_samples_per_second': 40.2, "
            "'epoch': 1.0}",
            None,
            {"eval_loss": 0.91},
        ),
    ],
)
def test_parse_record(line, step, values):
    got_step, got = parse_record(line)
    assert got_step == step
    assert set(got) == set(values)
    for k, v in values.items():
        assert (math.isnan(got[k]) and math.isnan(v)) or got[k] == v


@pytest.mark.parametrize(
    "line",
    [
        '"fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 16}',
        "{'bos_token_id': 1, 'eos_token_id': 2}",
        "{}",
        "{'loss': 'n/a'}",
    ],
)
def test_parse_record_rejects_non_metrics(line):
    assert parse_record(line) is None


@pytest.mark.parametrize(
    "line, step, values",
    [
        ("step 10 loss 0.53", 10, {"loss": 0.53}),
        ("Step 10/100 | loss: 0.53 | lr: 2e-5", 10, {"loss": 0.53, "learning_rate": 2e-5}),
        ("iter 100: loss 2.31", 100, {"loss": 2.31}),
        (
            " iteration      300/    1000 | consumed samples: 9600 | lm loss: 2.310E+00 | "
            "loss scale: 1.0 | grad norm: 1.234 |",
            300,
            {"loss": 2.31, "loss_scale": 1.0, "grad_norm": 1.234},
        ),
        (
            "step:10 - actor/pg_loss:0.12 - critic/score/mean:0.5 - timing_s/gen:12.3",
            10,
            {"actor/pg_loss": 0.12, "critic/score/mean": 0.5},
        ),
        ("Epoch 1, Step 20, Loss: nan", 20, {"loss": math.nan}),
    ],
)
def test_parse_plain(line, step, values):
    got_step, got = parse_plain(line)
    assert got_step == step
    assert set(got) == set(values)


def test_parse_progress_postfix():
    line = " 40%|████      | 40/100 [00:10<00:15,  3.9it/s, loss=0.693, lr=1e-05]"
    assert parse_progress(line) == (40, 100, {"loss": 0.693, "learning_rate": 1e-05})


def test_carriage_segments_keep_last_bar_state_around_output():
    line = "10%|█ | 1/10 [x]\r20%|██ | 2/10 [x]\r{'loss': 0.5}\r30%|███ | 3/10 [x]"
    assert carriage_segments(line) == ["20%|██ | 2/10 [x]", "{'loss': 0.5}", "30%|███ | 3/10 [x]"]


def test_clean_strips_ansi_nul_and_crlf():
    assert clean("\x1b[32mok\x1b[0m\x00\r\n") == "ok\n"


@pytest.mark.parametrize(
    "text, versions",
    [
        ("torch==2.2.2\ntransformers==4.46.0\n", {"torch": "2.2.2", "transformers": "4.46.0"}),
        ("transformers version 4.46", {"transformers": "4.46"}),
        ("- `transformers` version: 4.46.0\n- Platform: Linux", {"transformers": "4.46.0"}),
        ("- PyTorch version (GPU?): 2.1.0+cu118 (True)", {"torch": "2.1.0+cu118"}),
        ("using deepspeed 0.14.3 on 8 GPUs", {"deepspeed": "0.14.3"}),
        ("torch version .................... 2.1.0+cu121", {"torch": "2.1.0+cu121"}),
        (
            "peft                      0.11.1\ntrl                       0.9.4\n",
            {"peft": "0.11.1", "trl": "0.9.4"},
        ),
        ('File "/site-packages/transformers/trainer.py", line 4.5', {}),
    ],
)
def test_versions(text, versions):
    got = analyze(text).versions
    for k, v in versions.items():
        assert got.get(k) == v
    if not versions:
        assert "transformers" not in got


@pytest.mark.parametrize(
    "text, name, family, size",
    [
        (
            "--model_name_or_path Qwen/Qwen2.5-7B-Instruct",
            "Qwen/Qwen2.5-7B-Instruct",
            "qwen2.5",
            7.0,
        ),
        ("fine-tuning llama-3.1-8b with lora", "llama-3.1-8b", "llama3.1", 8.0),
        ("model: Qwen2-72B on 8 nodes", "Qwen2-72B", "qwen2", 72.0),
        (
            "loading weights from models--mistralai--Mixtral-8x7B-v0.1/snapshots",
            "mistralai/Mixtral-8x7B-v0.1",
            "mixtral",
            56.0,
        ),
        ("a 7B model OOMs", None, None, 7.0),
    ],
)
def test_model(text, name, family, size):
    m = analyze(text).model
    assert m.get("name") == name
    assert m.get("family") == family
    assert m.get("size_b") == size


@pytest.mark.parametrize(
    "text, flags, precision",
    [
        (
            "torchrun --nproc_per_node 2 train.py --fp16 --per_device_train_batch_size 1",
            {"fp16": "true", "per_device_train_batch_size": "1", "nproc_per_node": "2"},
            "fp16",
        ),
        ("deepspeed train.py --bf16 True --deepspeed ds.json", {"bf16": "True"}, "bf16"),
        ("accelerate launch --mixed_precision=fp16 sft.py", {"mixed_precision": "fp16"}, "fp16"),
        (
            "stage: dpo\nfinetuning_type: lora\ntemplate: qwen\nbf16: true\n",
            {"stage": "dpo", "finetuning_type": "lora", "bf16": "true"},
            "bf16",
        ),
        (
            '{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}}',
            {"zero_stage": "3", "fp16": "true"},
            "fp16",
        ),
        (
            "python train.py \\\n  --load_in_4bit \\\n  --lr 1e-4",
            {"load_in_4bit": "true", "lr": "1e-4"},
            "int4",
        ),
    ],
)
def test_flags_and_precision(text, flags, precision):
    s = analyze(text)
    for k, v in flags.items():
        assert s.flags.get(k) == v, (k, s.flags)
    assert s.precision == precision


@pytest.mark.parametrize(
    "text, stage, framework, hardware",
    [
        ("llamafactory-cli train examples/dpo.yaml\nstage: dpo", "dpo", "llamafactory", None),
        ("swift rlhf --rlhf_type kto --model Qwen/Qwen2-7B", "kto", "ms-swift", None),
        ("python -m verl.trainer.main_ppo on 8x H100", "ppo", "verl", "H100"),
        ("from trl import GRPOTrainer\nGPU: NVIDIA A100-SXM4-80GB", "grpo", "trl", "A100"),
        ("axolotl train config.yml  # RTX 4090", None, "axolotl", "4090"),
        ("昇腾 Ascend 910B 上训练 unsloth", None, "unsloth", "910B"),
    ],
)
def test_stage_framework_hardware(text, stage, framework, hardware):
    s = analyze(text)
    assert (s.stage, s.framework, s.hardware) == (stage, framework, hardware)


def test_traceback_cut_off_is_not_an_error():
    s = analyze('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n')
    assert s.errors == [] and not s.has_error_text


def test_chained_traceback_keeps_both():
    text = (
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "b.py", line 2, in g\n'
        "ValueError: Cannot handle batch sizes > 1 if no padding token is defined.\n"
    )
    s = analyze(text)
    assert [e.type for e in s.errors] == ["KeyError", "ValueError"]
    assert s.errors[-1].message.startswith("Cannot handle batch sizes > 1")


@pytest.mark.parametrize(
    "line",
    [
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32",
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "[E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout: WorkNCCL(1)",
        "Bus error (core dumped)",
    ],
)
def test_error_lines(line):
    s = analyze("some preamble\n" + line + "\n")
    assert s.error_lines and s.error_lines[0] == line


def test_to_dict_shape_json_and_downsampling():
    lines = [f"{{'loss': {2.0 - i * 1e-4:.5f}, 'step': {i}}}" for i in range(1, 3001)]
    lines[2000] = "{'loss': nan, 'step': 2001}"
    d = analyze("\n".join(lines)).to_dict()
    assert list(d) == [
        "metrics",
        "anomalies",
        "errors",
        "error_lines",
        "flags",
        "versions",
        "model",
        "stage",
        "framework",
        "hardware",
        "precision",
        "has_error_text",
        "version_change",
        "pad_eos_endless",
    ]
    json.dumps(d, allow_nan=False)
    loss = d["metrics"]["loss"]
    assert len(loss) <= MAX_POINTS + 5
    assert [2001, "nan"] in loss
    assert d["anomalies"][0] == {
        "kind": "nan",
        "metric": "loss",
        "step": 2001,
        "detail": "loss is nan from step 2001",
    }


def test_evidence_phrases():
    phrases = load("hf_fp16_7b_zero.log").evidence_phrases()
    assert "loss fell to 0.0 at step 40 and stayed there" in phrases
    assert "fp16 enabled" in phrases and "model size 7B" in phrases
    assert "DPO/RM loss stuck at 0.6931 (ln 2)" in " ".join(
        load("dpo_stuck_ln2.log").evidence_phrases()
    )


def _random_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        _random_bytes(200_000, 1),
        b"\x00" * 10_000 + b"{'loss': nan}\x00\n",
        b"\xff\xfe\xfa invalid \xc3\x28 utf8 \xe2\x82 {'loss': 0.5}\n" * 100,
        b"x" * 10_000_000,
        b"{'loss': " + b"1" * 1_000_000 + b"}",
        ("[" * 50_000 + "]" * 50_000).encode(),
        ('{"log_history": ' + "[" * 5000 + "]" * 5000 + "}").encode(),
        b"<script>alert('x')</script><html><body onload=evil()>{'loss': 0.1}</body></html>\n" * 50,
        b"Traceback (most recent call last):\n" * 10_000,
        b"\r" * 100_000 + b"50%|#####| 5/10 [00:01<00:01]\r" * 1000,
        ("aaa@" * 200_000).encode(),
    ],
    ids=[
        "empty",
        "random",
        "nul",
        "bad-utf8",
        "10mb-line",
        "1mb-number",
        "nested",
        "nested-state",
        "html",
        "tracebacks",
        "carriage",
        "at-signs",
    ],
)
def test_hostile_input_never_crashes(data):
    s = analyze_bytes(data)
    json.dumps(s.to_dict(), allow_nan=False)
    s.evidence_phrases()


# The same long run `kb bench` measures (one generator, so the two cannot drift apart).
big_log = mixed_log


def test_twenty_megabyte_log(tmp_path):
    # Timing lives in the benchmark; here we only check that a big log is read completely.
    path = tmp_path / "big.log"
    path.write_text(big_log(20_000_000), encoding="utf-8")
    s = analyze_bytes(path.read_bytes())
    assert len(s.metrics["loss"]) > 5000
    assert s.anomalies == []
    assert s.errors[-1].message == "NCCL communicator was aborted"
    assert s.metrics["loss"][0][0] == 10  # steps come from the progress bar


def metric_only_log(n: int, event: str | None, at: int, with_steps: bool) -> str:
    """n Trainer-style metric records, one per line, with one failure starting at record `at`."""
    rnd = random.Random(n)
    lines, loss = [], 2.0
    for i in range(1, n + 1):
        loss = max(0.4, loss * 0.998 + rnd.uniform(-0.01, 0.01))
        v, g, scale = f"{loss:.4f}", f"{rnd.uniform(0.3, 2):.4f}", 65536.0
        late = i >= at
        if event == "zero" and late:
            v, g = "0.0", "0.0"
        elif event == "nan" and late:
            v, g = "nan", "nan"
        elif event == "inf" and i == at:
            v = "Infinity"
        elif event == "explosion" and i == at:
            v = "123456.0"
        elif event == "spike" and i == at:
            v = "9.5"
        elif event == "ln2":
            v = f"{0.6931 + rnd.uniform(-0.0005, 0.0005):.4f}"
        elif event == "flat":
            v = "1.5"
        elif event == "scale" and late:
            scale = 1.0
        if with_steps:
            lines.append(
                f'{{"loss": {v}, "grad_norm": {g}, "loss_scale": {scale}, "step": {5 * i}}}'
            )
        else:
            lines.append(
                f"{{'loss': {v}, 'grad_norm': {g}, 'loss_scale': {scale}, "
                f"'learning_rate': 2e-05, 'epoch': {i / 1000:.2f}}}"
            )
    return "\n".join(lines) + "\n"


def line_by_line(text: str) -> LogSignals:
    """The analyzer fed one line at a time: no bulk reading of record runs, the oracle."""
    from assistant.logs import Analyzer

    analyzer = Analyzer()
    for line in clean(text).split("\n"):
        analyzer.feed_line(line)
    return analyzer.signals()


@pytest.mark.parametrize("with_steps", [True, False], ids=["json-steps", "trainer-dicts"])
@pytest.mark.parametrize(
    "event, found",
    [
        (None, set()),
        ("zero", {("zero_collapse", "loss"), ("grad_norm_zero", "grad_norm")}),
        ("nan", {("nan", "loss"), ("grad_norm_nan", "grad_norm")}),
        ("inf", {("inf", "loss")}),
        ("explosion", {("explosion", "loss")}),
        ("spike", {("spike", "loss")}),
        ("ln2", {("stuck_ln2", "loss")}),
        ("flat", {("flat", "loss")}),
        ("scale", {("loss_scale_min", "loss_scale")}),
    ],
)
def test_long_metric_only_log_keeps_anomalies_and_onsets(event, found, with_steps):
    # Runs of same-shape records are read in bulk; the anomalies, their onsets and their order
    # must be what a line-by-line read finds, and no point may be dropped.
    n, at = 3000, 2345
    text = metric_only_log(n, event, at, with_steps)
    s = analyze(text)
    assert {(a.kind, a.metric) for a in s.anomalies} == found
    whole_run = event in ("ln2", "flat")  # judged over the whole series: dated from its start
    onset = 1 if whole_run else at
    for a in s.anomalies:
        if with_steps:
            assert a.step == onset * 5, a
        else:
            assert a.step is None, a
            assert f"logged point {onset}" in a.detail or f"{n} logged points" in a.detail, a
    assert all(len(s.metrics[name]) == n for name in ("loss", "grad_norm", "loss_scale"))
    oracle = line_by_line(text)
    assert s.to_dict() == oracle.to_dict()
    assert repr(s.metrics) == repr(oracle.metrics)


def test_bulk_records_keep_their_place_among_other_lines():
    # Bars, eval dicts, a traceback and a garbled number interrupt runs of records.
    rows = metric_only_log(400, "nan", 300, with_steps=False).splitlines()
    mixed = []
    for i, row in enumerate(rows):
        if i % 50 == 0:
            mixed.append(f" {i // 4}%|██        | {i}/400 [00:10<00:30, 3.9it/s]")
        if i == 120:
            mixed.append("{'eval_loss': 0.9, 'eval_runtime': 1.5, 'epoch': 0.12}")
        if i == 200:
            mixed.append('Traceback (most recent call last):\n  File "t.py", line 1\nValueError: x')
        mixed.append(row.replace("'grad_norm': ", "'grad_norm': 1.2.") if i == 250 else row)
    text = "\n".join(mixed)
    s = analyze(text)
    oracle = line_by_line(text)
    assert s.to_dict() == oracle.to_dict()
    assert repr(s.metrics) == repr(oracle.metrics)
    assert s.metrics["loss"][0][0] == 0 and s.metrics["eval_loss"] == [(100, 0.9)]
    # A record without a step takes the step of the last bar above it (250).
    assert [(a.kind, a.step) for a in s.anomalies] == [("nan", 250), ("grad_norm_nan", 250)]


def test_bulk_records_report_in_log_order():
    # Series are judged one after another in a bulk read; the report keeps the log's order.
    text = "".join(
        f'{{"loss": {"nan" if i >= 120 else 0.5 + i % 3 / 10}, '
        f'"grad_norm": {"nan" if i >= 50 else 1.0 + i % 2}, "step": {i}}}\n'
        for i in range(200)
    )
    s = analyze(text)
    assert [(a.kind, a.step) for a in s.anomalies] == [("grad_norm_nan", 50), ("nan", 120)]
    assert s.to_dict() == line_by_line(text).to_dict()


def test_reduce_log_keeps_what_matters():
    from assistant.reduce import reduce_log

    text = (FIXTURES / "hf_fp16_7b_zero.log").read_text(encoding="utf-8")
    text += "\n".join(f"[INFO] heartbeat {i} all good" for i in range(3000))
    text += "\n" + (FIXTURES / "multirank_traceback.log").read_text(encoding="utf-8")
    s = analyze(text)
    out = reduce_log(text, s, max_chars=4000)
    assert len(out) <= 4200
    assert "torch.OutOfMemoryError: CUDA out of memory" in out
    assert "torchrun --nproc_per_node 4 train.py" in out
    assert "'loss': 0.0" in out  # the first collapsed metric line
    assert "heartbeat 2999" not in out
    short = "ValueError: x"
    assert reduce_log(short, analyze(short)) == short


@pytest.mark.parametrize(
    "text, expected",
    [
        ("RuntimeError: boom. It works when I downgrade to trl==0.19.1", True),
        ("升级 transformers 之后就报错了", True),
        ("after upgrading peft the loss is nan", True),
        ("{'loss': 0.5, 'grad_norm': 1.2}", False),
        ("训练 loss 不下降", False),
    ],
)
def test_version_change_is_detected(text, expected):
    assert analyze(text).version_change is expected


@pytest.mark.parametrize(
    "summary",
    [
        "wandb: Run summary:\nwandb:   train/grad_norm 0.0\nwandb:        train/loss 0.0\n",
        "KTO 训练完 wandb 显示: train/epoch 4.65, train/grad_norm 0.0, train/kl 0.0, "
        "train/loss 0.0",
    ],
)
def test_wandb_run_summary_is_read(summary):
    # A pasted W&B summary has no step, but a zero grad_norm there is the whole diagnosis.
    s = analyze(summary)
    assert s.metrics["grad_norm"] == [(None, 0.0)]
    assert {"grad_norm_zero", "zero_collapse"} <= {a.kind for a in s.anomalies}


def test_one_slash_pair_in_prose_is_not_a_summary():
    assert analyze("I set train/loss 0.5 in the config").metrics == {}


@pytest.mark.parametrize(
    "text, precision",
    [
        ('args = TrainingArguments(output_dir="out", fp16=True)', "fp16"),
        ("config = SFTConfig(bf16=True, per_device_train_batch_size=2)", "bf16"),
        ("model = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.bfloat16)", "bf16"),
        ("# nanoGPT 配置\ndtype = 'float16'\nbatch_size = 12", "fp16"),
        ("fp16=True 和 bf16=True 都试过了", None),  # both tried: the report does not say which ran
    ],
)
def test_precision_is_read_from_python_arguments(text, precision):
    assert analyze(text).precision == precision


@pytest.mark.parametrize(
    "report, stage",
    [
        ("训练奖励模型时 loss 一直是 nan，用的 fp16", "rm"),
        ("reward modeling with LoRA, accuracy stuck at 0.5", "rm"),
        ("SFT 之后做 DPO，loss 不降", "dpo"),
        ("PPO with a reward model: the KL goes negative", "ppo"),
        ("GRPO训练 reward 一直不涨", "grpo"),
        ("增量预训练 loss 不降", "pretrain"),
        # The pretrained base model of any stage is not a pretraining run.
        ("加载预训练模型报错 from_pretrained", None),
    ],
)
def test_stage_named_in_prose(report, stage):
    assert analyze(report).stage == stage


def test_package_listing_keeps_only_the_libraries_that_tell():
    from assistant.reduce import drop_package_listing
    from assistant.versions import extract_versions

    report = "\n".join(
        [
            "SFT Qwen3 报错 RuntimeError: CUDA error: device-side assert triggered",
            "nvidia-cudnn-cu12             9.1.0.70",
            "openai                        1.54.4",
            "torch                         2.6.0",
            "peft==0.12.0",
            "transformers    4.51.0   /root/site-packages",
        ]
    )
    kept = drop_package_listing(report)
    assert "cudnn" not in kept and "openai" not in kept
    assert "device-side assert" in kept and "peft==0.12.0" in kept
    assert extract_versions(kept) == extract_versions(report)
    # Two package lines are a statement, not a listing: left alone.
    short = "我用的 nvidia-cudnn-cu12  9.1.0.70\ntorch  2.6.0 报错"
    assert drop_package_listing(short) == short
