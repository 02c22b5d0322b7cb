"""End of a run: test metrics, metrics.json, report, curves, final model and tokenizer, GPU statistics."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import torch

from train import flops, ngram_mix, outputs, preempt, resources
from train import model as model_lib

# Test hook: every rank writes its full (gathered) parameters to <dir>/rank<N>.pt after training.
DUMP_ENV = "KIT_TRAIN_DUMP_PARAMS"


def strategy_name(accelerator) -> str:
    kind = str(accelerator.distributed_type).split(".")[-1]
    if kind == "DEEPSPEED":
        stage = accelerator.state.deepspeed_plugin.deepspeed_config.get("zero_optimization", {}).get("stage", 0)
        return f"deepspeed_zero{stage}"
    return {"FSDP": "fsdp", "NO": "single"}.get(kind, "ddp")


def _zero3(model) -> bool:
    return type(model).__name__ == "DeepSpeedEngine" and model.zero_optimization_stage() == 3


@contextlib.contextmanager
def gathered(model):
    """Full parameters on every rank for the duration (ZeRO-3 partitions them)."""
    if _zero3(model):
        import deepspeed

        with deepspeed.zero.GatheredParameters(list(model.module.parameters()), modifier_rank=None):
            yield
    else:
        yield


def full_state_dict(accelerator, model):
    """Collective. ZeRO-3: consolidate directly (needs no stage3_gather_16bit_weights_on_model_save)."""
    if _zero3(model):
        return model._zero3_consolidated_16bit_state_dict()
    return accelerator.get_state_dict(model)  # FSDP: gathers a full state dict; DDP: unwraps


def dump_params(accelerator, model, directory: str) -> None:
    Path(directory).mkdir(parents=True, exist_ok=True)
    unwrapped = accelerator.unwrap_model(model)
    with gathered(model):
        params = {k: v.detach().float().cpu().clone() for k, v in unwrapped.named_parameters()}
    torch.save(params, Path(directory) / f"rank{accelerator.process_index}.pt")


def resource_report(trainer, pretrained: dict | None = None) -> dict:
    """What was measured and, per rank over the run (pretraining too), peak memory, mean utilisation, samples/s."""
    before = (pretrained or {}).get("train_log") or []
    return {**trainer.resources.describe(), "per_rank": resources.summary(before + trainer.state.train_log)}


def _gpu_rows(report: dict) -> list[dict] | None:
    """The per-GPU figures under their earlier key (bench/gpu_reference.py reads it); None on CPU."""
    if report["device"] != "cuda":
        return None
    return [
        {"rank": r["rank"], "peak_memory_mib": r["peak_memory_mib"], "utilization_pct": r["utilization_pct"]}
        for r in report["per_rank"]
    ]


def _efficiency(accelerator, trainer, tokens_per_s: float | None) -> dict:
    """FLOPs per trained token and, on GPUs, MFU against the 16-bit peak of the device."""
    s, config = trainer.state, accelerator.unwrap_model(trainer.model).config
    if not (s.samples and tokens_per_s):
        return {"model_flops_per_token": None, "mfu": None}
    per_token = flops.train_flops_per_token(
        config.hidden_size, config.num_hidden_layers, config.intermediate_size, s.tokens / s.samples, config.num_labels
    )
    device = torch.cuda.get_device_name(accelerator.device) if accelerator.device.type == "cuda" else None
    util = flops.mfu(per_token, tokens_per_s, accelerator.num_processes, device)
    return {
        "model_flops_per_token": round(per_token),
        "mfu": None if util is None else round(util, 4),
        "device_name": device,
    }


def _metrics(args, accelerator, trainer, test: dict, report: dict, pretrained: dict | None) -> dict:
    s = trainer.state
    tokens_per_s = s.tokens / s.train_time if s.train_time else None
    return {
        "world_size": accelerator.num_processes,
        "strategy": strategy_name(accelerator),
        "mixed_precision": str(accelerator.mixed_precision),
        "device": accelerator.device.type,
        "steps": s.step,
        "epochs": s.epoch,
        "train_time_s": round(s.train_time, 3),
        "grad_accum": args.grad_accum,
        "steps_per_epoch": trainer.steps_per_epoch,
        "schedule_steps": trainer.total_steps,
        "samples": s.samples,
        "fingerprint": trainer.fingerprint,
        "samples_per_s": round(s.samples / s.train_time, 2) if s.train_time else None,
        "tokens_per_s": None if tokens_per_s is None else round(tokens_per_s, 2),
        **_efficiency(accelerator, trainer, tokens_per_s),
        "evals": s.evals,
        "train_log": s.train_log,
        "test": {"loss": test["loss"], "accuracy": test["accuracy"], "examples": test["examples"]},
        "labels": trainer.labels,
        "resources": report,
        "gpu": _gpu_rows(report),
        "pretrain": pretrained,
        "run_id": os.environ.get("KIT_RUN_ID"),
        "args": dict(vars(args)),
    }


def finish(args, accelerator, trainer, tokenizer, out: Path, pretrained: dict | None = None) -> dict:
    """Collective.  A SIGTERM stops the test at once, but lets the final write complete before it stops.
    `pretrained`: what the pretrain phase did (train/pretrain.py), if the run has one."""
    preempt.enter_phase(accelerator, "test", f"{len(trainer.loaders['test'].dataset)} examples")
    mix = None
    if model_lib.has_head(accelerator.unwrap_model(trainer.model)) and args.ngram_mix == "fit":
        mix = ngram_mix.calibrate(trainer)  # before the test: the test split has no say in it
    test = trainer.test()
    metrics = _metrics(args, accelerator, trainer, test, resource_report(trainer, pretrained), pretrained)
    metrics["ngram_mix"] = mix
    if os.environ.get(DUMP_ENV):
        dump_params(accelerator, trainer.model, os.environ[DUMP_ENV])
    state_dict = full_state_dict(accelerator, trainer.model) if args.save_model else None
    with trainer.preemption.critical():
        preempt.enter_phase(accelerator, "save", f"metrics, report and model to {out}", trainer.preemption)
        if accelerator.is_main_process:
            _write(args, accelerator, trainer, tokenizer, out, test, metrics, state_dict)
        accelerator.wait_for_everyone()
    return metrics


def _write(args, accelerator, trainer, tokenizer, out: Path, test: dict, metrics: dict, state_dict) -> None:
    text, data = outputs.classification_outputs(test["labels"], test["preds"], trainer.labels)
    metrics["test"].update(data)
    (out / "classification_report.txt").write_text(text)
    outputs.write_json(out / "metrics.json", metrics)
    outputs.plot_curves(
        out / "curves.png", trainer.state.train_log, trainer.state.evals, metrics["resources"], metrics["pretrain"]
    )
    if args.save_model:
        unwrapped = accelerator.unwrap_model(trainer.model)
        unwrapped.save_pretrained(str(out / "model"), state_dict=state_dict, safe_serialization=True)
        tokenizer.save_pretrained(str(out / "model"))
    print(
        f"test accuracy {test['accuracy']:.4f} loss {test['loss']:.4f} ({test['examples']} examples); "
        f"{metrics['samples_per_s']} samples/s, {metrics['tokens_per_s']} tokens/s; "
        f"world {metrics['world_size']} {metrics['strategy']} {metrics['mixed_precision']}",
        flush=True,
    )
    if metrics["mfu"] is not None:
        print(
            f"model FLOPs utilisation {100 * metrics['mfu']:.1f}% of {metrics['device_name']}'s 16-bit peak "
            f"({metrics['model_flops_per_token'] / 1e6:.1f} MFLOPs per token)",
            flush=True,
        )
    span = " (pretraining and fine-tuning)" if (metrics["pretrain"] or {}).get("train_log") else ""
    for line in resources.lines(metrics["resources"], metrics["resources"]["per_rank"], span):
        print(line, flush=True)
