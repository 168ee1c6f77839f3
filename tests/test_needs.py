"""missing_info asks for exactly what a report lacks, in English and Chinese."""

from __future__ import annotations

import pytest

from assistant.logs import analyze
from assistant.needs import missing_info


@pytest.mark.parametrize(
    "text, asks",
    [
        ("it fails", ["traceback", "command", "versions"]),
        ("", ["traceback", "command", "versions"]),
        ("训练报错了，见截图", ["traceback", "command", "versions"]),
        ("报错如下：", ["traceback", "command", "versions"]),
        ("如图，附上截图 ![err](err.png)", ["traceback", "command", "versions"]),
        ("loss 不下降，如图", ["metrics", "command", "versions"]),
        ("my DPO loss is not decreasing, see screenshot", ["metrics", "command", "versions"]),
        ("Traceback (most recent call last):", ["traceback", "command", "versions"]),
        (
            'Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n'
            "    trainer.train()\n",
            ["traceback", "command", "versions"],
        ),
        (
            "torchrun --nproc_per_node 8 train.py --fp16 --deepspeed ds.json\nit crashes",
            ["traceback", "versions"],
        ),
        ("llamafactory-cli train qwen_dpo.yaml\ntransformers==4.46.0\n报错了", ["traceback"]),
        ("loss becomes nan\ntorch==2.1.0\n--bf16 True", ["metrics"]),
    ],
)
def test_asks(text, asks):
    assert missing_info(text, analyze(text)) == asks


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: Cannot handle batch sizes > 1 if no padding token is defined.",
        "报错如下：\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "{'loss': 1.2}\n{'loss': 0.0}\n{'loss': 0.0}\n{'loss': 0.0}",
        "{'loss': 0.69, 'step': 10}\n{'loss': 0.61, 'step': 20}\n{'loss': 0.55, 'step': 30}",
        "Bus error (core dumped)",
    ],
)
def test_complete_reports_need_nothing(text):
    assert missing_info(text, analyze(text)) == []


WRAPPER_ONLY = (
    "多卡训练报错：\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "train.py FAILED\n"
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0"
)


def test_a_matched_wrapper_line_still_asks_for_the_workers_traceback(real_assistant):
    prepared = real_assistant.prepare(WRAPPER_ONLY)
    assert prepared.hits[0].signatures  # the torchrun triage case matched on the wrapper line
    assert prepared.needs[0] == "traceback"


def test_a_matched_exit_code_minus_9_is_the_error(real_assistant):
    text = (
        "训练到一半被杀了：\nERROR:torch.distributed.elastic.multiprocessing.api:failed "
        "(exitcode: -9) local_rank: 0 (pid: 1234) of binary: /usr/bin/python"
    )
    prepared = real_assistant.prepare(text)
    assert any("-9" in sig for sig in prepared.hits[0].signatures)
    assert prepared.needs == []


# torchrun's summary of a worker the kernel killed: the launcher's lines ("ChildFailedError",
# "Root Cause (first observed failure)") are longer strings than the kill's, but only the kill
# says why.
KILLED_UNDER_TORCHRUN = (
    "跑到第 300 步进程没了：\n"
    "[WARNING] Sending process 4121 closing signal SIGTERM\n"
    "[ERROR] failed (exitcode: -9) local_rank: 0 (pid: 4120) of binary: /usr/bin/python3\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "train.py FAILED\n"
    "Root Cause (first observed failure):\n"
    "  exitcode  : -9 (pid: 4120)\n"
    "  traceback : Signal 9 (SIGKILL) received by PID 4120\n"
)


def test_a_kill_under_torchrun_ranks_the_kill_above_the_wrapper(real_assistant):
    prepared = real_assistant.prepare(KILLED_UNDER_TORCHRUN)
    assert prepared.hits[0].article.failure_mode == "host-resource-crash"
    assert prepared.needs == []


def test_the_torchrun_summary_header_alone_still_asks_for_the_traceback(real_assistant):
    text = "多卡训练挂了\ntrain.py FAILED\nRoot Cause (first observed failure):\n[0]:\n  rank: 0"
    prepared = real_assistant.prepare(text)
    assert prepared.needs[0] == "traceback"
