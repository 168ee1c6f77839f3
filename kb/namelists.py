"""Real argument names of the libraries and tools that snippets target.

Python libraries are introspected (their dataclass fields / signatures); tools that cannot be
installed here are read from name lists extracted from their source (kb/names/, see its README).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import os
from pathlib import Path

# Introspecting moved TRL classes must not print warnings into `kb validate` output.
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
NAMES_DIR = Path(__file__).resolve().parent / "names"

# Classes whose keyword arguments a python snippet may use, by the name the snippet calls.
PY_CLASSES = {
    "TrainingArguments": "transformers:TrainingArguments",
    "Seq2SeqTrainingArguments": "transformers:Seq2SeqTrainingArguments",
    "BitsAndBytesConfig": "transformers:BitsAndBytesConfig",
    "SFTConfig": "trl:SFTConfig",
    "DPOConfig": "trl:DPOConfig",
    "KTOConfig": "trl:KTOConfig",
    "RewardConfig": "trl:RewardConfig",
    "GRPOConfig": "trl:GRPOConfig",
    "PPOConfig": "trl:PPOConfig",
    "ORPOConfig": "trl:ORPOConfig|trl.experimental.orpo:ORPOConfig",
    "CPOConfig": "trl:CPOConfig|trl.experimental.cpo:CPOConfig",
    "ModelConfig": "trl:ModelConfig",
    "LoraConfig": "peft:LoraConfig",
    "prepare_model_for_kbit_training": "peft:prepare_model_for_kbit_training",
}

# Name lists for `--flag` / config-key checking, by snippet target.
LIST_FILES = {
    "deepspeed": ["deepspeed_config.txt"],
    "llamafactory": ["llamafactory_args.txt"],
    "openrlhf": ["openrlhf_args.txt"],
    "medicalgpt": ["medicalgpt_args.txt"],
    "ms-swift": ["ms_swift_args.txt"],
    "hf-trainer-cli": ["hf_example_script_args.txt"],
    "trl-cli": ["hf_example_script_args.txt"],
}

# Flags of the launchers that precede a training script (torchrun, deepspeed, accelerate).
LAUNCHER_FLAGS = frozenset(
    """nproc_per_node nnodes node_rank master_addr master_port rdzv_backend rdzv_endpoint
    rdzv_id standalone num_gpus num_nodes include exclude hostfile master_port config_file
    num_processes num_machines machine_rank main_process_ip main_process_port mixed_precision
    use_deepspeed deepspeed_config_file zero_stage multi_gpu module m""".split()
)


class LibraryMissing(Exception):
    """The library a snippet targets is not installed, so its names cannot be checked here."""


@functools.cache
def class_params(call_name: str) -> frozenset[str]:
    """Keyword names accepted by a known class or function (dataclass fields or signature)."""
    obj = None
    for candidate in PY_CLASSES[call_name].split("|"):
        module_name, attr = candidate.split(":")
        try:
            obj = getattr(importlib.import_module(module_name), attr)
            break
        except (ImportError, AttributeError):
            continue
    if obj is None:
        raise LibraryMissing(f"{PY_CLASSES[call_name]} is not importable here")
    names: set[str] = set()
    if dataclasses.is_dataclass(obj):
        names |= {f.name for f in dataclasses.fields(obj)}
    # Some config classes are dataclasses with a hand-written __init__ (BitsAndBytesConfig).
    params = inspect.signature(obj).parameters
    names |= {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return frozenset(names - {"self"})


@functools.cache
def list_names(file_name: str) -> frozenset[str]:
    path = NAMES_DIR / file_name
    if not path.exists():
        raise LibraryMissing(f"name list {path} is missing")
    lines = path.read_text().splitlines()
    return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))


@functools.cache
def target_names(target: str) -> frozenset[str]:
    """Every name a bash/yaml/json snippet for `target` may use."""
    names: set[str] = set()
    for file_name in LIST_FILES.get(target, []):
        names |= list_names(file_name)
    if target == "hf-trainer-cli":
        names |= class_params("TrainingArguments")
    if target == "trl-cli":
        for call in (
            "SFTConfig",
            "DPOConfig",
            "KTOConfig",
            "RewardConfig",
            "GRPOConfig",
            "ORPOConfig",
            "CPOConfig",
            "ModelConfig",
        ):
            names |= class_params(call)
    return frozenset(names)


@functools.cache
def all_known_names() -> frozenset[str]:
    """Union of every name kb can vouch for (used to guard generated text)."""
    names: set[str] = set()
    for call in PY_CLASSES:
        try:
            names |= class_params(call)
        except LibraryMissing:
            continue
    for files in LIST_FILES.values():
        for file_name in files:
            try:
                names |= list_names(file_name)
            except LibraryMissing:
                continue
    return frozenset(names)
