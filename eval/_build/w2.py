from mk import case
O="work.jsonl"
q="LLaMA-Factory sft error"
case(O,"LlamaFactory",5243,"https://github.com/hiyouga/LlamaFactory/issues/5243","使用SFT微调时“训练出错”",
"""LLaMA Factory   0.8.4
python 3.9
报错代码如下：
Traceback (most recent call last):
  File "/home/gpuall/yangfan/LLA/LLaMA-Factory/src/llamafactory/launcher.py", line 15, in <module>
    from llamafactory.train.tuner import run_exp
ModuleNotFoundError: No module named 'llamafactory'
E0822 16:10:35.525161 139625595627328 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 0 (pid: 1754335) of binary: /app/anaconda3/bin/python
Traceback (most recent call last):
  File "/home/gpuall/.local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/home/gpuall/.local/lib/python3.8/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 348, in wrapper""",
"environment-setup-mismatch","torchrun from ~/.local (python3.8) launches an interpreter in which llamafactory is not installed; the package was installed into a different Python environment.",
"Install LLaMA-Factory into the environment that runs training (`pip install -e .` inside the activated env) and launch with that env's torchrun/llamafactory-cli.",
["pip install -e .","environment","ModuleNotFoundError"],False,"zh",True,[],q,1)
case(O,"LlamaFactory",6589,"https://github.com/hiyouga/LlamaFactory/issues/6589","stage: sft报错ValueError: Unknown task: sft",
"""- `llamafactory` version: 0.9.1.dev0
- Platform: Windows-10-10.0.22621-SP0
- Python version: 3.8.12
- PyTorch version: 2.0.1+cu118 (GPU)
- Transformers version: 4.41.2
错误信息：
(llf) D:\\code\\chenyaqi\\LLaMA-Factory-main>llamafactory-cli train examples/train_lora/chatglm3_lora_sft_10.yaml
01/10/2025 10:10:04 - INFO - llamafactory.hparams.parser - Process rank: 0, device: cuda:0, n_gpu: 1, distributed training: False, compute dtype: torch.bfloat16
Traceback (most recent call last):
  File "D:\\code\\chenyaqi\\LLaMA-Factory\\src\\llamafactory\\cli.py", line 111, in main
    run_exp()
  File "D:\\code\\chenyaqi\\LLaMA-Factory\\src\\llamafactory\\train\\tuner.py", line 60, in run_exp
    raise ValueError("Unknown task: {}.".format(...))
ValueError: Unknown task: sft""",
"environment-setup-mismatch","llamafactory-cli runs code from another (older) LLaMA-Factory checkout (D:\\code\\...\\LLaMA-Factory) than the one the config comes from, on Windows.",
"Reinstall from the checkout you use (`pip install -e .` in LLaMA-Factory-main) so the CLI and the examples match.",
["pip install -e .","llamafactory-cli"],False,"zh",True,[],q,2)
case(O,"MiniCPM-V",862,"https://github.com/OpenBMB/MiniCPM-V/issues/862","[BUG] <title>llama factory sft训练报错",
"[BUG] llama factory sft训练报错\nsame issue\nsame issue",
"library-version-incompatibility","The installed transformers version does not match what MiniCPM-V's remote code and LLaMA-Factory need.",
"`pip install transformers==4.48.3` (reported fix, Python 3.10).",
["transformers==4.48.3"],True,"zh",False,["traceback","versions"],q,3)
case(O,"LlamaFactory",9094,"https://github.com/hiyouga/LlamaFactory/issues/9094","llama-factory sft InternVL3_5-8B出错",
"""用llamafactory微调InternVL3_5-8B模型，会报错
[rank0]: Traceback (most recent call last):
[rank0]:   File "/public/home/joker/llama-factory/LLaMA-Factory/src/llamafactory/launcher.py", line 23, in <module>
[rank0]:     launch()
[rank0]:   File ".../llamafactory/train/tuner.py", line 110, in run_exp
[rank0]:     _training_function(config={"args": args, "callbacks": callbacks})
[rank0]:   File ".../llamafactory/train/sft/workflow.py", line 51, in run_sft
[rank0]:     dataset_module = get_dataset(template, model_args, data_args, training_args, stage="sft", **tokenizer_module)
[rank0]:   File ".../llamafactory/data/loader.py", line 315, in get_dataset
[rank0]:     dataset = _get_preprocessed_dataset(""",
"library-version-incompatibility","Issue closed as invalid: LLaMA-Factory needs the transformers-format InternVL checkpoint (the -HF release) and a transformers version that supports it; the original remote-code checkpoint fails in preprocessing.",
"Use the OpenGVLab/InternVL3_5-8B-HF checkpoint with a transformers version that supports InternVL.",
["-HF","transformers","InternVL"],False,"zh",False,["traceback","versions"],q,4)
q="trl dpo issue"
case(O,"trl",2660,"https://github.com/huggingface/trl/issues/2660","Issues with DPOTrainer and Qwen2-VL processor",
"Issues with DPOTrainer and Qwen2-VL processor",
"framework-bug","TRL's DPOTrainer did not handle the Qwen2-VL processor (vision inputs) correctly.",
"Fixed in TRL by PR #3906; upgrade TRL (or use LLaMA-Factory / ms-swift for VLM DPO).",
["trl","upgrade","#3906"],True,"en",False,["traceback","versions"],q,2)
case(O,"Insight-V",6,"https://github.com/dongyh20/Insight-V/issues/6","About trl version",
"""Hi, could you tell me the version of trl you used? since i found it not mentioned in requirements.txt.
And i met with the following errors:
DPOTrainer.__init__() got an unexpected keyword argument 'gamma'
DPOTrainer.__init__() got an unexpected keyword argument 'dpo_alpha'
since DPOTrainer is imported from trl, i guess it is the trl version mismatch""",
"library-version-incompatibility","The repo uses the modified trl package shipped by LLaVA-NeXT, whose DPOTrainer accepts gamma/dpo_alpha; upstream trl does not.",
"Install the trl copy from the LLaVA-NeXT repository instead of the PyPI trl.",
["trl","LLaVA-NeXT","version"],True,"en",True,[],q,3)
case(O,"trl",1440,"https://github.com/huggingface/trl/issues/1440","update in DPO raise several problems...",
"""update in DPO raise several problems...
1. get_hh was removed. There is no dataset now.
2. from trl.commands.cli_utils import DpoScriptArguments, init_zero_verbose, TrlParser: No module named 'trl.commands'""",
"library-version-incompatibility","The example script on main needs TRL installed from source; later releases moved the helpers (trl.commands -> trl.scripts.utils).",
"Install TRL from source matching the example, or use `from trl.scripts.utils import TrlParser` in newer versions.",
["trl.scripts.utils","TrlParser","install from source"],True,"en",True,[],q,5)
case(O,"FollowComplexInstruction",2,"https://github.com/meowpass/FollowComplexInstruction/issues/2","[Bug Report] There is a bug in the DPO training process.",
"""I encountered an issue with line 118 in the dpo_train.py file: len_chosen = batch["chosen_labels"].shape[0]. It appears the batch does not contain the key "chosen_labels".
Could you please offer some guidance on how to resolve this?""",
"library-version-incompatibility","Newer TRL no longer adds `chosen_labels` in tokenize_row; the script was written for TRL 0.7.11.",
"Downgrade TRL to 0.7.11 (create the environment from requirements.txt).",
["trl==0.7.11","downgrade","requirements.txt"],True,"en",True,[],q,7)
q="OpenRLHF ppo error"
case(O,"OpenRLHF",416,"https://github.com/OpenRLHF/OpenRLHF/issues/416","ppo错误",
"[image]\n这个问题还是存在，我都无语了，用你说的那个镜像也不行，模型是qwen 1.5 14b 模型",
"framework-bug","Unresolved PPO error with Qwen1.5-14B in OpenRLHF that persists in the recommended docker image.",
"Update OpenRLHF to the latest release; post the full traceback.",
["OpenRLHF","update"],False,"zh",False,["traceback","versions","command"],q,1)
case(O,"safe-rlhf",141,"https://github.com/PKU-Alignment/safe-rlhf/issues/141","ppo训练 模型出错[BUG]",
"""What version of safe-rlhf are you using? 0.0.1dev0
Problem description: 跑ppo训练的时候出现的bug
Steps to reproduce:
bash scripts/ppo.sh \\
    --actor_model_name_or_path /models/llama2-hf/llama2-7b-hf \\
    --reward_model_name_or_path /models/llama2-7b/output/rm \\
    --output_dir /models/llama2-7b/output/ppo
### Traceback""",
"framework-bug","Unresolved from the excerpt; the traceback section is empty.",
"Post the traceback; update safe-rlhf.",
["safe-rlhf"],False,"zh",False,["traceback","versions"],q,3)
case(O,"trlx",297,"https://github.com/CarperAI/trlx/issues/297","(perhaps) data preparation bug in RLHF",
"""The error occurs half-way in the PPO training process, hope these logs are useful in locating the issue:
[losses/total_loss: 0.53 | losses/policy_loss: -0.15 | losses/value_loss: 3.41]:  54%|████▉ | 3456/6400 [14:30:53<3:14:06,  3.96s/it][RANK 0] Collecting rollouts
[rollout 80 / 128]:  62%|█████▌ | 80/128 [03:10<01:52,  2.34s/it]
Traceback (most recent call last):
  File "/home/usr1/trlx/examples/summarize_rlhf/trlx_gptj_text_summarization.py", line 88, in reward_fn
    original_samples = [text + post_summary_dict[text.strip()] for text in original_samples]
  File "/home/usr1/trlx/examples/summarize_rlhf/trlx_gptj_text_summarization.py", line 88, in <listcomp>""",
"framework-bug","The example's reward_fn looks prompts up by decoded text; some decoded prompts differ from the original keys, so the lookup fails mid-training (bug in the trlx example).",
"Update to the fixed example (map prompts by id / normalise decoded text) from the trlx repository.",
["reward_fn","post_summary_dict","trlx"],False,"en",False,["traceback"],q,4)
case(O,"OpenRLHF",314,"https://github.com/OpenRLHF/OpenRLHF/issues/314","run train_ppo_llama_ray.sh error",
"""ray job submit --address="http://127.0.0.1:8265" \\
    --runtime-env-json='{"working_dir": "/workspace/OpenRLHF", "pip": "/workspace/OpenRLHF/requirements.txt"}' \\
    -- python3 /workspace/OpenRLHF/examples/train_ppo_ray.py \\
    --ref_num_nodes 1 --ref_num_gpus_per_node 1 --reward_num_nodes 1 --reward_num_gpus_per_node 1 \\
    --critic_num_nodes 1 --critic_num_gpus_per_node 2 --actor_num_nodes 1 --actor_num_gpus_per_node 4 \\
    --pretrain /workspace/model_ckpts1/Llama-2-7b-hf \\
    --reward_pretrain /workspace/model_ckpts1/Llama-2-7b-hf \\
    --micro_train_batch_size 8 --train_batch_size 128 --micro_rollout_batch_size 16 --rollout_batch_size 1024 \\
    --zero_stage 2 --bf16 --actor_learning_rate 5e-7 --critic_learning_rate 9e-6 --init_kl_coef 0.01 \\
    --prompt_data /workspace/data/OpenOrca,/workspace/data/tasksource/oasst1_pairwise_rlhf_reward \\
    --normalize_reward --actor_init_on_gpu --adam_offload --flash_attn --gradient_checkpointing
[image]""",
"library-version-incompatibility","Unresolved from the excerpt; the Ray job installs requirements into its runtime env and the error is only in a screenshot.",
"Post the text of the error; use the OpenRLHF docker image / pinned requirements.",
["requirements","docker","version"],False,"en",False,["traceback","versions"],q,5)
q="ms-swift 训练报错"
case(O,"ms-swift",4337,"https://github.com/modelscope/ms-swift/issues/4337","SwiftSft(args)报错",
"[image] [image]\n上述报错是为啥？model已经下载好了",
"library-version-incompatibility","The installed transformers version does not work with this ms-swift version/model.",
"Try transformers==4.51.3 (maintainer).",
["transformers==4.51.3"],False,"zh",False,["traceback","versions"],q,1)
case(O,"ms-swift",3771,"https://github.com/modelscope/ms-swift/issues/3771","GRPO训练中间一部分后报错",
"""训练到一部分会报错断掉
命令行：
CUDA_VISIBLE_DEVICES=4,5,6,7 NPROC_PER_NODE=4 swift rlhf --rlhf_type grpo --model /nfs/largemodel/model/Qwen2.5-7B-Instruct --train_type lora \\
--dataset '.../DISC-Law-SFT-Pair-QA-released_alpaca.json' '.../DISC-Law-SFT-Triplet-QA-released_alpaca.json' \\
--torch_dtype bfloat16 --num_train_epochs 1 --max_length 2048 --per_device_train_batch_size 1 --gradient_accumulation_steps 1 \\
--learning_rate 1e-6 --max_completion_length 1024 --reward_funcs format repetition --num_generations 4 \\
--use_vllm true --vllm_gpu_memory_utilization 0.5 --vllm_max_model_len 2048 --deepspeed zero3 \\
--temperature 1.0 --top_p 1.0 --top_k 80 --log_completions true --num_infer_workers 4 --tensor_parallel_size 4 --async_generate false""",
"distributed-config-mismatch","Unresolved from the excerpt; GRPO with colocated vLLM (tensor_parallel_size 4, num_infer_workers 4) and ZeRO-3 crashes part-way.",
"Post the traceback; check the vLLM/ZeRO-3 settings against the ms-swift GRPO docs and versions.",
["tensor_parallel_size","vllm","zero3"],False,"zh",False,["traceback","versions"],q,2)
case(O,"ms-swift",2083,"https://github.com/modelscope/ms-swift/issues/2083","swift升级到2.4.0及以上版本后加载训练数据集报错",
"swift从2.3.x升级到2.4.x以后，加载训练数据集时报如下错误（2.4.x以下版本不会）：[image]\n训练的模型是qwen2和qwen2.5",
"framework-bug","A regression in ms-swift 2.4.x dataset loading.",
"Fixed by the maintainers; upgrade ms-swift to the fixed version.",
["ms-swift","upgrade"],True,"zh",False,["traceback"],q,3)
case(O,"ms-swift",2688,"https://github.com/modelscope/ms-swift/issues/2688","训练集中包含特殊字符<unk>时有报错",
"""我用ms-swift进行模型的sft微调训练时，使用自制数据集时发现有报错，运行如下代码时报错：
`CUDA_VISIBLE_DEVICES=0,1 NPROC_PER_NODE=2 swift sft --model_type telechat2-115b --model_id_or_path /data/TeleChat2-7B --dataset /data/dataset_0.jsonl#3000 --max_length 4096 --learning_rate 1e-4 --output_dir output --num_train_epochs 10 --save_steps 20 --lora_target_modules ALL --save_total_limit 15 `
报错截图如下：[image]""",
"dataset-format-mismatch","Training text containing the literal special token string <unk> is tokenized as a special token and breaks encoding.",
"Remove or escape special-token strings such as <unk> in the dataset.",
["<unk>","special token","数据"],False,"zh",False,["traceback"],q,4)
