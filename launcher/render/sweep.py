"""Print a sweep plan: every trial's parameters, then one trial's full plan (the others differ only there)."""

from launcher.render.dryrun import masked_dict, render_text
from launcher.render.text import to_json
from launcher.spec.sweep import CURVE_FILE, STUDY_JOURNAL, line_key


def trial_table(plan) -> str:
    names = list(plan.spec.parameters)
    placed = any(t.placement for t in plan.trials)
    header = ["trial", "run id", *names, *(["lane", "runs on"] if placed else [])]
    later = "(chosen then)"
    rows = [
        [
            str(t.index),
            t.run_id,
            *(str(t.params[n]) if plan.planned(t) else later for n in names),
            *([str(t.lane), t.placement] if placed else []),
        ]
        for t in plan.trials
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in [header, *rows])


def _at_once(plan) -> str:
    s = plan.spec
    if plan.array is not None or plan.lanes == s.parallel:
        return f"{s.parallel} at a time"
    if plan.lanes == len(plan.trials):
        return f"{plan.lanes} at a time (every trial)"
    return f"{plan.lanes} at a time (parallel {s.parallel}: no two trials share a GPU)"


def _stops(plan) -> str:
    n = plan.spec.max_failures
    if plan.array is not None:
        return "every trial is submitted at once (one job array): max_failures does not apply"
    if n is None:
        return "failed trials never stop the sweep (max_failures: null)"
    return f"no more trials start once {n} in a row failed the same way (max_failures: {n})"


def _method(plan) -> str:
    s = plan.spec
    if s.method == "grid":
        return f"grid, {len(plan.trials)} combinations"
    if s.method == "random":
        return f"random, {len(plan.trials)} trials drawn with seed {s.seed}"
    k = s.chosen_from
    return (
        f"tpe (Optuna's TPESampler, seed {s.seed}), {len(plan.trials)} trials: the first {k} are the seeded "
        f"random draw below; the values of the others are chosen by TPE as the sweep goes, from the trials "
        f"that ended before each starts"
    )


def _early_stopping(plan) -> str:
    s, es = plan.spec, plan.spec.early_stopping
    if es is None:
        return ""
    how = {
        "asha": f"asynchronous successive halving, rungs at {es.min_steps} x {es.reduction_factor}^k steps",
        "hyperband": f"hyperband, from {es.min_steps} steps, reduction factor {es.reduction_factor}",
        "median": f"below the median of earlier trials at the same step, from step {es.min_steps}",
    }[es.method]
    return (
        f'early stopping: {es.method} ({how}); each trial appends {{"step": S, "{line_key(s.metric)}": '
        f"V}} lines to <its dir>/{CURVE_FILE}; a trial pruned is stopped as `kit cancel` stops a run "
        f"and recorded pruned\n"
    )


def render_sweep_text(plan) -> str:
    s = plan.spec
    learns = (
        (
            f"study: runs/{plan.sweep_id}/{STUDY_JOURNAL} (Optuna's journal; only kit reads and writes it); "
            f"trials start one by one as lanes free up\n"
        )
        if s.uses_study
        else ""
    )
    head = (
        f"sweep {plan.sweep_id}: {_method(plan)}; metric {s.metric} ({s.goal}), {_at_once(plan)}, "
        f"backend {plan.backend}\n"
        f"each trial is a run <sweep>-t<N>, writing to {s.output_root}/<run id> ({s.output_arg}); "
        f"its metric is read from <that dir>/{s.metrics_file}\n"
        f"{_early_stopping(plan)}{learns}"
        f"{_stops(plan)}\n\n"
    )
    first = plan.trials[0]
    return (
        head + trial_table(plan) + array_section(plan) + f"\nplan of trial {first.index} ({first.run_id}); "
        f"the other trials differ only in their run id, port, swept values and lane placement:\n\n"
        + render_text(first.plan)
    )


def array_section(plan) -> str:
    """SLURM: the one script that is submitted, once, for the whole sweep ("" on other backends)."""
    a = plan.array
    if a is None:
        return ""
    return (
        f"\nsubmission: {' '.join(a.argv)} (from {a.workdir}), once: one job array, task N runs trial N's "
        f"job.sbatch below with bash (its #SBATCH lines are comments there; the array's hold)\n"
        f"--- file {a.script_path}\n{a.script}"
    )


def render_sweep_json(plan) -> str:
    data = plan.to_dict()
    data["trial_plans"] = {t.run_id: masked_dict(t.plan) for t in plan.trials if plan.planned(t)}
    return to_json(data)
