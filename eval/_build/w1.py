from mk import case
O="work.jsonl"
q="axolotl training fails"
case(O,"axolotl",1068,"https://github.com/axolotl-ai-cloud/axolotl/issues/1068","Axolotl has significantly higher train loss, longer train time compare with my training script.",
"""Axolotl has significantly higher train loss, longer train time compare with my training script.
Expected Behavior: Two training process should be almost similar.
Current behavior: I am running on a small dataset (300 rows HenryJJ/tangshi) for testing Axolotl performance compared with trl SFTTrainer. My SFTTrainer testing script is very simple and its just a refactor compared with official trl library SFTTrainer example.
I run two training process with basically same setup:
1. Axolotl: `python3 -m axolotl.cli.train llama2.yml`
2. My SFTTrainer script: `python3 trl_finetune.py --config configs/llama2_tangshi.yml` configs parameter is same with axolotl configs
The training result differs a lot. Axolotl is slower and converges to higher loss:
Axolotl result:
train loss: 2.8 eval loss 2.67""",
"loss-not-converging-triage","Same nominal config gives a higher loss in axolotl than in a plain SFTTrainer script; the setups differ in data handling (prompt format, label masking, packing), not a crash.",
"Compare the two pipelines step by step: tokenized samples and label masking (train_on_inputs), packing/sample_packing, effective batch size and LR schedule.",
["train_on_inputs","sample_packing","labels"],False,"en",True,[],q,1)
case(O,"axolotl",1571,"https://github.com/axolotl-ai-cloud/axolotl/issues/1571","Axolotl install and train is broken.",
"""Traceback (most recent call last):
  File "/usr/local/bin/accelerate", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.10/dist-packages/accelerate/commands/accelerate_cli.py", line 46, in main
    args.func(args)
  File "/usr/local/lib/python3.10/dist-packages/accelerate/commands/launch.py", line 1057, in launch_command
    simple_launcher(args)
  File "/usr/local/lib/python3.10/dist-packages/accelerate/commands/launch.py", line 673, in simple_launcher
    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)
subprocess.CalledProcessError: Command '['/usr/bin/python3', '-m', 'axolotl.cli.train', '/content/test_axolotl.yaml']' returned non-zero exit status 1.
Steps to reproduce: Try Axolotl example notebook. During training it fails with given error. It used to work last week perfectly. Tried Gemma 7b model too and it too is failing.""",
"library-version-incompatibility","The Colab example notebook installs unpinned dependencies; a new upstream release broke the previously working install.",
"Pin the dependency versions the axolotl release expects (install axolotl with its requirements / use the docker image) and read the first error above the accelerate wrapper.",
["pip install","version","requirements"],False,"en",False,["traceback","versions"],q,2)
case(O,"axolotl",1806,"https://github.com/axolotl-ai-cloud/axolotl/issues/1806","Extremely High Loss, which quickly goes to *0* by the End; Configs that Were Fine Are Broken Now",
"""Extremely High Loss, which quickly goes to *0* by the End; Configs that Were Fine Are Broken Now
I also noticed issues with training: two weeks ago, I successfully trained the model. The pipeline was fine-tuned. Yesterday, I trained the model again with all the same inputs as before, and the model stopped correctly stopping the generation.
It seems that in the new version (at least in the latest docker-container winglian/axolotl:main-latest), I was unable to stop the model generation. The last successful training I conducted was on July 22, 2024. At that time, I used special_tokens: pad_token: <|end_of_text|> And it worked. The docker images from August 5 and 6, 2024, no longer worked.""",
"framework-bug","A change in recent axolotl main images (special-token / chat-template handling) broke configs that trained correctly before.",
"Pin the last working axolotl image/commit or update to the release that fixes the regression; check special_tokens / pad_token handling.",
["axolotl","pad_token","docker image","commit"],False,"en",False,["metrics","versions"],q,3)
case(O,"axolotl",592,"https://github.com/axolotl-ai-cloud/axolotl/issues/592","axolotl hanging during training on custom dataset (ran for 30 minutes before timing out)",
""" 18%|████████▏ | 155/873 [13:00<51:01,  4.26s/it]
 18%|████████▎ | 156/873 [13:04<51:10,  4.28s/it]
 18%|████████▋ | 158/873 [13:13<50:39,  4.25s/it]
 18%|████████▊ | 159/873 [13:17<50:47,  4.27s/it]
{'loss': 1.125, 'learning_rate': 0.0001657010428736964, 'epoch': 0.55}
{'loss': 1.1684, 'learning_rate': 0.00016546929316338355, 'epoch': 0.55}
[2023-09-17 13:06:11,002] [INFO] [axolotl.utils.dataloader._len_est:264] [PID:11100] [RANK:0] packing_efficiency_estimate: 0.77 total_num_tokens per device: 26275
[2023-09-17 13:06:11,009] [INFO] [axolotl.utils.dataloader.generate_batches:181] [PID:11100] [RANK:0] generating packed batches
axolotl hanging during training on custom dataset (ran for 30 minutes before timing out)""",
"framework-bug","Multi-GPU run hangs in axolotl's sample-packing dataloader (ranks get different numbers of packed batches), a bug in axolotl's packing code.",
"Update axolotl to the commit that fixes the multipack dataloader hang, or disable sample_packing (and eval packing) as a workaround.",
["sample_packing","axolotl","update"],False,"en",False,["traceback","command"],q,4)
case(O,"axolotl",1670,"https://github.com/axolotl-ai-cloud/axolotl/issues/1670","Train FAILED. Crashed while training with SIGTERM",
"""I just tried with a bunch of versions of the docker image, with winglian/axolotl:main-20240610-py3.11-cu121-2.3.0:
`docker run --privileged --gpus '"all"' --shm-size 10g --rm -it --name axolotl --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 --mount type=bind,src=$PWD,target=/workspace/axolotl -v $HOME/.cache/huggingface:/root/.cache/huggingface winglian/axolotl:main-20240610-py3.11-cu121-2.3.0`
And then running once it downloads and loads as root to the workspace inside the docker container:
`accelerate launch -m axolotl.cli.train examples/openllama-3b/lora.yml`
I get this errors as if axototl was not installed:
[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not supported by protocol).
/root/miniconda3/envs/py3.11/bin/python: Error while finding module specification for 'axolotl.cli.train' (ModuleNotFoundError: No module named 'axolotl')""",
"environment-setup-mismatch","Bind-mounting the host directory over /workspace/axolotl inside the docker image hides the installed package, so python cannot find axolotl.",
"Run the image without mounting over /workspace/axolotl (or pip install -e . inside the container), as the project's docker instructions expect.",
["docker","mount","pip install -e","ModuleNotFoundError"],False,"en",True,[],q,5)
q="LoRA 微调 出错"
case(O,"api-for-open-llm",136,"https://github.com/xusenlinzy/api-for-open-llm/issues/136","为什么用lora微调完成后稍微和原始问题不一样就回答错误呢",
"为什么用lora微调完成后稍微和原始问题不一样就回答错误呢",
"post-training-capability-regression","The LoRA model memorised the narrow training QA pairs (over-fitting) and does not generalise to rephrased questions.",
"Use more varied/paraphrased training data, fewer epochs or lower LR, and mix in general data to avoid over-fitting.",
["过拟合","epoch","数据"],False,"zh",False,["metrics","command"],q,2)
case(O,"MiniCPM-V",346,"https://github.com/OpenBMB/MiniCPM-V/issues/346","[BUG] 微调lora 报错<title>",
"""[BUG] 微调lora 报错
> 你的代码里有modules_to_save这些lora初始化时的设定吗
有的，我对比过 是你更新的最新的代码。
我的数据集示例是这样的。我也尝试过不在图像上做红色矩形框标注，直接给坐标 ...
{"id": "2962", "image": "Inputbox2.jpg", "conversations": [{"role": "user", "content": "<image>\\n请先将注意力集中到图片中红色矩形框标记的控件，仅输出该控件的类型。..."}, {"role": "assistant", "content": "{\\"type\\": \\"Inputbox\\"}"}]}
[image]
好的 谢谢，那我用bf16再试试，其实loss 降的非常快，但是效果并没有看到。""",
"peft-empty-adapter-save","Loss falls quickly but the fine-tuned LoRA shows no effect; the maintainer suspects the trained LoRA/modules_to_save parameters are not saved or loaded correctly.",
"Verify the saved adapter contains the trained weights (compare some parameter values at save and load time), train in bf16.",
["adapter","modules_to_save","bf16","保存"],False,"zh",False,["traceback","metrics"],q,3)
case(O,"RWKV-Runner",273,"https://github.com/josStorer/RWKV-Runner/issues/273","请问lora微调时候出现train.py error是什么问题?",
"""请问lora微调时候出现train.py error是什么问题?
--load_model models/RWKV-5-1B5-one-state-slim-novel-tuned.pth --data_file ./finetune/json2binidx_tool/data/training staff_text_document --ctx_len 1024 --epoch_steps 800 --epoch_count 20 --epoch_begin 0 --epoch_save 1 --micro_bsz 1 --accumulate_grad_batches 8 --pre_ffn 0 --head_qk 0 --lr_init 5e-5 --lr_final 100 --warmup_steps 0 --beta1 0.9 --beta2 0.999 --adam_eps 1e-8 --devices 1 --precision bf16 --grad_cp 1 --lora_r 16 --lora_alpha 16 --lora_dropout 0.01
loading models/RWKV-5-1B5-one-state-slim-novel-tuned.pth
v5/train.py --vocab_size 65536 --n_layer 24 --n_embd 2048
INFO:pytorch_lightning.utilities.rank_zero:########## work in progress ##########
usage: train.py [-h] [--load_model LOAD_MODEL] [--wandb WANDB]
[--proj_dir PROJ_DIR] [--random_seed RANDOM_SEED]
[--data_file DATA_FILE] [--data_type DATA_TYPE] ...""",
"framework-bug","train.py rejects the command line the runner generates (argparse usage error), e.g. the data path with a space splits into two arguments.",
"Remove spaces from the data file path / use the runner version whose train.py accepts the generated arguments.",
["train.py","data_file","argument"],False,"zh",False,["traceback"],q,4)
case(O,"DeepKE",570,"https://github.com/zjunlp/DeepKE/issues/570","lora微调llm是报错",
"lora微调llm是报错 [screenshot] **Describe the question** A clear and concise description of what the question is.",
"dataset-format-mismatch","Maintainer: the training file is probably empty or not one JSON object per line with the instruction/output fields the script expects.",
"Check the training file: one JSON string per line with `instruction` and `output` fields as in the tutorial.",
["instruction","output","json"],False,"zh",False,["traceback"],q,6)
case(O,"MiniCPM-V",1033,"https://github.com/OpenBMB/MiniCPM-V/issues/1033","[BUG] <title>lora微调minicpmv2.6报错",
"""lora微调minicpmv2.6报错
报错信息：[image]
测试数据：[image]
bash文件：
GPUS_PER_NODE=1
MODEL="/home/model/OpenBMB/MiniCPM-V-2_6"
# or openbmb/MiniCPM-V-2, openbmb/MiniCPM-Llama3-V-2_5, openbmb/MiniCPM-V-2_6
DATA="/home/data/train/test.json"
EVAL_DATA="/home/data/train/test.json"
# if use openbmb/MiniCPM-o-2_6 or openbmb/MiniCPM-V-2_6, please set LLM_TYPE=qwen
LLM_TYPE="minicpm"
MODEL_MAX_Length=2048""",
"chat-template-mismatch","LLM_TYPE is set to minicpm while MiniCPM-V-2_6 needs LLM_TYPE=qwen, so conversations are built with the wrong template/special tokens.",
"Set LLM_TYPE=qwen for MiniCPM-V-2_6 as the script comment says.",
["LLM_TYPE","qwen"],False,"zh",False,["traceback"],q,10)
case(O,"ChatGLM-LoRA-Tuning",3,"https://github.com/taishan1994/ChatGLM-LoRA-Tuning/issues/3","博主，出现出现这样的错误是什么原因， 使用官方的p_tuning是没问题的，换成lora就有",
"博主，出现出现这样的错误是什么原因， 使用官方的p_tuning是没问题的，换成lora就有 [screenshot]\n未使用deepspeed，使用的是自己定制的数据集。\n我试了一下，还是不行。不清楚原因到底是什么。没遇到过。",
"library-version-incompatibility","Unresolved; LoRA path fails where p-tuning works, most likely a peft/transformers version that does not match the tuning script.",
"Install the peft/transformers versions the repository pins.",
["peft","transformers","version"],False,"zh",False,["traceback","versions"],q,11)
q="ORPO trainer problem"
case(O,"unsloth",1156,"https://github.com/unslothai/unsloth/issues/1156","Orpo-Trainer is not compatible with new gradient-acum changes",
"Orpo-Trainer is not compatible with new gradient-acum changes",
"framework-bug","Unsloth's gradient-accumulation fix patched the trainers in a way that broke ORPOTrainer.",
"Update Unsloth: `pip install --upgrade --no-cache-dir unsloth` (fixed by the maintainer).",
["pip install --upgrade","unsloth"],True,"en",False,["traceback","versions"],q,2)
case(O,"orpo",28,"https://github.com/xfactlab/orpo/issues/28","Unexpected results using ORPO trl",
"""Unexpected results using ORPO trl
pip install -U trl and no updates in my case
okay, Changed to mistralai/Mistral-7B-Instruct-v0.2
Was already 5e-6
okay, Increased to 0.4
Unfortunately, even with all those changes, the result still the same :(""",
"dataset-format-mismatch","The maintainers found the dataset was not in the (prompt, chosen, rejected) format TRL's ORPOTrainer expects.",
"Format the data as prompt/chosen/rejected columns (with the chat template applied) and use the latest trl dev version.",
["prompt","chosen","rejected","chat template"],False,"en",False,["metrics","command"],q,3)
case(O,"LlamaFactory",4298,"https://github.com/hiyouga/LlamaFactory/issues/4298","最新版本，不支持 orpo ，会报错",
"最新版本，不支持 orpo ，会报错\nSystem Info: 会报错提示不支持 orpo\nReproduction: --stage orpo\nExpected behavior: 正常运行 orpo训练",
"library-version-incompatibility","In the new LLaMA-Factory version the orpo stage was folded into the dpo stage, so `--stage orpo` is no longer a valid argument.",
"Use `stage: dpo` with `pref_loss: orpo`.",
["stage: dpo","pref_loss: orpo"],True,"zh",False,["traceback"],q,4)
case(O,"Search-R1",89,"https://github.com/PeterGriffinJin/Search-R1/issues/89","GRPO Train Error",
"I encountered a critical issue while training the GRPO model using the original script without any modifications. The training proceeded normally up to around step 600, after which it suddenly collapsed. [image] [image] [image]",
"rl-reward-stagnation-or-collapse","GRPO training collapses after ~600 steps (known instability of the setup, discussed in issue #88).",
"See the maintainers' discussion in #88: stabilise RL (lower LR, KL loss, smaller off-policy drift) or stop at the best checkpoint before collapse.",
["collapse","KL","learning rate"],False,"en",False,["metrics"],q,8)
case(O,"trl",2791,"https://github.com/huggingface/trl/issues/2791","GRPOTrainer in the current main branch doesn't work (v0.14.0 works)",
"GRPOTrainer in the current main branch doesn't work (v0.14.0 works)\nBelow are the complete steps enabling the bugs I observe on my end. The python script I used (which basically is a converted version from the Colab). The my_utils.grpo_trainer_github_main and my_utils.grpo_config_github_main are the same as the current GRPOTrainer and GRPOConfig in the GitHub main branch.",
"framework-bug","A regression in TRL main's GRPOTrainer after v0.14.0.",
"Stay on trl==0.14.0 until the fixing commit/release is out, then upgrade.",
["trl==0.14.0","main"],False,"en",False,["traceback","metrics"],q,10)
q="llama3 finetune crash"
case(O,"LLMFarm",62,"https://github.com/guinmoon/LLMFarm/issues/62","App crashes when running fine tune on Llama-3",
"App crashes when I run fine tune on Llama-3 model but works perfectly when I try on tinyllama:\nThread 16: EXC_BAD_ACCESS (code=2, address=0x16b5a7c40)\ninfo of my machine: mac: mac mini m1 2020 ram: 8GB os: ventura 13.6 Xcode: Xcode 15.1",
"oom","Llama-3 8B is too big to fine-tune in 8 GB of unified memory; the app runs out of memory.",
"Fine-tune a smaller model (e.g. openllama 3b) or use a machine with more memory.",
["memory","smaller model"],False,"en",True,[],q,1)
case(O,"sonar",1277,"https://github.com/dphnAI/sonar/issues/1277","[Bug]: Random crashes running Llama 3.3 70B with lora",
"[Bug]: Random crashes running Llama 3.3 70B with lora\n### Your current environment",
"out-of-scope","Serving a LoRA with an inference engine crashes; not a training run.","Not a training failure.",[],False,"en",False,["traceback"],q,2)
case(O,"vllm",10648,"https://github.com/vllm-project/vllm/issues/10648","[Bug]: Llama 3.2 90b crash",
"[Bug]: Llama 3.2 90b crash\n### Your current environment\nThe output of `python collect_env.py`",
"out-of-scope","vLLM inference crash with Llama 3.2 90B; not a training run.","Not a training failure.",[],False,"en",False,["traceback"],q,4)
case(O,"LlamaFactory",7501,"https://github.com/hiyouga/LlamaFactory/issues/7501","Bug Report: Failure When Fine-Tuning Pixtral 12B Model",
"Bug Report: Failure When Fine-Tuning Pixtral 12B Model\n2. The process starts but crashes with the following error:",
"library-version-incompatibility","Unresolved; Pixtral support in LLaMA-Factory depends on specific transformers versions.",
"Use the transformers version LLaMA-Factory lists for Pixtral (upgrade both).",
["transformers","version","pixtral"],False,"en",False,["traceback","versions"],q,6)
case(O,"llama.cpp",3578,"https://github.com/ggml-org/llama.cpp/issues/3578","Finetune crash with Mistral Model",
"Ran with the following parameters with a fresh llama.cpp build, built with w64devkit (windows, 32gb ram, 6600M). Maybe I'm silly and am doing something wrong?\n./finetune --model-base SynthIA-7B-v1.3-Q8_0.gguf --checkpoint-out chk-lora-SynthIA-7B-v1.3-Q8_0-prose-ITERATION.gguf --lora-out lora-SynthIA-7B-v1.3-Q8_0-prose-ITERATION.bin --train-data \"prose.txt\" --save-every 10 --threads 6 --adam-iter 30 --batch 4 --ctx 256",
"framework-bug","llama.cpp's finetune example crashed on this model/build (bug in the tool, unresolved in the thread).",
"Update llama.cpp to a build with the finetune fixes; report the crash output.",
["llama.cpp","finetune","update"],False,"en",False,["traceback","versions"],q,9)
case(O,"llama.cpp",22483,"https://github.com/ggml-org/llama.cpp/issues/22483","Eval bug: Gemma 4 31B finetunes crash",
"Eval bug: Gemma 4 31B finetunes crash\nContinue to have crash after crash when using sm tensor and parallel 2.\nI've tried full reinstalls. I've tried using different CUDA versions. I've tried using different NCCL versions.\nRelevant log output\nslot get_availabl: id  1 | task -1 | selected slot by LCP similarity, sim_best = 1.000 (> 0.100 thold), f_keep = 0.891",
"out-of-scope","llama-server inference crash when serving a fine-tuned model; not a training run.","Not a training failure.",[],False,"en",False,["traceback"],q,10)
case(O,"llama.cpp",7583,"https://github.com/ggml-org/llama.cpp/issues/7583","Bug: Finetune must be cashful collapse bug",
"""Bug: Finetune must be cashful collapse bug
llama_new_context_with_model: n_batch    = 512
llama_new_context_with_model: flash_attn = 0
llama_new_context_with_model: freq_base  = 500000.0
llama_kv_cache_init:        CPU KV buffer size =    64.00 MiB
main: init model
print_params: n_vocab               : 128256
print_params: n_ctx                 : 64
print_params: n_embd                : 4096
print_params: n_layer               : 32
print_lora_params: n_rank_wq             : 4""",
"framework-bug","llama.cpp's finetune example crashes on a Llama-3 model (tool does not support it).",
"Use a different fine-tuning stack (PEFT/unsloth) or a llama.cpp version whose finetune supports the architecture.",
["llama.cpp","finetune"],False,"en",False,["traceback"],q,12)
