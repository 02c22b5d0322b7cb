"""Tuning that learns, measured: TPE + ASHA against random search and against grid search, at equal trial budgets,
on a job whose learning curve ends in a known optimum (tests/sweeps/scripts/curve_probe.py:
loss(step) = (lr - 0.3)^2 + (x - 0.7)^2 + 1/step, lr and x in [0, 1], `steps` steps; its best final loss is
1/steps, at lr 0.3, x 0.7).

Every sweep is a real `kit submit` on the local backend (each trial an ordinary run, `parallel` at a time); the
steps a trial ran are the lines of its metrics.jsonl (a pruned trial runs a little past the step it was pruned
at: the driver reads its file every 0.2 s). For each method and seed: the best final loss, whether the best trial
lies in the optimum's neighbourhood (|lr - 0.3| <= 0.1 and |x - 0.7| <= 0.1), and the total steps run; the table
gives the median over seeds (grid has no seed: it runs once). Target (issue 40): TPE + ASHA finds the
neighbourhood (median over seeds) while running under half the steps of running every trial to its end.

    .venv/bin/python bench/tuning.py [--trials 24] [--seeds 5] [--steps 27] [--parallel 2] [--sleep 0.1]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
CURVE = REPO / "tests" / "sweeps" / "scripts" / "curve_probe.py"
KIT = [sys.executable, "-m", "launcher"]
OPTIMUM = {"--lr": 0.3, "--x": 0.7}
NEAR = 0.1


def sweep_spec(method: str, trials: int, seed: int, parallel: int) -> dict:
    spec = {"method": method, "metric": "loss", "goal": "min", "parallel": parallel}
    if method == "grid":  # the nearest grid to `trials` points: 6 x 4 for 24
        rows = max(1, round((trials * 1.5) ** 0.5))
        cols = max(1, trials // rows)
        spec["parameters"] = {
            "--lr": [round((i + 0.5) / rows, 4) for i in range(rows)],
            "--x": [round((j + 0.5) / cols, 4) for j in range(cols)],
        }
    else:
        spec.update(
            trials=trials, seed=seed, parameters={"--lr": {"low": 0.0, "high": 1.0}, "--x": {"low": 0.0, "high": 1.0}}
        )
    if method == "tpe":
        spec["early_stopping"] = {"method": "asha", "min_steps": 1, "reduction_factor": 3}
    return spec


def run_sweep(tmp: Path, method: str, trials: int, seed: int, args) -> dict:
    name = f"{method}-s{seed}"
    job = {
        "name": "tuning",
        "entrypoint": {"script": str(CURVE)},
        "args": ["--steps", str(args.steps), "--sleep", str(args.sleep)],
        "nodes": 1,
        "procs_per_node": 1,
        "sweep": sweep_spec(method, trials, seed, args.parallel),
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    r = subprocess.run([*KIT, "submit", str(path), "--run-id", name], cwd=tmp, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"sweep {name} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    s = subprocess.run([*KIT, "sweep", "status", name, "--format", "json"], cwd=tmp, capture_output=True, text=True)
    view = json.loads(s.stdout)
    steps = 0
    for t in view["trials"]:
        curve = tmp / "outputs" / t["run_id"] / "metrics.jsonl"
        steps += len(curve.read_text().splitlines()) if curve.exists() else 0
    best = next(t for t in view["trials"] if t["run_id"] == view["best"])
    near = all(abs(float(best["params"][k]) - v) <= NEAR for k, v in OPTIMUM.items())
    return {
        "method": method,
        "seed": seed,
        "trials": len(view["trials"]),
        "best": best["metric"],
        "best_params": best["params"],
        "near": near,
        "steps": steps,
        "pruned": view["counts"].get("pruned", 0),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=24)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=27)
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--sleep", type=float, default=0.1, help="seconds per step of a trial")
    p.add_argument("--json", help="also write every sweep's result here")
    args = p.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="kit-bench-tuning-") as tmp:
        for method, seeds in (("tpe", range(args.seeds)), ("random", range(args.seeds)), ("grid", [0])):
            for seed in seeds:
                res = run_sweep(Path(tmp), method, args.trials, seed, args)
                results.append(res)
                print(
                    f"{method:6} seed {seed}: best {res['best']:.4f} at {res['best_params']} "
                    f"(near: {res['near']}), {res['steps']} steps, {res['pruned']} pruned",
                    flush=True,
                )
    full = args.trials * args.steps
    print(
        f"\n{args.trials} trials of {args.steps} steps each (every trial to its end: {full} steps); optimum "
        f"loss {1 / args.steps:.4f}\n"
    )
    print("| method | seeds | median best loss | near the optimum | median steps run | of every trial to its end |")
    print("|---|---|---|---|---|---|")
    verdict = {}
    for method, label in (("tpe", "TPE + ASHA"), ("random", "random"), ("grid", "grid")):
        rows = [r for r in results if r["method"] == method]
        best = statistics.median(r["best"] for r in rows)
        steps = statistics.median(r["steps"] for r in rows)
        near = sum(r["near"] for r in rows)
        verdict[method] = (near * 2 > len(rows), steps / full)
        print(f"| {label} | {len(rows)} | {best:.4f} | {near}/{len(rows)} | {steps:.0f} | {steps / full:.0%} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    found, share = verdict["tpe"]
    ok = found and share < 0.5
    print(
        f"\ntarget: TPE + ASHA near the optimum in most seeds and under half the steps: "
        f"{'met' if ok else 'MISSED'} ({share:.0%} of the steps)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
