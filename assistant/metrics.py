"""Metric parsing for one log line: Trainer dicts, JSON records, tqdm postfixes, plain text."""

from __future__ import annotations

import re
from dataclasses import dataclass

# ASCII-only case folding: under re.IGNORECASE "i" also matches "ı" and "İ", which float() refuses.
_NUM = r"(?a:[-+]?(?:inf(?:inity)?|nan)|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
# 'loss': 0.5 | "loss": NaN | 'grad_norm': tensor(1.2, device='cuda:0') | 'acc': np.float64(0.5)
_PAIR = re.compile(
    r"""['"]([^'"\n]{1,80})['"]\s*:\s*(?:[A-Za-z_][\w.]{0,30}\()?\s*['"]?(""" + _NUM + ")",
    re.IGNORECASE,
)
_SWIFT_STEP = re.compile(r"""global_step(?:/max_steps)?['"]\s*:\s*['"]?(\d+)""")
# tqdm: " 12%|█▏   | 120/1000 [01:02<07:40,  1.91it/s, loss=0.693, lr=1e-5]"
_PROGRESS = re.compile(r"(\d+)/(\d+) \[")
_POSTFIX = re.compile(r"([A-Za-z_][\w/.]{0,60})=\s*(" + _NUM + ")", re.IGNORECASE)
# plain: "step 10 loss 0.53", "Step 10/100 | loss: 0.53", "iter 100: loss 2.31", Megatron, verl
_STEP = re.compile(
    r"(?<![\w/])(?:global[_ ]step|step|iter(?:ation)?|it)s?\s*[:=#]?\s*\[?\s*(\d+)", re.IGNORECASE
)
_PLAIN_PAIR = re.compile(
    r"(?<![\w/.])([A-Za-z][\w/@.\-]{0,60}(?: (?:loss|norm|scale|rate))?)\s*(?:[:=]\s*|\s+)("
    + _NUM
    + r")(?![\w.])",
    re.IGNORECASE,
)
_PLAIN_METRIC = re.compile(
    r"loss|norm|lr$|learning_rate|reward|kl|acc|ppl|perplexity|entropy|score"
)

_ALIASES = {
    "lr": "learning_rate",
    "lm_loss": "loss",
    "train_loss_step": "loss",
    "grad-norm": "grad_norm",
    "gradnorm": "grad_norm",
    "grad_norm_total": "grad_norm",
    "loss-scale": "loss_scale",
    "eval/loss": "eval_loss",
}
# Keys in Trainer/swift dicts that are bookkeeping, not training signals.
_SKIP = {
    "epoch",
    "step",
    "global_step",
    "global_step/max_steps",
    "total_flos",
    "percentage",
    "elapsed_time",
    "remaining_time",
    "train_speed(iter/s)",
    "memory(gib)",
    "num_input_tokens_seen",
    "num_tokens",
    "iteration",
    "iter",
    "it",
    "max_steps",
    "consumed_samples",
    "consumed samples",
}
_CONFIG_KEYS = ("enabled", "initial_scale_power", "loss_scale_window", "train_batch_size")


def metric_name(key: str) -> str:
    """Canonical series name.

    'train/loss' -> 'loss', 'eval/loss' -> 'eval_loss', 'lr' -> 'learning_rate'
    """
    k = key.strip().lower().replace(" ", "_")
    if k.startswith("train/"):
        k = k[6:]
    elif k.startswith("eval/"):
        k = "eval_" + k[5:]
    return _ALIASES.get(k, k)


def _keep(name: str) -> bool:
    return not (
        name in _SKIP
        or name.endswith(("_runtime", "_per_second", "runtime", "samples_per_second"))
        or name.startswith(("train_steps", "train_samples"))
    )


_KEYS: dict[str, tuple[str, bool, bool]] = {}


def _key(raw: str) -> tuple[str, bool, bool]:
    """(series name, worth keeping, looks like a metric); cached, as keys repeat every line."""
    hit = _KEYS.get(raw)
    if hit is None:
        name = metric_name(raw)
        hit = (name, _keep(name), bool(_PLAIN_METRIC.search(name)))
        if len(_KEYS) < 10_000:
            _KEYS[raw] = hit
    return hit


def parse_record(line: str) -> tuple[int | None, dict[str, float]] | None:
    """Metrics in a python-dict or JSON record, with the step if the record carries one.

    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.1}"
        -> (None, {"loss": 0.0, "grad_norm": nan, "learning_rate": 2e-05})
    '{"train/loss": 1.19e+34, "step": 12}' -> (12, {"loss": 1.19e+34})
    A DeepSpeed fp16 config block ("loss_scale": 0, "enabled": true) is not a record.
    """
    pairs = _PAIR.findall(line)
    if not pairs:
        return None
    step: int | None = None
    values: dict[str, float] = {}
    metric_seen = False
    for key, raw in pairs:
        name, keep, is_metric = _KEYS.get(key) or _key(key)
        if name in ("step", "global_step"):
            step = _int(raw)
        elif name in _CONFIG_KEYS:
            return None
        elif keep:
            values[name] = float(raw)
            metric_seen = metric_seen or is_metric
    if not metric_seen:
        return None
    if step is None and "global_step" in line:
        m = _SWIFT_STEP.search(line)
        step = int(m.group(1)) if m else None
    return step, values


def record_from_dict(entry: dict) -> tuple[int | None, dict[str, float]] | None:
    """A parsed JSON record (a trainer_state.json log_history entry), same rules as parse_record.

    {"loss": 0.5, "step": 10, "epoch": 0.1} -> (10, {"loss": 0.5})
    """
    step = None
    values: dict[str, float] = {}
    metric_seen = False
    for key, value in entry.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        name, keep, is_metric = _key(str(key))
        if name in ("step", "global_step"):
            step = int(value) if value == value and abs(value) < 1e18 else None
        elif keep:
            values[name] = float(value)
            metric_seen = metric_seen or is_metric
    return (step, values) if metric_seen else None


# A flat record: quoted keys and bare numbers only, the shape HF Trainer prints once per log step.
# Long metric-only logs are nearly all such lines, so Analyzer reads runs of them in bulk.
# No "\r" in a key: Analyzer.feed_line splits a line at "\r" (progress-bar redraws) first.
_FLAT_KEY = r"""(?:'[^'"\n\r\\]{1,80}'|"[^'"\n\r\\]{1,80}")"""
# Atomic numbers: only a separator may follow one, and a failed match must not backtrack through
# a long run of digits (a hostile line would cost quadratic time).
_ATOMIC_NUM = "(?>" + _NUM + ")"
_FLAT_PAIR = _FLAT_KEY + r"[ \t]*:[ \t]*" + _ATOMIC_NUM
# In a shape, a number is any run of the characters numbers are spelled with: the engine reads
# such a class three times faster than _NUM's alternatives. Over this alphabet float() accepts
# exactly what _NUM matches whole, so a token float() refuses sends its run back to the
# line-by-line path (RecordShape.line rebuilds the lines).
_SHAPE_TOKEN = "([-+.0-9eEinfatyINFATY]+)"
_FLAT = re.compile(
    r"[ \t]*\{[ \t]*" + _FLAT_PAIR + r"(?:[ \t]*,[ \t]*" + _FLAT_PAIR + r")*[ \t]*\}[ \t]*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RecordShape:
    """A flat record with its numbers taken out: every line it fullmatches parses alike.

    Lines of one shape differ only in their numbers, so parse_record would find the same keys
    in each; `pattern` reads all the numbers of a line in one match instead.
    """

    pattern: re.Pattern[str]  # fullmatch(line).groups() -> the line's number tokens, in order
    names: tuple[str, ...]  # kept series, in the order parse_record's dict has them
    columns: tuple[int, ...]  # group holding each name's value
    step_column: int | None  # group holding the step, when the record carries one
    literals: tuple[str, ...]  # the text around the numbers: len(literals) == groups + 1
    lines: re.Pattern[str]  # `pattern` as whole lines of a multi-line text, for findall

    def line(self, tokens: tuple[str, ...]) -> str:
        """The line `pattern` read these tokens from."""
        out = [self.literals[0]]
        for token, literal in zip(tokens, self.literals[1:], strict=True):
            out += (token, literal)
        return "".join(out)


def record_shape(line: str) -> RecordShape | None:
    """The shape of a flat metric record, or None where only parse_record may read the line.

    "{'loss': 0.5, 'grad_norm': 1.2, 'epoch': 0.1}" -> RecordShape(names=("loss", "grad_norm"),
        columns=(0, 1), step_column=None, literals=("{'loss': ", ", 'grad_norm': ", ...))
    """
    if "Traceback" in line or "global_step" in line or not _FLAT.fullmatch(line):
        return None  # a traceback prefix or a swift step string: the line-by-line rules apply
    literals, at = [], 0
    step_column = None
    columns: dict[str, int] = {}
    metric_seen = False
    for i, m in enumerate(_PAIR.finditer(line)):
        literals.append(line[at : m.start(2)])
        at = m.end(2)
        name, keep, is_metric = _key(m.group(1))
        if name in ("step", "global_step"):
            step_column = i
        elif name in _CONFIG_KEYS:
            return None
        elif keep:
            columns[name] = i  # a repeated name keeps its first place and its last value
            metric_seen = metric_seen or is_metric
    if not metric_seen:
        return None
    literals.append(line[at:])
    pattern = re.compile(_SHAPE_TOKEN.join(re.escape(text) for text in literals))
    # The shape must read this line exactly as parse_record does, or it is not used at all.
    m, rec = pattern.fullmatch(line), parse_record(line)
    if m is None or rec is None or list(rec[1]) != list(columns):
        return None
    read = [repr(float(m.group(c + 1))) for c in columns.values()]
    if read != [repr(v) for v in rec[1].values()]:
        return None
    names, cols = tuple(columns), tuple(columns.values())
    lines = re.compile("^" + pattern.pattern + "$", re.MULTILINE)
    return RecordShape(pattern, names, cols, step_column, tuple(literals), lines)


def parse_progress(line: str) -> tuple[int, int, dict[str, float]] | None:
    """A tqdm bar: (done, total, postfix metrics).

    " 40%|████      | 40/100 [00:10<00:15, 3.9it/s, loss=0.693, lr=1e-05]"
        -> (40, 100, {"loss": 0.693, "learning_rate": 1e-05})
    """
    m = _PROGRESS.search(line)
    if not m:
        return None
    values: dict[str, float] = {}
    tail = line[m.end() :]
    if "=" in tail:
        for key, raw in _POSTFIX.findall(tail):
            name, keep, _ = _key(key)
            if keep:
                values[name] = float(raw)
    return int(m.group(1)), int(m.group(2)), values


def parse_plain(line: str) -> tuple[int | None, dict[str, float]] | None:
    """A free-text metric line with a step counter.

    "Step 10/100 | loss: 0.53 | lr: 2e-5" -> (10, {"loss": 0.53, "learning_rate": 2e-05})
    "iter 100: loss 2.31" -> (100, {"loss": 2.31})
    " iteration 300/ 1000 | lm loss: 2.310E+00 | loss scale: 1.0 |" -> (300, {"loss": 2.31, ...})
    "step:10 - actor/pg_loss:0.12 - critic/score/mean:0.5" -> (10, {"actor/pg_loss": 0.12, ...})
    """
    m = _STEP.search(line)
    if not m:
        return _parse_summary(line)
    values = _metric_values(_PLAIN_PAIR.findall(line))
    if not values:
        return None
    return int(m.group(1)), values


# A W&B run summary, pasted from the terminal or the web page, has no step:
# "wandb:   train/grad_norm 0.0" or "train/grad_norm 0.0, train/kl 0.0, train/loss 0.0".
_WANDB_LINE = re.compile(r"^\s*wandb:\s+([\w/.\-]{1,60})\s+(" + _NUM + r")\s*$", re.IGNORECASE)
_SUMMARY_PAIR = re.compile(r"(?<![\w/])((?:train|eval)/[\w.\-]{1,60})\s+(" + _NUM + r")(?![\w.])")


def _parse_summary(line: str) -> tuple[None, dict[str, float]] | None:
    """ "wandb:   train/loss 0.0" -> (None, {"loss": 0.0}); the comma list needs two pairs."""
    single = _WANDB_LINE.match(line)
    pairs = [single.groups()] if single else _SUMMARY_PAIR.findall(line)
    if not single and len(pairs) < 2:
        return None
    values = _metric_values(pairs)
    return (None, values) if values else None


def _metric_values(pairs: list[tuple[str, str]]) -> dict[str, float]:
    """The (key, number) pairs of a free-text line that are training metrics, by series name."""
    values: dict[str, float] = {}
    for key, raw in pairs:
        name, keep, is_metric = _key(key)
        if keep and is_metric:
            values[name] = float(raw)
    return values


def _int(raw: str) -> int | None:
    try:
        return int(float(raw))
    except (ValueError, OverflowError):
        return None
