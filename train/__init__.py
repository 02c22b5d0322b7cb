"""kit's shared training module: BERT text classification with Hugging Face Accelerate.

The same code runs on every rank; the distribution strategy (DDP, DeepSpeed ZeRO, FSDP) comes only from the
Accelerate config that `kit` generates.  Run ``python -m train --help`` for the arguments.

Contract with the launcher
--------------------------
* World check: at start every rank compares the world it joined with the plan passed in
  ``KIT_EXPECTED_WORLD_SIZE``, ``KIT_EXPECTED_NUM_MACHINES``, ``KIT_EXPECTED_STRATEGY`` (ddp|deepspeed|fsdp),
  ``KIT_EXPECTED_MIXED_PRECISION`` (no|fp16|bf16) and ``KIT_EXPECTED_DEVICE`` (cpu|cuda).  A mismatch exits with
  code 3 (``EXIT_WORLD_CHECK``) and a message starting ``world check failed:``.
* Data check: after loading, every rank hashes its split, tokenizer vocabulary and token ids and all-gathers them;
  if any rank differs (a node whose cache holds another tokenizer), every rank exits 3 and the main process prints
  one line, ``world check failed: the data pipeline differs between nodes: ...``, naming the nodes and what differs.
  The tokenizer itself is built deterministically (``train/wordpiece.py``): the same data gives the same files on
  every node.
* Preemption: on SIGTERM or SIGUSR1 all ranks agree on a step, save a checkpoint, the main process writes
  ``<output_dir>/PREEMPTED`` (JSON: ``step``, ``checkpoint``, ``run_id``) and every rank exits with code 75
  (``EXIT_PREEMPTED``, EX_TEMPFAIL).  torchrun/accelerate collapse child exit codes to 1, so the launcher should
  look for the marker file; it is removed when a run starts.  ``--resume auto`` continues from the latest complete
  checkpoint.
* Resume: ``--resume auto`` (the default) continues only a checkpoint of this same run (its fingerprint: model
  config, data and split, strategy, world size, precision, trajectory hyperparameters) that has not finished.
  A finished run (``<output_dir>/FINISHED``) or a checkpoint of another run stops the run at once with one line
  (``resume refused: ...``, naming what differs) and exit code 5 (``EXIT_RESUME_REFUSED``); train again with
  ``--resume no`` or another ``--output-dir``.
* Gradient accumulation: one number for every strategy.  ``--grad-accum``, ``ACCELERATE_GRADIENT_ACCUMULATION_STEPS``
  (kit exports the job's value) and the DeepSpeed config's ``gradient_accumulation_steps`` must agree where they
  are set; a conflict exits with code 2 (``EXIT_CONFIG``, as for bad arguments), ``config error: ...``.
* SIGTERM outside the training loop (data loading, final test) stops the rank at once with exit code 75 and no new
  checkpoint; during the final write of metrics and model it lets the write finish, then exits 75.
* Reports: under kit (``KIT_RUN_ID`` set) the main process prints its timeline and every rank its collective-free
  sections as ``kit-insight: {...}`` lines on stdout (train/insight.py), which kit's goodput report and straggler
  watch read; ``KIT_INSIGHT=0`` turns them off.
* Offline: importing this package sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` (unless already set)
  before transformers is imported; nothing is ever downloaded.
"""

import os

# Must happen before transformers / huggingface_hub are imported anywhere in the process.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# Hugging Face tokenizers' own thread pool fights with the training threads on small CPU machines.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EXIT_CONFIG = 2  # conflicting settings (like argparse's usage errors)
EXIT_WORLD_CHECK = 3
EXIT_BAD_DATA = 4
EXIT_RESUME_REFUSED = 5  # --resume would continue a finished run or another run's checkpoint
EXIT_PREEMPTED = 75
