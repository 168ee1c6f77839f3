"""The composed answer: deterministic text built from the matched articles and the user's signals.

This is always shown. The LLM (assistant.generator) may add a short tailored summary in front.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assistant.changes import Change, bf16_in_fix, enables_bf16
from assistant.version_talk import WorkingVersion
from kb.articles import Snippet
from kb.retrieval import Hit
from kb.scope import AFTER_TRAINING_REASON, SPEED_REASON
from kb.text import has_cjk

HEADINGS = {
    "en": {
        "diagnosis": "Diagnosis",
        "also": "Also possible",
        "cause": "Why it happens",
        "fix": "Fix",
        "confirm": "How to confirm",
        "snippet": "Snippet",
        "sources": "Sources",
        "evidence": "Evidence",
        "none": "No known case matches this report.",
        "why_none": "why",
        "nearest": "Nearest cases (none is a confident match)",
        "add": (
            "If this is a real training failure kb should know, add an article: copy an existing "
            "file in articles/, follow docs/ARTICLE_FORMAT.md, then run `kb validate` and "
            "`kb index`."
        ),
        "needs": "To diagnose this, paste:",
        "confidence": "confidence",
        "close": "Other known cases fit almost as well; they are under “Also possible” below.",
        "changes": "Changes to your run",
        "no_bf16": (
            "Your GPU ({gpu}) has no bf16: skip the bf16 parts of this fix and use the steps for "
            "GPUs without bf16 (fp32, or fp16 with the fp16-specific settings)."
        ),
        "no_bf16_snippets": (
            "This case's snippets that turn bf16 on are left out, since they would not run on "
            "your GPU."
        ),
        "pin": (
            "Your report says these versions worked: pin them to train again now, and apply the "
            "fix above when you can:"
        ),
    },
    "zh": {
        "diagnosis": "诊断",
        "also": "也可能是",
        "cause": "原因",
        "fix": "解决方法",
        "confirm": "如何确认",
        "snippet": "代码片段",
        "sources": "参考来源",
        "evidence": "依据",
        "none": "知识库中没有与该报告匹配的已知案例。",
        "why_none": "原因",
        "nearest": "最接近的案例（都不是可靠匹配）",
        "add": (
            "如果这是 kb 应该知道的训练故障，请添加一篇文章：参考 articles/ 中的现有文件和 "
            "docs/ARTICLE_FORMAT.md，然后运行 `kb validate` 和 `kb index`。"
        ),
        "needs": "要诊断这个问题，请贴出：",
        "confidence": "置信度",
        "close": "另有已知案例几乎同样吻合，见下方“也可能是”。",
        "changes": "你的配置需要改的地方",
        "no_bf16": (
            "你的显卡（{gpu}）不支持 bf16：跳过修复中与 bf16 有关的部分，"
            "按不支持 bf16 的显卡的做法（fp32，或 fp16 配合相应设置）。"
        ),
        "no_bf16_snippets": ("这个案例里开启 bf16 的代码片段没有列出来，因为在你的显卡上跑不了。"),
        "pin": (
            "你的描述里这些版本可以正常训练：可以先固定这些版本恢复训练，之后再按上面的方法解决："
        ),
    },
}

# A runner-up this close to the first case is shown in full under "Also possible".
CLOSE_SHARE = 0.85
# How many cases every surface lists (case cards, "nearest cases"); abstention and the LLM guard
# look at the same ones.
CASES_SHOWN = 3

VERSIONS_COMMAND = 'pip list | grep -E "torch|transformers|trl|peft|deepspeed|accelerate"'
NEEDS_TEXT = {
    "en": {
        "traceback": (
            "the full traceback, down to the last line with the exception type and message"
        ),
        "metrics": (
            "the metric lines of the log ({'loss': ..., 'grad_norm': ...}) or trainer_state.json"
        ),
        "command": "the launch command or config file (YAML / TrainingArguments / DeepSpeed JSON)",
        "versions": "versions: " + VERSIONS_COMMAND,
    },
    "zh": {
        "traceback": "完整的报错堆栈（一直到最后一行的异常类型和信息）",
        "metrics": "日志里的指标行（{'loss': ..., 'grad_norm': ...}）或 trainer_state.json",
        "command": "启动命令或配置文件（YAML / TrainingArguments / DeepSpeed JSON）",
        "versions": "版本信息：" + VERSIONS_COMMAND,
    },
}


@dataclass(frozen=True)
class Answer:
    text: str
    snippets: list[Snippet] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    language: str = "en"
    llm_text: str = ""  # the model's tailored summary, empty when not used or rejected
    llm_note: str = ""  # why the LLM text is absent ("--no-llm", "guard: invented key ...")

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "snippets": [s.to_dict() for s in self.snippets],
            "sources": self.sources,
            "language": self.language,
            "llm_text": self.llm_text,
            "llm_note": self.llm_note,
        }


@dataclass(frozen=True)
class RunAdvice:
    """What the answer says about *this* run beyond the case itself."""

    snippets: list[Snippet] | None = None  # tailored; None: the case's first snippet as written
    working: list[WorkingVersion] = field(default_factory=list)  # versions the report says worked
    changes: list[Change] = field(default_factory=list)  # the user's settings the fix changes
    gpu_without_bf16: str | None = None  # "V100": skip the bf16 parts of the fix


# The abstain reasons of assistant/service.py and kb/scope.py, for a Chinese answer.
ZH_REASONS = {
    "no article shares anything with this report": "没有任何文章与这个报告相关",
    "the closest cases are not similar enough": "最接近的案例也不够相似",
    "it reads as a feature request, not a failed training run": "这更像是功能需求，而不是训练失败",
    "it is about serving or deploying a model, not a failed training run": (
        "这是模型部署/推理服务的问题，不是训练失败"
    ),
    "it is about using a model (inference or an app), not a failed training run": (
        "这是模型使用（推理或调用模型的应用）的问题，不是训练失败"
    ),
    "it is about a vision or diffusion model; kb knows LLM fine-tuning failures": (
        "这是视觉或扩散模型的问题；kb 只收录大语言模型微调的失败案例"
    ),
    AFTER_TRAINING_REASON: "这是训练完成后使用模型（预测、对话或 demo）时的报错，不是训练失败",
    SPEED_REASON: "这是关于训练速度或吞吐量的问题，训练本身没有失败",
}


def answer_language(query: str) -> str:
    """zh when the user wrote Chinese (a few CJK characters beside an English traceback count)."""
    cjk = sum(1 for ch in query[:4000] if "\u4e00" <= ch <= "\u9fff")
    return "zh" if cjk >= 2 or (cjk and has_cjk(query) and len(query) < 40) else "en"


def compose_answer(
    hits: list[Hit],
    abstained: bool,
    language: str,
    needs: list[str],
    abstain_reason: str = "",
    advice: RunAdvice | None = None,
) -> Answer:
    advice = advice or RunAdvice()
    snippets, working, changes = advice.snippets, advice.working, advice.changes
    gpu_without_bf16 = advice.gpu_without_bf16
    h = HEADINGS[language]
    lines: list[str] = []
    if needs:
        lines.append(h["needs"])
        lines.extend(f"- {NEEDS_TEXT[language][n]}" for n in needs)
        lines.append("")
    if abstained or not hits:
        lines.append(h["none"])
        if abstain_reason:
            reason = (
                ZH_REASONS.get(abstain_reason, abstain_reason)
                if language == "zh"
                else abstain_reason
            )
            lines.append(f"({h['why_none']}: {reason})")
        if hits:
            lines.append(f"{h['nearest']}:")
            for hit in hits[:CASES_SHOWN]:
                lines.append(
                    f"- {_title(hit, language)} [{hit.article.id}, {hit.article.failure_mode}]"
                )
        lines.append("")
        lines.append(h["add"])
        return Answer("\n".join(lines).strip(), [], [], language, "", "")

    top = hits[0]
    article = top.article
    lines.append(f"## {h['diagnosis']}: {_title(top, language)}")
    lines.append(f"[{article.failure_mode}] {h['confidence']} {top.confidence:.0%}")
    evidence = top.reasons(language)
    if evidence:
        lines.append(f"{h['evidence']}: " + "; ".join(evidence[:3]))
    others = close_runners_up(hits)
    if others:
        lines.append(h["close"])
    lines.append("")
    lines.append(f"### {h['cause']}")
    lines.append(_cause(top, language))
    lines.append("")
    lines.append(f"### {h['fix']}")
    fix_steps = article.zh.get("fix") if language == "zh" and article.zh.get("fix") else article.fix
    lines.extend(f"{i}. {step}" for i, step in enumerate(fix_steps, 1))
    if gpu_without_bf16 and bf16_in_fix(article):
        lines.append("")
        lines.append(h["no_bf16"].format(gpu=gpu_without_bf16))
        if any(enables_bf16(s) for s in article.snippets):
            lines.append(h["no_bf16_snippets"])
    if working:
        lines.append("")
        lines.append(h["pin"])
        lines.extend(f"- `{w.pin}`" for w in working)
    if article.confirm:
        lines.append("")
        lines.append(f"### {h['confirm']}")
        lines.extend(f"- {c}" for c in _checks(top, language))
    if changes:
        lines.append("")
        lines.append(f"### {h['changes']}")
        lines.extend(f"- `{c.text(language)}`" for c in changes)
    chosen = snippets if snippets is not None else article.snippets[:1]
    for snippet in chosen:
        lines.append("")
        lines.append(f"### {h['snippet']} ({snippet.target})")
        lines.append(f"```{snippet.language}\n{snippet.code.rstrip()}\n```")
    if others:
        lines.append("")
        lines.append(f"### {h['also']}")
        # A case that fits almost as well gets its cause and every step: the user cannot tell
        # which of two near-equal cases is theirs from a title and one step.
        for hit in others:
            lines.append("")
            lines.append(
                f"#### {_title(hit, language)} [{hit.article.failure_mode}] "
                f"{h['confidence']} {hit.confidence:.0%}"
            )
            lines.append(first_sentences(_cause(hit, language)))
            lines.extend(f"{i}. {step}" for i, step in enumerate(_fix_steps(hit, language), 1))
            # Its checks are what tells the two cases apart on the user's own machine.
            lines.extend(f"- {h['confirm']}: {check}" for check in _checks(hit, language)[:2])
    lines.append("")
    lines.append(f"### {h['sources']}")
    lines.extend(f"- {url}" for url in article.sources)
    return Answer("\n".join(lines).strip(), list(chosen), list(article.sources), language, "", "")


def close_runners_up(hits: list[Hit]) -> list[Hit]:
    """The second and third cases when they fit nearly as well as the first (CLOSE_SHARE)."""
    if not hits:
        return []
    return [hit for hit in hits[1:3] if hit.confidence >= hits[0].confidence * CLOSE_SHARE]


def first_sentences(text: str, limit: int = 320) -> str:
    """The opening sentences of a cause, whole sentences up to about `limit` characters."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    ends = [m.end() for m in re.finditer(r"(?<=[.!?])\s|(?<=[。！？])", text) if m.end() <= limit]
    return text[: ends[-1]].strip() if ends else text[:limit].rstrip() + "…"


def _title(hit: Hit, language: str) -> str:
    if language == "zh" and hit.article.zh.get("title"):
        return hit.article.zh["title"]
    return hit.article.title


def _cause(hit: Hit, language: str) -> str:
    if language == "zh" and hit.article.zh.get("cause"):
        return hit.article.zh["cause"]
    return hit.article.cause


def _checks(hit: Hit, language: str) -> list[str]:
    """The case's "how to confirm" checks; the Chinese ones only when they line up one to one
    (kb validate enforces it, but a half-translated list would drop checks silently)."""
    zh_checks = hit.article.zh.get("confirm") or []
    if language == "zh" and len(zh_checks) == len(hit.article.confirm):
        return zh_checks
    return hit.article.confirm


def _fix_steps(hit: Hit, language: str) -> list[str]:
    if language == "zh" and hit.article.zh.get("fix"):
        return hit.article.zh["fix"]
    return hit.article.fix
