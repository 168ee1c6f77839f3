"""Is this a training-failure report at all? Lexical cues for training vs serving/feature requests.

kb answers training failures. Deployment questions (vLLM serving, tool calling, GGUF export) and
feature requests ("please support model X") are out of scope: kb says so instead of forcing the
nearest training case onto them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.text import ASCII_LEFT, ASCII_RIGHT

# Word edges that hold next to CJK text: "DPO失败" and "Lora微调" are training talk.
_L, _R = ASCII_LEFT, ASCII_RIGHT
# A leading \w* ("\w*trainer") rescans a long run of CJK text (word characters to re) from every
# position: 20 kB of Chinese took seconds. Prefixes are bounded ASCII instead.
_TRAINING = re.compile(
    _L + r"(train(?:ing|er|s|ed)?|[A-Za-z0-9_]{0,30}trainer|fine[ -]?tun\w*|finetun\w*|sft|dpo|"
    r"kto|orpo|simpo|ppo|grpo|rlhf|reward[ _-]?model|rm training|lora|qlora|peft|deepspeed|"
    r"zero-?[23]|fsdp|"
    r"epochs?|loss|grad(?:ient)?s?|grad_norm|optimizer|learning[ _]rate|lr|warmup|checkpoint\w*|"
    r"accelerate|torchrun|backward|per_device_train_batch_size|gradient_accumulation_steps|"
    r"pretrain\w*|llamafactory-cli train|swift (?:sft|rlhf|pt)|openrlhf|trl|unsloth|axolotl|"
    r"xtuner|verl|dapo|"
    # a training script or metric named inside an identifier: train_ppo_llama_ray.sh,
    # uniform_finetune.py, run_sft.sh, eval_loss
    r"[A-Za-z0-9_]{0,30}_(?:train\w*|finetune\w*|sft|pt|loss)|"
    r"(?:train|lora|qlora|sft|dpo|ppo|grpo|deepspeed)_[A-Za-z0-9_]{1,40}|"
    r"distributeddataparallel|ddp)" + _R
    + r"|训练|微调|预训练|损失|梯度|显存|奖励模型|全参|增量",
    re.IGNORECASE,
)
# "before fine-tuning, the base model already ...": the training word is negated.
_NOT_TRAINED = re.compile(
    r"还没(?:有)?(?:开始)?(?:训练|微调)|未经?(?:过)?(?:训练|微调)|没有经过(?:训练|微调)|"
    r"without (?:any )?fine-?tuning|before (?:any )?fine-?tuning|not (?:yet )?fine-?tuned|untuned",
    re.IGNORECASE,
)
_SERVING = re.compile(
    _L + r"(vllm serve|deploy(?:ed|ing|ment)?|serving|inference server|openai[- ]compatible|"
    r"tool[_ ]?(?:call|choice)\w*|function[_ ]call\w*|chat completions?|ollama|llama\.cpp|gguf|"
    r"ggml|chatglm\.cpp|sglang|quantiz\w+ (?:to|into) gguf|api[ _]server|vllm\.entrypoints|"
    r"enable-lora|endpoint|collect_env\.py|"
    # an app's client code: googlegenai_chat_completion, api_base=..., client.chat.completions
    r"[A-Za-z0-9_]{0,30}chat_completions?[A-Za-z0-9_]{0,30}|api_base|base_url|completions\.create|"
    r"your current environment|"
    # inference engines and LLM apps: a report from inside one is about using a model
    r"tensorrt[_-]?llm|lmdeploy|fastllm|text-generation-inference|llama_cpp|exllama\w*|"
    r"ctransformers|mlc[_-]llm|langchain\w*|chatchat|dify|open[_-]?webui|web[_-]?ui)" + _R
    + r"|部署|推理服务|工具调用|函数调用",
    re.IGNORECASE,
)
# Using a model (inference, an app calling it): out of scope only when nothing mentions training,
# since "微调后推理效果差" (worse after fine-tuning) is a training report.
_USING = re.compile(
    # generate_v2_distributed, generate.py: a generation recipe or script
    _L + r"(inference|infer|predict(?:ion)?s?|generate[A-Za-z0-9_]{0,30}|api|get_response|"
    r"(?:web_|cli_)?demo(?:\.py)?|streamlit)" + _R + r"|推理|调用|接口",
    re.IGNORECASE,
)
# Training finished and *using* the result fails ("微调后predict报错", "after fine-tuning, inference
# throws an error"): an error, not worse answers ("微调后推理效果差" stays a training report), and
# not loading the checkpoint, which is a checkpoint problem kb knows.
_USED_AFTER_TRAINING = re.compile(
    r"(?:微调|训练|fine-?tun[a-z]{0,6}|finetun[a-z]{0,6}|train[a-z]{0,6})(?:完|完成|好)?(?:之后|以后|后)"
    r".{0,25}?(?:推理|预测|测试|predict[a-z]{0,6}|infer[a-z]{0,6}|chat|对话|调用|部署)"
    r".{0,20}?(?:报错|出错|错误|失败|error|fail[a-z]{0,6}|exception)"
    # "chatglm3全量微调，使用api接口推理时报错": trained, then serving it through an API fails
    r"|(?:微调|训练)[，,]\s*.{0,10}?(?:api|接口|服务).{0,6}?(?:推理|预测|部署)时?.{0,6}?(?:报错|出错|失败)"
    r"|after (?:the )?(?:fine-?tuning|finetuning|training)\W.{0,60}?"
    r"(?:inference|predict[a-z]{0,6}|generat[a-z]{0,6}|chat[a-z]{0,6}|test[a-z]{0,6})"
    r".{0,40}?(?:error|fails?|crash[a-z]{0,6}|exception)",
    re.IGNORECASE | re.DOTALL,
)
# The headline's subject is a model someone trained ("ptuning后的chatglm2-6B报错", "部署通过XTuner
# 训练的Qwen报错"): with serving or app talk in the report, the trained model fails in use.
_TRAINED_MODEL = re.compile(
    r"(?:训练|微调|ptuning|p-tuning|lora|finetun[a-z]{0,4})(?:完|好)?(?:之?后)?的"
    r"|(?:fine-?tuned|trained) (?:model|checkpoint)",
    re.IGNORECASE,
)
_ERROR_WORD = re.compile(r"报错|出错|错误|失败|error|fail|exception", re.IGNORECASE)
# A headline about the model's output ("Mixtral example is giving non-sensical output"); only the
# title counts, since tracebacks are full of "outputs = model(...)".
_OUTPUT_HEADLINE = re.compile(_L + r"outputs?" + _R + r"|输出", re.IGNORECASE)
_LOADING = re.compile(r"加载|载入|load\w*|checkpoint|adapter|size mismatch", re.IGNORECASE)
# from_pretrained's progress bar: loading a model, which inference does as much as training.
_LOADING_SHARDS = re.compile(r"Loading checkpoint shards", re.IGNORECASE)
# Vision/diffusion models: LoRA and "fine-tune" are used there too, but kb knows LLM training.
_NON_LLM = re.compile(
    r"\b(resnet\d*|cifar-?\d*|mnist|imagenet|yolo\w*|stable[ -]?diffusion|sdxl|controlnet|"
    r"unet|diffusers|dreambooth|text[ -]to[ -]image)\b",
    re.IGNORECASE,
)
_LLM = re.compile(
    r"\b(llm|llama\w*|qwen\w*|mistral\w*|mixtral|gpt\w*|glm\w*|chatglm\w*|baichuan\w*|gemma\w*|"
    r"phi-?\d\w*|internlm\w*|deepseek\w*|yi-\w+|bloom\w*|opt-\w+|falcon\w*|llava\w*|"
    r"tokeni[sz]er|chat[ _]template|causal ?lm|instruct\w*|sft|dpo|grpo|ppo|rlhf)\b"
    r"|大模型|语言模型",
    re.IGNORECASE,
)
# "training is twice as slow", "训练速度问题": a question about the speed of a run that works.
_SPEED = re.compile(
    _L + r"(slow(?:er|ly|down)?|speed|throughput|faster|it/s|s/it|tokens?/s|utili[sz]ation)" + _R
    + r"|速度|很慢|太慢|变慢|慢了|耗时|提速|利用率",
    re.IGNORECASE,
)
# Anything failing outright makes it a failure report, however slow: an error, a crash, a hang,
# a bad loss or running out of memory.
_FAILING = re.compile(
    _L + r"(error|exception|traceback|assert\w*|fail\w*|crash\w*|hang\w*|stuck|nan|inf|oom|"
    r"out of memory|loss|killed|timeout|timed out)" + _R
    + r"|报错|错误|失败|异常|卡住|卡死|卡在|崩|溢出|损失|显存不足|爆显存",
    re.IGNORECASE,
)
_FEATURE_REQUEST = re.compile(
    r"(feature request|the feature, motivation|please (?:add )?support|support for (?:the )?new|"
    r"when will .{0,40} support|will you support|any plan(?:s)? to support|"
    r"是否(?:会|能)?支持|什么时候支持|能否支持|请支持|希望支持)",
    re.IGNORECASE,
)


USING_REASON = "it is about using a model (inference or an app), not a failed training run"
SPEED_REASON = "it asks about training speed or throughput, not a failed training run"
AFTER_TRAINING_REASON = (
    "it is about using the trained model (prediction, chat or a demo failing after training "
    "finished), not a failed training run"
)


@dataclass(frozen=True)
class Scope:
    training_cues: int
    serving_cues: int
    feature_request: bool
    non_llm: bool = False  # about a vision/diffusion model, with nothing about an LLM
    using_cues: int = 0  # inference / calling a model
    used_after_training: bool = False  # "微调后predict报错": the finished model fails in use
    speed_question: bool = False  # "training is slow": a run that works, asked about its speed

    @property
    def using_only(self) -> bool:
        """Out of scope as "using a model": inference or an app, and no word about training.

        "部署 swift 环境" (setting up an environment) also counts as serving talk, so only this
        rule is strong enough to overrule a matched error string (a demo crashes like a trainer).
        """
        return self.reason == USING_REASON

    @property
    def out_of_scope(self) -> bool:
        """Serving, using or feature-request talk that outweighs any training talk."""
        return bool(self.reason)

    @property
    def reason(self) -> str:
        """Why the report is out of scope, in the order the rules are tried; "" when it is not."""
        if self.feature_request and self.training_cues <= 2:
            return "it reads as a feature request, not a failed training run"
        if self.non_llm:
            return "it is about a vision or diffusion model; kb knows LLM fine-tuning failures"
        if self.serving_cues > 0 and self.serving_cues >= self.training_cues:
            return "it is about serving or deploying a model, not a failed training run"
        if self.using_cues and self.training_cues == 0:
            return USING_REASON
        if self.used_after_training:
            return AFTER_TRAINING_REASON
        if self.speed_question:
            return SPEED_REASON
        return ""


def assess(text: str) -> Scope:
    head = text[:20_000]
    title = head.strip().split("\n", 1)[0]
    training_text = _LOADING_SHARDS.sub(" ", head)
    training = len(set(m.group(0).lower() for m in _TRAINING.finditer(training_text)))
    using = len(set(m.group(0).lower() for m in _USING.finditer(head)))
    using += bool(_OUTPUT_HEADLINE.search(title))
    if _NOT_TRAINED.search(head):
        # Talking about the model before training: its training word is not training talk.
        training, using = max(training - 1, 0), using + 1
    return Scope(
        training_cues=training,
        using_cues=using,
        serving_cues=len(set(m.group(0).lower() for m in _SERVING.finditer(head))),
        feature_request=bool(_FEATURE_REQUEST.search(head)),
        non_llm=bool(_NON_LLM.search(head)) and not _LLM.search(head),
        used_after_training=_used_after_training(head) or _trained_model_served(head, title),
        speed_question=_speed_question(head, title),
    )


def _used_after_training(text: str) -> bool:
    match = _USED_AFTER_TRAINING.search(text)
    return bool(match) and not _LOADING.search(match.group(0))


def _trained_model_served(text: str, title: str) -> bool:
    return (
        bool(_TRAINED_MODEL.search(title))
        and bool(_ERROR_WORD.search(title))
        and not _LOADING.search(title)
        and bool(_SERVING.search(text))
    )


def _speed_question(text: str, title: str) -> bool:
    """Speed is the headline (the title, or twice in the report) and nothing fails outright."""
    if _FAILING.search(text):
        return False
    speed_words = {m.group(0).lower() for m in _SPEED.finditer(text)}
    return bool(_SPEED.search(title)) or len(speed_words) >= 2
