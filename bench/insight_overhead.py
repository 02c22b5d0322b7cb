"""What the training module's reports to kit cost the training loop (train/insight.py: the timeline events, every
rank's section timing with its forward hooks, the marked lines), measured two ways in one run:

* their own cost per step: a loop over an empty model (an identity module, one forward per step) with them on,
  less the same loop with them off, against the time of one step of the module's own loop (tiny model, one
  process, one thread). Precise, whatever else the machine runs. Target: under 1% of a step.
* the module's loop itself, steps per CPU second of this process with them on and off, in short chunks of one
  trainer that alternate on/off and which goes first; the median of the pairs' ratios (and the same by wall
  clock). On a shared 2-core machine single pairs move by +-30%, so this shows no slowdown only within its noise.

The lines go to /dev/null, as a pipe would take them; reports every second here instead of five, so that a chunk
pays for several.

    .venv/bin/python bench/insight_overhead.py [--chunk 40] [--pairs 20]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import train  # noqa: E402,F401  (offline env before transformers)

TARGET = 0.01  # the reports' own cost, as a share of one step


def chunk_steps_per_s(trainer, steps: int, on: bool) -> tuple[float, float]:
    """(steps per CPU second, steps per wall second) of `steps` more steps with the reports on or off."""
    from train import insight

    trainer.insight.close()
    trainer.insight = insight.for_trainer(trainer.accelerator, trainer.model) if on else insight.Insight(on=False)
    assert trainer.insight.on == on
    trainer.total_steps = trainer.state.step + steps
    wall, cpu = time.perf_counter(), time.process_time()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        trainer.train()
    return steps / (time.process_time() - cpu), steps / (time.perf_counter() - wall)


def instrumentation_us(n: int = 20000) -> float:
    """The reports' own cost per step, in microseconds: a loop of n steps over an empty model (an identity module,
    one forward per step, a list for the loader) with them on, less the same loop with them off."""
    import torch

    from train import insight

    model = torch.nn.Identity().train()
    x = torch.zeros(1)

    def loop(ins) -> float:
        started = time.perf_counter()
        for step, _ in enumerate(ins.batches(range(n)), 1):
            model(x)
            ins.step_done(step)
        return time.perf_counter() - started

    costs = []
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        for _ in range(5):
            on = insight.Insight(on=True)
            on.watch_forward(model, cuda=False)
            t_on = loop(on)
            on.close()
            costs.append((t_on - loop(insight.Insight(on=False))) / n * 1e6)
    return statistics.median(costs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunk", type=int, default=30, help="steps per chunk")
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "kit-bench-cache"))
    a = p.parse_args()
    os.environ["KIT_INSIGHT"] = "1"
    import torch

    from bench.train_overhead import _module_args
    from train import insight
    from train.run import build_trainer, load_data, make_accelerator

    insight.REPORT_EVERY_S = 1.0
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        args = _module_args(Path(tmp), a.cache_dir, 10**9)
        accelerator = make_accelerator(args)
        data = load_data(args, accelerator)
        torch.manual_seed(args.seed)
        trainer = build_trainer(args, accelerator, *data)
        chunk_steps_per_s(trainer, a.chunk, True)  # warm-up: allocator, kernels
        on, off, ratios, walls = [], [], [], []
        for i in range(a.pairs):
            got = {}
            for mode in (True, False) if i % 2 == 0 else (False, True):
                got[mode] = chunk_steps_per_s(trainer, a.chunk, mode)
            on.append(got[True][0])
            off.append(got[False][0])
            ratios.append(got[True][0] / got[False][0])
            walls.append(got[True][1] / got[False][1])
    ratio = statistics.median(ratios)
    step_s = 1 / statistics.median(off)
    cost = instrumentation_us()
    share = cost / 1e6 / step_s
    print(f"reports off: median {statistics.median(off):.2f} steps per CPU second, {a.pairs} chunks of {a.chunk} steps")
    print(f"reports on:  median {statistics.median(on):.2f} steps per CPU second")
    print(f"pairs' ratios on/off (CPU): {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"median ratio on/off: {ratio:.3f} by CPU time, {statistics.median(walls):.3f} by wall clock")
    print(
        f"the reports' own cost: {cost:.1f} us per step, {100 * share:.4f}% of a {step_s * 1e3:.0f} ms step "
        f"(target < {100 * TARGET:g}%: {'PASS' if share < TARGET else 'FAIL'})"
    )
    return 0 if share < TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
