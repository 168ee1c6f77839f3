"""Vision-language cases and text-only reports: an image case cannot explain a run without images.

A LLaVA learning-rate case or a Qwen-VL image-tag assert shares words with every "loss jumps" or
"finetune.py error" report; when the report says nothing about images, vision or a VLM, such a
case is contradicted the way a grad_norm-nan case is by a run whose grad_norm is exactly 0.
"""

from __future__ import annotations

import re

from kb.articles import Article
from kb.text import ASCII_LEFT, ASCII_RIGHT

# Model families and words that only vision-language models have.
_VISION_FAMILY = re.compile(
    r"llava|-vl\b|vl$|qwen-?vl|qwen2(?:\.5)?-?vl|qwen3-?vl|internvl|minicpm-[vo]|glm-?4v|cogvlm|"
    r"cogagent|idefics|paligemma|pixtral|molmo|florence|blip|videollama|mllama|vision|deepseek-vl|"
    r"yi-vl|mplug|ovis|vila|smolvlm|multimodal",
    re.IGNORECASE,
)
_VISION_ID = re.compile(r"(?:vlm|llava)-")
_SIZE = re.compile(r"^\d+(?:\.\d+)?b\+?$|^\d+b-\d+b$", re.IGNORECASE)
# Word edges that hold next to Chinese text; bounded repeats, no leading \w* (see kb/scope.py).
_L, _R = ASCII_LEFT, ASCII_RIGHT
_VISION_TALK = re.compile(
    _L + r"(images?|image_\w{1,20}|vision(?:_\w{1,20})?|visual(?:_\w{1,20})?|multi-?modal|"
    r"vlms?|mllms?|"
    r"[A-Za-z0-9.]{1,20}-vl|vl-[A-Za-z0-9.]{1,20}|llava\w{0,20}|internvl\w{0,10}|minicpm-[vo]\w{0,10}|"
    r"cogvlm\w{0,5}|glm-?4v\w{0,5}|qwen-?vl\w{0,10}|qwen2(?:\.5)?-?vl\w{0,10}|pixel\w{0,10}|"
    r"videos?|vit|clip|siglip|mm_\w{1,20}|<image>|<\|image_pad\|>)"
    + _R
    + r"|图片|图像|视觉|多模态|视频|图文",
    re.IGNORECASE,
)


def is_vision_only(article: Article) -> bool:
    """The case is about a vision-language model: named so (vlm-*, llava-*), or every model it
    lists is a VLM family. "any" next to a VLM family is a general case also seen on a VLM."""
    if _VISION_ID.match(article.id):
        return True
    models = [m for m in article.models if not _SIZE.match(m)]
    return bool(models) and all(_VISION_FAMILY.search(m) for m in models)


def mentions_vision(text: str) -> bool:
    return bool(_VISION_TALK.search(text[:200_000]))
