"""The run's setting read from a log: flags, versions, model, stage, framework, GPU, precision."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field

from assistant.model_names import extract_model
from assistant.versions import extract_versions
from kb.text import is_number

_LAUNCH = re.compile(
    r"(?:^|[\s;&|$>]|/)(?:torchrun|deepspeed|accelerate launch|python3?(?:\.\d+)? (?:-m )?\S+"
    r"|llamafactory-cli|swift (?:sft|rlhf|pt)|axolotl|trl (?:sft|dpo)|openrlhf\.cli\S*"
    r"|bash \S+\.sh)"
    r"[^\n，。；;]*"
)
_YAML_FILE = re.compile(r"\S+\.ya?ml\b")
_YAML = re.compile(
    r"^[ \t]{0,8}([a-z_][a-z0-9_.]{0,60})[ \t]*:[ \t]+([^\s#{\[][^\n#]{0,200}?)[ \t]*$", re.M
)
_ARGS_DUMP = re.compile(r"^[ \t]*([a-z_][a-z0-9_]{0,60})=([^\n,]{0,200}),?[ \t]*$", re.M)
_NAMESPACE = re.compile(r"Namespace\(([^\n]{0,20000})\)")
_NS_PAIR = re.compile(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,\s)]+)")
_DOTTED = re.compile(r"(?<!\w)([A-Za-z_]\w{0,60}(?: [a-z]+){0,3}) \.{3,}\s*(\S[^\n]{0,200})")
_JSON_SCALAR = re.compile(
    r'^[ \t]*"([a-z_][a-z0-9_]{0,60})"[ \t]*:[ \t]*("?[^\n",{}\[\]]{1,100}"?),?[ \t]*$', re.M
)
# Matched against lower-cased text: a literal "zero" or "ds_z" prefix keeps the scan fast. Digit
# edges are ASCII: "zero stage2示例配置" has no \b after the 2 (CJK characters are word characters).
_ZERO = re.compile(
    r'zero(?:_optimization"\s*:\s*\{[^{}]{0,2000}?"stage"\s*:\s*"?(\d)'
    r"|[_ ](?:optimization[_ ])?stage[\s:=.]*(\d)(?![0-9a-z])"
    r"|[- ]?(?:stage[- ]?)?(\d)(?![0-9a-z])"
    r"|(\d)(?:\.json|_offload))"
    # LLaMA-Factory's example configs: examples/deepspeed/ds_z3_offload_config.json
    r"|ds_z(\d)_"
)
_DS_PREC = re.compile(r'"(fp16|bf16|bfloat16)"\s*:\s*\{[^{}]{0,1000}?"enabled"\s*:\s*"?(\w+)')
_JSON_KEYS = {
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "initial_scale_power",
    "min_loss_scale",
    "loss_scale_window",
    "hysteresis",
    "overlap_comm",
    "contiguous_gradients",
    "model_name_or_path",
}
_YAML_DENY = {
    "error",
    "warning",
    "note",
    "info",
    "debug",
    "loss",
    "step",
    "epoch",
    "http",
    "https",
    "traceback",
    "hint",
    "reason",
    "message",
    "file",
    "line",
    "exception",
    "cause",
}


# ASCII word edges: "8卡V100" and "V100显卡" name the GPU too (CJK characters are \w in re).
_GPU = re.compile(
    r"(?<![A-Za-z0-9_])(A100|H100|H800|A800|H200|H20|V100|T4|A10G?|L40S?|L4|A6000|A40|A30|P100|K80|GH200"
    r"|B200|910B\d?|MI\d{3}X?|(?:RTX ?)?(?:4090|3090|3080|4080|2080 ?Ti|A5000|A4000))"
    r"(?![A-Za-z0-9_])"
)

# Most specific first: llamafactory runs trl trainers on deepspeed on transformers.
# Needles are looked up in lower-cased text with `in`: 20 MB logs leave no time for re.I scans.
_TRAINERS = (
    "dpotrainer",
    "ktotrainer",
    "orpotrainer",
    "grpotrainer",
    "ppotrainer",
    "sfttrainer",
    "rewardtrainer",
    "dpoconfig",
    "grpoconfig",
    "ktoconfig",
    "sftconfig",
)
_FRAMEWORKS = (
    ("verl", ("verl.", "verl/", " verl ", "-m verl")),
    ("openrlhf", ("openrlhf",)),
    ("llamafactory", ("llamafactory", "llmtuner", "llama-factory", "llama_factory")),
    (
        "ms-swift",
        (
            "ms-swift",
            "swift sft",
            "swift rlhf",
            "swift pt",
            "swift infer",
            "swift/llm",
            "swift.llm",
            "[info:swift]",
        ),
    ),
    ("axolotl", ("axolotl",)),
    ("unsloth", ("unsloth",)),
    (
        "medicalgpt",
        (
            "medicalgpt",
            "supervised_finetuning.py",
            "dpo_training.py",
            "orpo_training.py",
            "ppo_training.py",
        ),
    ),
    ("trl", ("trl==", "trl/", "trl.", " trl ", "trl version", "`trl`", *_TRAINERS)),
    ("deepspeed", ("deepspeed",)),
    ("transformers", ("transformers", "{'loss':")),
)

_STAGE_WORDS = {
    "pt": "pretrain",
    "pretrain": "pretrain",
    "sft": "sft",
    "dpo": "dpo",
    "kto": "kto",
    "rm": "rm",
    "reward": "rm",
    "ppo": "ppo",
    "grpo": "grpo",
    "orpo": "orpo",
    "simpo": "dpo",
    "cpo": "dpo",
    "ipo": "dpo",
}
# The stage named in prose ("训练奖励模型时 loss nan", "my DPO run", "GRPO 训练"), read only
# when no flag or trainer name in the text said it. Ordered so that a run that names two stages
# gets the later one: "SFT 之后做 DPO" is a DPO report, "PPO with a reward model" a PPO one.
_STAGE_PROSE = (
    ("grpo", re.compile(r"(?<![a-z])(?:grpo|dapo|gspo)(?![a-z])")),
    ("kto", re.compile(r"(?<![a-z])kto(?![a-z])")),
    ("orpo", re.compile(r"(?<![a-z])orpo(?![a-z])")),
    ("dpo", re.compile(r"(?<![a-z])(?:dpo|simpo|ipo)(?![a-z])")),
    ("ppo", re.compile(r"(?<![a-z])ppo(?![a-z])")),
    (
        "rm",
        re.compile(
            r"(?<![a-z])(?:reward model(?:s|ing)?|rm training|train(?:ing)? (?:an? |the )?rm)"
            r"(?![a-z])|奖励模型|rm ?训练|训练 ?rm(?![a-z])"
        ),
    ),
    ("sft", re.compile(r"(?<![a-z])sft(?![a-z])|监督微调|指令微调")),
    # Not a bare 预训练: "预训练模型" is the pretrained base model of any stage.
    ("pretrain", re.compile(r"(?<![a-z])(?:pre-?training|pretrain)(?![a-z])|(?:增量|继续)预训练")),
)
_STAGE_SAID = re.compile(
    r"(?:rlhf_type|\bstage)[ \t]*[:=]?[ \t]*(pt|sft|rm|ppo|dpo|kto|orpo|grpo)\b"
)
_STAGE_TEXT = (
    # num_generations is a GRPO/RLOO-only flag: a command carrying it is an online-RL run.
    (
        "grpo",
        (
            "grpotrainer",
            "grpoconfig",
            "train_grpo",
            "grpo_trainer",
            "adv_estimator=grpo",
            "num_generations",
        ),
    ),
    ("kto", ("ktotrainer", "ktoconfig", "train_kto", "kto_loss")),
    ("orpo", ("orpotrainer", "orpo_training", "train_orpo")),
    ("dpo", ("dpotrainer", "dpoconfig", "train_dpo", "dpo_training", "dpo.py")),
    ("rm", ("rewardtrainer", "rewardconfig", "train_rm", "reward_modeling")),
    ("ppo", ("ppotrainer", "ppoconfig", "train_ppo", "ppo_training", "ray_trainer", "main_ppo")),
    ("sft", ("sfttrainer", "sftconfig", "train_sft", "supervised_finetuning", "swift sft")),
    ("pretrain", ("run_clm", "pretraining.py", "train_pt.")),
)

_TRUE = ("true", "1", "yes", "on")


@dataclass(frozen=True)
class Context:
    flags: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    model: dict = field(default_factory=dict)
    stage: str | None = None
    framework: str | None = None
    hardware: str | None = None
    precision: str | None = None


def extract_context(text: str, metric_names: set[str] = frozenset()) -> Context:
    """Read the setting from the non-metric part of a log.

    "llamafactory-cli train dpo.yaml\\nstage: dpo\\nbf16: true\\n"
    "model_name_or_path: Qwen/Qwen2.5-7B"
        -> Context(flags={"stage": "dpo", "bf16": "true", ...}, stage="dpo",
                   framework="llamafactory", precision="bf16",
                   model={"name": "Qwen/Qwen2.5-7B", "family": "qwen2.5", "size_b": 7.0})
    """
    flags = extract_flags(text)
    return Context(
        flags=flags,
        versions=extract_versions(text),
        model=extract_model(text, flags),
        stage=_stage(text, flags, metric_names),
        framework=_framework(text),
        hardware=_hardware(text),
        precision=_precision(text, flags),
    )


def extract_flags(text: str) -> dict[str, str]:
    """Flags from YAML, arg dumps, DeepSpeed JSON and command lines; the command line wins.

    "torchrun train.py --fp16 --per_device_train_batch_size 1" -> {"fp16": "true", ...: "1"}
    """
    flags: dict[str, str] = {}
    if ": " in text or ":\t" in text:
        for k, v in _YAML.findall(text):
            if k not in _YAML_DENY:
                flags[k] = _unquote(v)
    if "=" in text:
        for k, v in _ARGS_DUMP.findall(text):
            if not v.startswith("="):  # "torch==2.1.2" is a version pin, not an argument
                flags[k] = _unquote(v.strip())
        for m in _NAMESPACE.finditer(text):
            for k, v in _NS_PAIR.findall(m.group(1)):
                flags[k] = _unquote(v)
    if "..." in text:
        for k, v in _DOTTED.findall(text):
            if not k.lower().endswith("version"):
                flags[k.replace(" ", "_")] = v.strip()
    if '"' in text:
        for k, v in _JSON_SCALAR.findall(text):
            if k in _JSON_KEYS:
                flags[k] = _unquote(v)
        for name, enabled in _DS_PREC.findall(text):
            if enabled.lower() != "auto":
                flags["bf16" if name.startswith("b") else "fp16"] = enabled.lower()
    low = text.lower()
    m = _ZERO.search(low) if "zero" in low or "ds_z" in low else None
    if m:
        flags["zero_stage"] = next(g for g in m.groups() if g)
    flags.update(parse_command_flags(text))
    return flags


def parse_command_flags(text: str) -> dict[str, str]:
    """Flags of launch commands, continuation lines joined.

    "deepspeed train.py --bf16 True --vanilla_loss" -> {"bf16": "True", "vanilla_loss": "true"}
    """
    joined = re.sub(r"\\[ \t]*\r?\n", " ", text) if "\\" in text else text
    flags: dict[str, str] = {}
    for m in _LAUNCH.finditer(joined):
        line = m.group(0)
        if " -" not in line:
            yaml_file = _YAML_FILE.search(line)
            if yaml_file:
                flags.setdefault("config_file", yaml_file.group(0))
            continue
        try:
            tokens = shlex.split(line, comments=False)
        except ValueError:
            tokens = line.split()
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.startswith("-") and len(tok) > 1 and not is_number(tok):
                key = tok.lstrip("-").replace("-", "_")
                if "=" in key:
                    key, value = key.split("=", 1)
                elif i + 1 < len(tokens) and not (
                    tokens[i + 1].startswith("-") and not is_number(tokens[i + 1])
                ):
                    value = tokens[i + 1]
                    i += 1
                else:
                    value = "true"
                if key:
                    flags[key] = value
            i += 1
    return flags


def _stage(text: str, flags: dict[str, str], metric_names: set[str]) -> str | None:
    for key in ("stage", "rlhf_type", "train_type", "task"):
        word = flags.get(key, "").strip().lower()
        if word in _STAGE_WORDS:
            return _STAGE_WORDS[word]
    low = text.lower()
    said = _STAGE_SAID.search(low) if "stage" in low else None
    if said:
        return _STAGE_WORDS[said.group(1)]
    for stage, needles in _STAGE_TEXT:
        if any(n in low for n in needles):
            return stage
    if "kto_loss" in metric_names or "kl" in metric_names and "rewards/chosen" in metric_names:
        return "kto"
    if "rewards/margins" in metric_names or "rewards/chosen" in metric_names:
        return "dpo"
    for stage, said_in_prose in _STAGE_PROSE:
        if said_in_prose.search(low):
            return stage
    return None


def _framework(text: str) -> str | None:
    low = text.lower()
    for name, needles in _FRAMEWORKS:
        if any(n in low for n in needles):
            return name
    return None


def _hardware(text: str) -> str | None:
    counts = Counter(_gpu_name(m) for m in _GPU.findall(text))
    return counts.most_common(1)[0][0] if counts else None


def _gpu_name(raw: str) -> str:
    return raw.replace("RTX", "").replace(" ", "") if raw[0] in "R0123456789" else raw


def _precision(text: str, flags: dict[str, str]) -> str | None:
    def on(key: str) -> bool:
        return flags.get(key, "").lower() in _TRUE

    mixed = flags.get("mixed_precision", flags.get("precision", "")).lower()
    if on("fp16") or on("fp16_enabled") or on("half") or mixed in ("fp16", "16", "16-mixed"):
        return "fp16"
    if on("bf16") or on("bfloat16_enabled") or on("bf16_enabled") or "bf16" in mixed:
        return "bf16"
    quant = flags.get("quantization_bit", "")
    if on("load_in_4bit") or quant == "4":
        return "int4"
    if on("load_in_8bit") or quant == "8":
        return "int8"
    dtype = flags.get("torch_dtype", "").lower()
    if "float16" in dtype and "b" not in dtype:
        return "fp16"
    if "bfloat16" in dtype:
        return "bf16"
    if (
        on("fp32")
        or mixed in ("no", "fp32")
        or (flags.get("fp16", "").lower() == "false" and flags.get("bf16", "").lower() == "false")
    ):
        return "fp32"
    return _python_precision(text)


# Python forms no flag parser reads: TrainingArguments(fp16=True), SFTConfig(bf16=True),
# from_pretrained(..., torch_dtype=torch.bfloat16), nanoGPT's `dtype = 'float16'`.
_PY_AMP = re.compile(r"(?<![\w-])(fp16|bf16)\s*=\s*True\b")
_PY_DTYPE = re.compile(
    r"(?<![\w-])(?:torch_)?dtype\s*=\s*(?:torch\.|['\"])(bfloat16|float16|half)\b"
)


def _python_precision(text: str) -> str | None:
    head = text[:200_000]
    amp = {m.group(1) for m in _PY_AMP.finditer(head)}
    if len(amp) == 1:
        return amp.pop()
    dtypes = {
        "fp16" if m.group(1) in ("float16", "half") else "bf16" for m in _PY_DTYPE.finditer(head)
    }
    return dtypes.pop() if len(dtypes) == 1 else None


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
