"""What the log analyzer found: the dataclasses passed from `assistant.logs` to the answer layer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kb.errors import KbError
from kb.signatures import WRAPPER_ERRORS

# Points kept per series in to_dict(); the web app and the JSON API do not need more.
MAX_POINTS = 500

Point = tuple[int | None, float]


class NoMetrics(KbError):
    """There is no metric series to plot or analyse."""


@dataclass(frozen=True)
class Anomaly:
    kind: str  # zero_collapse, nan, inf, explosion, stuck_ln2, flat, spike, divergence, ...
    metric: str  # series name, e.g. "loss", "grad_norm", "loss_scale"
    step: int | None  # where it started; None when the log carries no step numbers
    detail: str  # a sentence a user reads

    def to_dict(self) -> dict:
        return {"kind": self.kind, "metric": self.metric, "step": self.step, "detail": self.detail}


@dataclass(frozen=True)
class ErrorInfo:
    type: str  # "ValueError", "torch.OutOfMemoryError"
    message: str  # first line of the exception message
    frames: list[str] = field(
        default_factory=list
    )  # "transformers/trainer.py:1234 train", last few

    @property
    def line(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    def to_dict(self) -> dict:
        return {"type": self.type, "message": self.message, "frames": list(self.frames)}


@dataclass(frozen=True)
class LogSignals:
    metrics: dict[str, list[Point]] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
    errors: list[ErrorInfo] = field(default_factory=list)
    error_lines: list[str] = field(default_factory=list)
    flags: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    model: dict = field(default_factory=dict)  # {"name", "family", "size_b"}; {} when unknown
    stage: str | None = None  # sft, dpo, kto, rm, ppo, grpo, orpo, pretrain
    framework: str | None = None  # llamafactory, trl, openrlhf, deepspeed, ms-swift, ...
    hardware: str | None = None  # V100, A100, H100, 4090, 910B, ...
    precision: str | None = None  # fp16, bf16, fp32, int8, int4
    has_error_text: bool = False
    version_change: bool = False  # the user says a library upgrade/downgrade changed the outcome
    pad_eos_endless: bool = False  # pad_token set to eos_token, and the trained model never stops

    def to_dict(self) -> dict:
        keep = {}
        for a in self.anomalies:
            keep.setdefault(a.metric, set()).add(a.step)
        return {
            "metrics": {
                name: [[s, _json_number(v)] for s, v in _downsample(pts, keep.get(name, set()))]
                for name, pts in self.metrics.items()
            },
            "anomalies": [a.to_dict() for a in self.anomalies],
            "errors": [e.to_dict() for e in self.errors],
            "error_lines": list(self.error_lines),
            "flags": dict(self.flags),
            "versions": dict(self.versions),
            "model": dict(self.model),
            "stage": self.stage,
            "framework": self.framework,
            "hardware": self.hardware,
            "precision": self.precision,
            "has_error_text": self.has_error_text,
            "version_change": self.version_change,
            "pad_eos_endless": self.pad_eos_endless,
        }

    def evidence_phrases(self) -> list[str]:
        """Short phrases saying what was found, for the retrieval query and the user.

        Ordered most telling first: exceptions, anomalies, error lines, then the setting
        (precision, stage, model, hardware, framework, versions).
        """
        out: list[str] = []
        for e in sorted(self.errors, key=lambda e: e.type.endswith(WRAPPER_ERRORS)):
            out.append(_clip(e.line, 200))
        for a in self.anomalies:
            out.append(a.detail.rstrip("."))
        out.extend(_clip(line, 160) for line in self.error_lines[:5])
        if self.precision in ("fp16", "bf16"):
            out.append(f"{self.precision} enabled")
        elif self.precision:
            out.append(f"{self.precision} precision")
        zero = self.flags.get("zero_stage")
        if zero:
            out.append(f"DeepSpeed ZeRO stage {zero}")
        if self.stage:
            out.append(f"{self.stage.upper() if len(self.stage) <= 4 else self.stage} training")
        if self.model.get("name"):
            out.append(f"model {self.model['name']}")
        if self.model.get("size_b"):
            out.append(f"model size {_size(self.model['size_b'])}")
        if self.hardware:
            out.append(f"GPU {self.hardware}")
        if self.framework:
            out.append(f"framework {self.framework}")
        for flag in _NOTABLE_FLAGS:
            value = self.flags.get(flag)
            if value is not None and value.lower() not in ("false", "0", "none", ""):
                out.append(f"{flag} {value}" if value.lower() != "true" else f"{flag} enabled")
        if self.version_change:
            out.append("works on another library version: version incompatibility, pin or upgrade")
        if self.pad_eos_endless:
            out.append("pad_token set to eos_token and the trained model never stops generating")
        for pkg in ("transformers", "trl", "torch", "peft", "deepspeed"):
            if pkg in self.versions:
                out.append(f"{pkg} {self.versions[pkg]}")
        seen: set[str] = set()
        return [p for p in out if not (p in seen or seen.add(p))]


_NOTABLE_FLAGS = (
    "finetuning_type",
    "vanilla_loss",
    "gradient_checkpointing",
    "flash_attn",
    "load_in_4bit",
    "load_in_8bit",
    "quantization_bit",
    "packing",
    "loss_type",
)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _size(b: float) -> str:
    return f"{b:g}B" if b >= 1 else f"{b * 1000:g}M"


def _json_number(v: float) -> float | str:
    # Strict JSON has no NaN/Infinity; keep the information as a string.
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _downsample(points: list[Point], keep_steps: set) -> list[Point]:
    """Evenly thin a series to MAX_POINTS, always keeping the first, last and anomaly points."""
    n = len(points)
    if n <= MAX_POINTS:
        return points
    stride = n / (MAX_POINTS - 1)
    idx = {min(n - 1, round(i * stride)) for i in range(MAX_POINTS)}
    idx.add(n - 1)
    keep_steps = keep_steps - {None}  # a None step would keep every point of a stepless series
    if keep_steps:
        idx.update(i for i, (s, _) in enumerate(points) if s in keep_steps)
    return [points[i] for i in sorted(idx)]
