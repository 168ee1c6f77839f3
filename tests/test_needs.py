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
