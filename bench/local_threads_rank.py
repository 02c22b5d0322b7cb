"""One rank of bench/local_threads.py: a small MLP trained with DDP on CPU; rank 0 writes its steps/s.

Launched by kit (never imported): the thread count it runs with is whatever the plan's
`--num_cpu_threads_per_process` (or accelerate's default without it) made OMP_NUM_THREADS."""

import argparse
import json
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--warmup", type=int, default=5)
parser.add_argument("--width", type=int, default=1024)
parser.add_argument("--out", required=True)
args = parser.parse_args()

import torch  # noqa: E402  (after argparse)
from accelerate import Accelerator  # noqa: E402

accelerator = Accelerator()  # kit's plan sets ACCELERATE_USE_CPU: one gloo world across the local nodes
torch.manual_seed(0)
layers = [torch.nn.Linear(args.width, args.width) for _ in range(4)]
model = torch.nn.Sequential(*[m for layer in layers for m in (layer, torch.nn.GELU())])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
model, optimizer = accelerator.prepare(model, optimizer)
x = torch.randn(128, args.width)


def step():
    loss = model(x).pow(2).mean()
    accelerator.backward(loss)  # DDP's all-reduce keeps the ranks in step
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


for _ in range(args.warmup):
    step()
start = time.perf_counter()
for _ in range(args.steps):
    step()
elapsed = time.perf_counter() - start
if accelerator.is_main_process:
    with open(args.out, "w") as f:
        json.dump(
            {
                "steps_per_s": args.steps / elapsed,
                "threads": torch.get_num_threads(),
                "world_size": accelerator.num_processes,
                "omp": os.environ.get("OMP_NUM_THREADS"),
            },
            f,
        )
