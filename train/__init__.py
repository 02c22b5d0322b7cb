"""kit's shared training module: BERT text classification with Hugging Face Accelerate.

The same code runs on every rank; the distribution strategy (DDP, DeepSpeed ZeRO, FSDP) comes only from the
Accelerate config that `kit` generates.  Run ``python -m train --help`` for the arguments.

Contract with the launcher
--------------------------
* World check: at start every rank compares the world it joined with the plan passed in
  ``KIT_EXPECTED_WORLD_SIZE``, ``KIT_EXPECTED_NUM_MACHINES``, ``KIT_EXPECTED_STRATEGY`` (ddp|deepspeed|fsdp),
  ``KIT_EXPECTED_MIXED_PRECISION`` (no|fp16|bf16) and ``KIT_EXPECTED_DEVICE`` (cpu|cuda).  A mismatch exits with
  code 3 (``EXIT_WORLD_CHECK``) and a message starting ``world check failed:``.
* Preemption: on SIGTERM or SIGUSR1 all ranks agree on a step, save a checkpoint, the main process writes
  ``<output_dir>/PREEMPTED`` (JSON: ``step``, ``checkpoint``, ``run_id``) and every rank exits with code 75
  (``EXIT_PREEMPTED``, EX_TEMPFAIL).  torchrun/accelerate collapse child exit codes to 1, so the launcher should
  look for the marker file; it is removed when a run starts.  ``--resume auto`` continues from the latest complete
  checkpoint.
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

EXIT_WORLD_CHECK = 3
EXIT_BAD_DATA = 4
EXIT_PREEMPTED = 75
