"""Secrets and personal names are replaced; ordinary log text is left alone."""

from __future__ import annotations

import time

import pytest

from assistant.redact import redact


@pytest.mark.parametrize(
    "text, gone, marker",
    [
        ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEF1234", "hf_abcdef", "<redacted:hf_token>"),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx12345", "sk-proj", "<redacted:api_key>"),
        ("key sk-abcdefghijklmnopqrstuvwxyz0123", "sk-abc", "<redacted:api_key>"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE", "<redacted:aws_key>"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI",
            "<redacted:aws_secret>",
        ),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def", "eyJhbGci", "<redacted:bearer>"),
        ("curl -H 'Authorization: token ghp_abcdefghijklmnop'", "ghp_abc", "<redacted:bearer>"),
        (
            "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
            "0123456789abcdef",
            "<redacted:wandb_key>",
        ),
        (
            "wandb login 0123456789abcdef0123456789abcdef01234567",
            "0123456789abcdef",
            "<redacted:wandb_key>",
        ),
        ("contact alice.smith@example.co.uk please", "alice.smith", "<redacted:email>"),
        ("password: hunter2hunter", "hunter2", "<redacted:secret>"),
        ('File "/home/alice/LLaMA-Factory/src/train.py", line 3', "alice", "/home/<user>/"),
        ("/Users/bob/proj/run.sh", "bob", "/Users/<user>/"),
        (r"C:\Users\carol\proj\train.py", "carol", "<user>"),
        (r'"C:\\Users\\dave\\x.py"', "dave", "<user>"),
    ],
)
def test_redacts(text, gone, marker):
    out = redact(text)
    assert gone not in out
    assert marker in out


@pytest.mark.parametrize(
    "text",
    [
        "{'loss': 0.5, 'grad_norm': 1.2, 'learning_rate': 2e-05}",
        "pad_token: <|endoftext|>\ntokenizer.eos_token = '</s>'",
        'File "/root/train.py", line 3, in <module>',
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total)",
        "task-specific model: sk-learn style",
    ],
)
def test_leaves_ordinary_text(text):
    assert redact(text) == text


def test_idempotent():
    text = "hf_abcdefghijklmnopqrstuvwxyzABCDEF1234 /home/alice/x a@b.io"
    assert redact(redact(text)) == redact(text)


def test_twenty_megabytes_with_hostile_runs():
    text = ("{'loss': 0.5} /home/alice/x user@example.com " + "a" * 200 + "\n") * 80_000
    text += "@" * 1_000_000 + "x" * 5_000_000
    start = time.perf_counter()
    out = redact(text)
    assert "<redacted:email>" in out and "alice" not in out
    assert time.perf_counter() - start < 30  # only a guard against pathological backtracking
