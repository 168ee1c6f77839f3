"""Is the report about training at all? Scope cues in English and Chinese."""

import pytest

from kb.scope import assess


@pytest.mark.parametrize(
    "text",
    [
        "How do I deploy my model with vllm serve and enable tool calling?",
        "我的应用调用 glm-4 接口时报参数错误",  # an app calling a model API
        "批量推理的时候结果少了几条，是什么原因",  # inference drops rows
        "模型还没有开始微调，直接对话就胡言乱语",  # the base model, before any training
        "After merging my LoRA I converted it with chatglm.cpp to ggml and the effect is gone",
        "Qwen3 LoRA adapter gives errors when loaded in sglang",
        "python -m vllm.entrypoints.openai.api_server --model m --enable-lora --lora-modules a=/x",
        "InternLM 微调后 predict 报错",  # the finished model fails in use, training went fine
        "Qwen2 lora训练完之后对话就报错 RuntimeError",
        "After fine-tuning Llama-2 with LoRA, running inference throws an IndexError",
        "my bot plugin calls provider.googlegenai_chat_completion with api_base set and gets 400",
        "Error when running generate_v2_distributed with Mixtral 8x22b",  # a generation recipe
        "LoRA SFT on Mistral-7B is 3x slower than full fine-tuning, is that expected?",
        "ORPO 训练速度太慢了，8 张卡一个 epoch 要两天，GPU 利用率只有 30%",  # speed, nothing fails
        # an inference engine or an LLM app, named in a path or the prose
        'File "/app/tensorrt_llm/examples/run.py", line 632\nRuntimeError: CUDA out of memory',
        "使用 langchain-ChatGLM 加载 baichuan 时 loader 出错 UnboundLocalError",
        "When I pick Gemma 2 in the web-ui it returns SyntaxError",
        # a model someone trained, failing when served
        "部署通过XTuner训练的Qwen-1.8B-Chat报错",
        "[BUG] ptuning后的chatglm2-6B报错\n本地部署，python startup.py 运行过程中报错",
        "chatglm3全量微调，使用api接口推理时报错",
        "Mixtral example is giving non-sensical output",  # the output of a model, nothing trained
        # from_pretrained's progress bar is loading, not training talk
        "web_demo.py 推理\nLoading checkpoint shards: 100%|###| 4/4\nValueError: bad tokenizer",
    ],
)
def test_using_or_serving_a_model_is_out_of_scope(text):
    scope = assess(text)
    assert scope.out_of_scope, scope
    assert scope.reason


@pytest.mark.parametrize(
    "text",
    [
        "Llama3-8b 全量参数 DPO失败",  # "DPO" right next to Chinese text still counts
        "Lora微调后推理效果变差",  # inference after training is a training report
        "InternLM 微调后 predict 时加载 checkpoint 报错 size mismatch",  # a checkpoint case
        "after fine-tuning the answers are worse than the base model",
        "DPOTrainer crashes with Qwen2-VL processor",
        "facing error fine tuning llama2 using provided example",
        "loss is 0 with qwen2.5-7b",
        "training slows down after 100 steps and then hangs, NCCL timeout",  # slow, then a hang
        "训练速度很慢，而且跑了一会儿就报错 CUDA error",  # slow and an error: a failure report
        "多卡训练速度很慢，最后卡在 step 100 不动了",  # slow, then stuck: a hang
        # a training script or metric inside an identifier is training talk
        "HTTPError when running train_ppo_llama_ray.sh",
        "run_sft.sh 的 eval_loss 一直不降",
        "lora_deepspeed 报错 ValueError: DistributedDataParallel device_ids ... 期待回复",
        # trained and then chatting fails, but the headline is about the trained config: no API
        "微调Internlm2成功，但推理时就报错 ValueError: Target modules not found",
        "Qwen2 SFT outputs only empty strings after training",  # output after training: in scope
    ],
)
def test_training_reports_stay_in_scope(text):
    scope = assess(text)
    assert not scope.out_of_scope, scope
    assert scope.training_cues >= 1


@pytest.mark.parametrize(
    "text",
    [
        "streamlit run web_demo.py 报错 ValueError: Tokenizer class X does not exist",
        "python cli_demo.py\nRuntimeError: CUDA error: device-side assert triggered",
    ],
)
def test_a_demo_script_is_using_a_model(text):
    scope = assess(text)
    assert scope.using_only and scope.training_cues == 0


def test_setting_up_an_environment_is_not_using_a_model():
    # "部署" reads as serving talk; that rule must not overrule a matched error string.
    assert not assess("离线环境部署swift后报错 swift: command not found").using_only


def test_a_demo_crash_abstains_even_when_its_error_string_is_a_known_training_case(real_assistant):
    error = (
        "../aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [52,0,0] "
        "Assertion `srcIndex < srcSelectDimSize` failed.\n"
        "RuntimeError: CUDA error: device-side assert triggered"
    )
    demo = real_assistant.prepare("python web_demo.py 推理的时候报错\n" + error)
    assert demo.abstained and demo.hits and demo.hits[0].signatures
    training = real_assistant.prepare("LoRA 微调训练时报错\n" + error)
    assert not training.abstained


def test_a_long_chinese_paste_is_read_in_linear_time():
    # A leading \w* rescanned every position of a CJK run (word characters to re): these took
    # 2-60 s before; now milliseconds. The bound is wide on purpose: it catches the blow-up only.
    import time

    for text in (
        "微调后" * 7000,
        "微调后predict" * 2000,
        "train" * 4000 + "predict",
        "训练" * 10_000,
    ):
        start = time.perf_counter()
        assess(text)
        assert time.perf_counter() - start < 1.5


def test_a_bare_traceback_with_model_outputs_is_not_read_as_using_a_model():
    # A traceback pasted alone names no training word; "outputs = model(...)" is code, not a
    # headline about a model's output, so a matched error string still decides.
    text = (
        'File "modeling_llama.py", line 1183, in forward\n    outputs = self.model(input_ids)\n'
        "RuntimeError: CUDA error: device-side assert triggered"
    )
    assert not assess(text).using_only
