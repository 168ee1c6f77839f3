"""What the user says about generation after training: that the pad token was set to the EOS
token and the fine-tuned model never stops.

Together the two are the classic sign of a collator that masks every pad position in the labels:
with pad == eos, the EOS at the end of each example is masked too, so the model never learns to
end an answer. Either alone says little (pad = eos is a common, harmless default for inference;
endless output has other causes), so only both point to that case.
"""

from __future__ import annotations

import re

# tokenizer.pad_token = tokenizer.eos_token, pad_token=tok.eos_token, pad_token_id = eos_token_id,
# "set the pad token to the eos token", "pad_token 设为 eos_token", "pad 和 eos 是同一个 token".
_PAD_IS_EOS = re.compile(
    r"pad_token(?:_id)?\s*=\s*[\w.\[\]'\"]*eos_token(?:_id)?"
    r"|pad[ _]token\s+(?:is|as|to|=|was|were)\s+(?:set\s+to\s+|the\s+)*(?:the\s+)?eos"
    r"|set\s+(?:the\s+)?pad[ _]?token\s+(?:to|as)\s+(?:the\s+)?eos"
    r"|pad(?:_token)?\s*(?:设为|设置为|设成|用|=|等于|和|与)\s*(?:了\s*)?eos",
    re.IGNORECASE,
)
# "never stops", "keeps generating", "never producing the EOS", "only stopping at the max
# sequence length", "生成停不下来", "一直生成", "不会停止".
_NEVER_STOPS = re.compile(
    r"(?:never|doesn'?t|does\s+not|won'?t|will\s+not|can'?t|cannot|not)\s+(?:\w+\s+){0,2}"
    # "does not stop" about the output, not "the loss does not stop decreasing".
    r"(?:stop\w*(?!\s+(?:decreas|increas|improv|chang|drop|fall|ris|train|learn))"
    r"|end(?:s|ing)?\b|produc\w*\s+(?:an?\s+|the\s+)?eos|generat\w*\s+(?:an?\s+|the\s+)?eos"
    r"|emit\w*\s+(?:an?\s+|the\s+)?eos)"
    r"|(?:keeps?|kept|continuously|endlessly)\s+(?:on\s+)?generat\w*"
    # The generation limit ("max length", "max_new_tokens"), not "max_steps" of training.
    r"|(?:only\s+)?stop\w*\s+at\s+(?:the\s+)?max(?:imum)?[\s_]*(?:new[\s_]*tokens|length|len\b|seq)"
    r"|until\s+(?:it\s+(?:hits|reaches)\s+)?(?:the\s+)?max(?:imum)?[\s_]*"
    r"(?:new[\s_]*tokens|length|len\b|seq|tokens)"
    r"|停不下来|不会停|不停止|无法停止|停止不了|一直生成|不断生成|生成到最大长度|不输出\s*eos|不生成\s*eos",
    re.IGNORECASE,
)


def pad_as_eos_never_stops(text: str) -> bool:
    """True when the report sets pad to eos and says the trained model does not stop.

    'tokenizer.pad_token = tokenizer.eos_token ... it keeps generating until max_new_tokens' -> True
    'tokenizer.pad_token = tokenizer.eos_token; loss is nan' -> False
    """
    return bool(_PAD_IS_EOS.search(text) and _NEVER_STOPS.search(text))
