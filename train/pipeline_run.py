"""The reference job with pipeline parallelism (kit sets KIT_EXPECTED_PIPELINE_STAGES > 1): torch.distributed's
pipelining (a GPipe schedule) runs the stages of each replica; the replicas of a stage average their gradients.

Why torch.distributed.pipelining and not DeepSpeed's PipelineModule: it runs over gloo on CPU as over NCCL on
GPUs, needs no DeepSpeed engine (whose pipeline engine expects a GPU and a layer list), and its schedules are
plain torch. Its stages exchange fixed shapes: batches are padded to --max-length and a short last batch is dropped
(evaluation pads it with rows that count for nothing).

The same outputs as the ordinary loop: a world report (each rank's stage and layers, checked against the plan),
step and eval lines, metrics.json, the classification report, checkpoints (each stage's weights, optimizer and
schedule, sealed by the manifest the ordinary loop uses) that --resume auto continues, and FINISHED. Preemption as
in the ordinary loop: a SIGTERM/SIGUSR1 in the training loop stops every rank at the same step after a checkpoint,
elsewhere SIGTERM stops at once; either way the PREEMPTED marker and exit 75."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from train import EXIT_BAD_DATA, EXIT_CONFIG, EXIT_PREEMPTED, EXIT_RESUME_REFUSED, EXIT_WORLD_CHECK
from train import checkpoint, data, data_check, fingerprint, model as model_lib, preempt, resume, tokenize
from train.batching import BucketBatchSampler
from train.pretrain import enabled as pretrain_enabled
from train.pipeline import LayoutError, StageModule, describe, layer_split, layout

STAGES_ENV, MICROBATCHES_ENV = "KIT_EXPECTED_PIPELINE_STAGES", "KIT_EXPECTED_PIPELINE_MICROBATCHES"


def stages_from_env(env=os.environ) -> int:
    return int(env.get(STAGES_ENV) or 1)


def _say(text: str) -> None:
    print(text, flush=True)


def _loss(logits, labels):
    return torch.nn.functional.cross_entropy(logits, labels)


class Fail(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _pad(rows, length: int, pad_id: int, size: int):
    """(ids, mask, labels) padded to `length` and to `size` rows (extra rows: label -100, counted nowhere)."""
    ids = torch.full((size, length), pad_id, dtype=torch.long)
    mask = torch.zeros((size, length), dtype=torch.long)
    labels = torch.full((size,), -100, dtype=torch.long)
    for i, (tokens, label) in enumerate(rows):
        n = min(len(tokens), length)
        ids[i, :n], mask[i, :n], labels[i] = tokens[:n], 1, label
    mask[len(rows):, 0] = 1   # a row of padding still attends to one position (no all-masked softmax)
    return ids, mask, labels


class PipelineRun:
    def __init__(self, args, stages: int, microbatches: int, preemption: preempt.Preemption):
        self.args, self.stages, self.microbatches, self.preemption = args, stages, microbatches, preemption
        self.checkpoint_path: Path | None = None
        self.device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available()
                                   else "cpu")
        dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.out = Path(args.output_dir)
        self.step = 0
        self.evals: list[dict] = []

    # ---- the world
    def check_world(self, num_layers: int) -> None:
        expected = os.environ.get("KIT_EXPECTED_WORLD_SIZE")
        try:
            self.layout = layout(self.world, self.stages, self.rank)
            splits = layer_split(num_layers, self.stages)
        except LayoutError as exc:
            raise Fail(EXIT_WORLD_CHECK, f"world check failed: {exc}") from None
        self.layers = splits[self.layout.stage]
        mine = (self.rank, self.layout.stage, self.layout.replica, describe(self.layout.stage, self.stages,
                                                                           self.layers))
        everyone = [None] * self.world
        dist.all_gather_object(everyone, mine)
        seen = {(s, r) for _, s, r, _ in everyone}
        problems = []
        if expected is not None and int(expected) != self.world:
            problems.append(f"world size {self.world}, planned {expected}")
        if len(seen) != self.world:
            problems.append("two ranks claim one stage of one replica")
        if problems:
            raise Fail(EXIT_WORLD_CHECK, f"world check failed: {'; '.join(problems)}")
        _say(f"pipeline: rank {self.rank} is stage {self.layout.stage}/{self.stages} of replica "
             f"{self.layout.replica}/{self.layout.replicas}: {mine[3]}")
        if self.rank == 0:
            stages = "; ".join(f"stage {s}: ranks {','.join(str(r) for r, st, _, _ in everyone if st == s)} "
                               f"({next(d for _, st, _, d in everyone if st == s)})" for s in range(self.stages))
            _say(f"world check: {self.world} processes = {self.stages} pipeline stage(s) x {self.layout.replicas} "
                 f"replica(s), {self.microbatches} micro-batches per step; {stages}")
        self.pipe_group = self._groups([self.layout.pipeline_ranks(r) for r in range(self.layout.replicas)],
                                       self.layout.replica)
        self.stage_group = self._groups([self.layout.stage_ranks(s) for s in range(self.stages)], self.layout.stage)

    def _groups(self, members: list[list[int]], mine: int):
        """Every rank creates every group, in the same order (new_group is collective)."""
        groups = [dist.new_group(ranks) for ranks in members]
        return groups[mine]

    # ---- data and model
    def load(self):
        args = self.args
        splits = data.load_splits(args.data, args.text_column, args.label_column, args.seed, args.val_fraction,
                                  args.test_fraction, args.dedupe)
        cache = Path(args.cache_dir)
        local_first = int(os.environ.get("LOCAL_RANK", 0)) == 0
        for turn in (True, False):   # the node's first process builds the caches, the others then read them
            if turn == local_first:
                tok_dir = (Path(args.model) if model_lib.is_local_model(args.model)
                           else tokenize.trained_tokenizer_dir(cache, splits, args.vocab_size, args.cjk))
                encoded = tokenize.encode_splits(cache, splits, tok_dir, args.max_length)
            dist.barrier()
        self.splits, self.tokenizer, self.encoded = splits, tokenize.load_tokenizer(tok_dir), encoded

    def check_data(self) -> None:
        """Every rank must have loaded the same split, tokenizer and ids (train/data_check.py)."""
        def gather(report):
            everyone = [None] * self.world
            dist.all_gather_object(everyone, report)
            return everyone

        mine = data_check.report(self.rank, self.splits, self.tokenizer, self.encoded)
        problem = data_check.check(mine, gather, self.args.cache_dir, model_lib.is_local_model(self.args.model))
        if problem:
            raise Fail(EXIT_WORLD_CHECK, problem if self.rank == 0 else "")

    def build(self):
        args = self.args
        torch.manual_seed(args.seed)   # the same whole model on every rank; each keeps its stage
        net = model_lib.build_model(args.model, len(self.splits.labels), len(self.tokenizer), args.max_length,
                                    args.dropout)
        self.check_world(net.config.num_hidden_layers)
        self.fingerprint = fingerprint.build(args, net.config, self.splits.fingerprint, "pipeline", self.world, "no")
        self.fingerprint["pipeline_stages"] = self.stages
        self.module = StageModule(net, self.layout.stage, self.stages, self.layers).to(self.device)
        del net
        from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
        self.pipe_stage = PipelineStage(self.module, self.layout.stage, self.stages, self.device,
                                        group=self.pipe_group)
        # Every stage gets the loss function: a schedule without one runs no backward on that stage.
        self.schedule = ScheduleGPipe(self.pipe_stage, n_microbatches=self.microbatches, loss_fn=_loss)
        self.optimizer = model_lib.build_optimizer(self.module, args.lr, args.weight_decay)
        enc = self.encoded["train"]
        self.sampler = BucketBatchSampler(enc.lengths(), args.batch_size, args.seed, args.bucketing)
        self.per_epoch = len(self.sampler) // self.layout.replicas
        if self.per_epoch < 1:
            raise Fail(EXIT_CONFIG, f"config error: {len(self.sampler)} batches of {args.batch_size} cannot feed "
                                    f"{self.layout.replicas} pipeline replicas")
        self.total = args.max_steps or max(1, round(args.epochs * self.per_epoch))
        warmup = int(round(args.warmup * self.total)) if args.warmup < 1 else int(args.warmup)
        self.scheduler = model_lib.build_scheduler(self.optimizer, warmup, self.total)

    # ---- steps
    def _batch(self, split: str, rows_idx, size: int):
        enc = self.encoded[split]
        rows = [(enc.tokens(i), int(enc.labels[i])) for i in rows_idx]
        ids, mask, labels = _pad(rows, self.args.max_length, self.tokenizer.pad_token_id, size)
        return ids.to(self.device), mask.to(self.device), labels.to(self.device)

    def _forward_backward(self, ids, mask, labels) -> float | None:
        losses = []
        if self.layout.first:
            self.schedule.step(ids, mask)
        elif self.layout.last:
            self.schedule.step(target=labels, losses=losses)
        else:
            self.schedule.step()
        return float(sum(l.item() for l in losses) / len(losses)) if losses else None

    def _sync_and_clip(self) -> None:
        params = [p for p in self.module.parameters() if p.grad is not None]
        if self.layout.replicas > 1:   # the replicas of this stage average their gradients
            for p in params:
                dist.all_reduce(p.grad, group=self.stage_group)
                p.grad /= self.layout.replicas
        if self.args.max_grad_norm > 0:   # one norm over the whole model: every stage's share, summed
            sq = torch.stack([p.grad.pow(2).sum() for p in params]).sum() if params else torch.zeros((),
                                                                                                      device=self.device)
            dist.all_reduce(sq, group=self.pipe_group)
            coef = self.args.max_grad_norm / (sq.sqrt() + 1e-6)
            if coef < 1:
                for p in params:
                    p.grad.mul_(coef)

    def _mean_over_replicas(self, value: float) -> float:
        t = torch.tensor([value], device=self.device)
        dist.all_reduce(t, group=self.stage_group)
        return t.item() / self.layout.replicas

    def train(self) -> bool:
        """Train to the last step; False when a stop signal stopped every rank (after a checkpoint)."""
        started = time.monotonic()
        with self.preemption.deferred():   # signals only set a flag here; every rank acts on it at one step
            finished = self._train_steps()
        self.train_seconds = time.monotonic() - started
        if not finished:
            return False
        self.preemption.raise_if_terminated()
        self.evaluate_and_record()
        self.save()
        return True

    def _stop_agreed(self) -> bool:
        def sum_over_world(flag):
            dist.all_reduce(flag)
            return flag
        return self.preemption.agree(self.step, self.rank == 0, self.world, self.device, sum_over_world)

    def _train_steps(self) -> bool:
        args = self.args
        self.module.train()
        while self.step < self.total:
            epoch, offset = divmod(self.step, self.per_epoch)
            batches = self.sampler.batches(epoch)[:self.per_epoch * self.layout.replicas]
            for k in range(offset, self.per_epoch):
                if self.step >= self.total:
                    break
                rows = batches[k * self.layout.replicas + self.layout.replica]
                loss = self._forward_backward(*self._batch("train", rows, args.batch_size))
                self._sync_and_clip()
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.step += 1
                if self.layout.last and (self.step % args.log_every == 0 or self.step == self.total):
                    mean = self._mean_over_replicas(loss)
                    if self.layout.replica == 0:
                        _say(f"step {self.step}/{self.total} epoch {epoch} loss {mean:.4f} "
                             f"lr {self.scheduler.get_last_lr()[0]:.2e}")
                if args.eval_every and self.step % args.eval_every == 0 and self.step < self.total:
                    self.evaluate_and_record()
                if self._stop_agreed():
                    self.save()
                    return False
                if args.save_every and self.step % args.save_every == 0 and self.step < self.total:
                    self.save()
        return True

    def evaluate(self, split: str, collect: bool = False) -> dict | None:
        """Forward only, each replica its share of the batches; the last stage's sums, over the replicas."""
        # The training batch's shape: a pipeline's stages exchange buffers of the shape of their first step.
        enc, size = self.encoded[split], self.args.batch_size
        chunks = [list(range(i, min(i + size, len(enc)))) for i in range(0, len(enc), size)]
        total = torch.zeros(3, device=self.device)   # loss sum, correct, examples
        preds: list[tuple[int, int]] = []
        self.module.eval()
        with torch.no_grad():
            for j in range(self.layout.replica, len(chunks), self.layout.replicas):
                ids, mask, labels = self._batch(split, chunks[j], size)
                if self.layout.first:
                    self.schedule.eval(ids, mask)
                elif self.layout.last:
                    logits = self.schedule.eval(target=labels.clamp(min=0), losses=[])
                    real = labels >= 0
                    total[0] += torch.nn.functional.cross_entropy(logits[real], labels[real], reduction="sum")
                    guess = logits.argmax(-1)
                    total[1] += (guess[real] == labels[real]).sum()
                    total[2] += real.sum()
                    if collect:
                        preds += list(zip(labels[real].tolist(), guess[real].tolist()))
                else:
                    self.schedule.eval()
        self.module.train()
        if not self.layout.last:
            return None
        dist.all_reduce(total, group=self.stage_group)
        result = {"loss": total[0].item() / max(1, total[2].item()), "accuracy": total[1].item() /
                  max(1, total[2].item()), "examples": int(total[2].item())}
        if collect:
            everyone = [None] * self.layout.replicas
            dist.all_gather_object(everyone, preds, group=self.stage_group)
            result["pairs"] = [p for part in everyone for p in part]
        return result

    def evaluate_and_record(self) -> None:
        result = self.evaluate("validation")
        if result is not None and self.layout.replica == 0:
            _say(f"eval step {self.step}: loss {result['loss']:.4f} accuracy {result['accuracy']:.4f} "
                 f"({result['examples']} examples)")
            self.evals.append({"step": self.step, **result})

    # ---- checkpoints
    def save(self) -> None:
        root = checkpoint.checkpoints_dir(self.out)
        tmp, final = root / f".tmp-step-{self.step}", root / f"step-{self.step}"
        if self.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        dist.barrier()
        if self.layout.replica == 0:   # replicas hold equal weights: one copy per stage
            torch.save({"model": self.module.state_dict(), "optimizer": self.optimizer.state_dict(),
                        "scheduler": self.scheduler.state_dict(), "evals": self.evals},
                       tmp / f"stage{self.layout.stage}.pt")
        dist.barrier()
        if self.rank == 0:
            manifest = {"step": self.step, "state": {"step": self.step, "pipeline_stages": self.stages},
                        "fingerprint": self.fingerprint, "files": checkpoint.file_sizes(tmp)}
            (tmp / checkpoint.MANIFEST).write_text(json.dumps(manifest, indent=1))
            shutil.rmtree(final, ignore_errors=True)
            os.rename(tmp, final)
            checkpoint.prune(root, self.args.keep_checkpoints)
        self.checkpoint_path = final
        dist.barrier()

    def resume_or_start(self) -> None:
        decision = [None]
        if self.rank == 0:
            try:
                path = resume.decide(self.args.resume, self.out, self.fingerprint)
                decision[0] = ("ok", str(path) if path else None)
            except resume.ResumeRefused as exc:
                decision[0] = ("refused", str(exc))
        dist.broadcast_object_list(decision, src=0)
        kind, value = decision[0]
        if kind == "refused":
            raise Fail(EXIT_RESUME_REFUSED, value if self.rank == 0 else "")
        resume.start(self.out, self.rank == 0, fresh=value is None)
        if self.rank == 0:
            preempt.clear_marker(self.out)
        dist.barrier()
        if value is None:
            return
        state = torch.load(Path(value) / f"stage{self.layout.stage}.pt", map_location=self.device, weights_only=False)
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.evals = state.get("evals", [])
        self.step = checkpoint.read_state(Path(value))["step"]
        self.checkpoint_path = Path(value)
        if self.rank == 0:
            _say(f"resumed from {value} at step {self.step}")

    # ---- outputs
    def report(self) -> None:
        test = self.evaluate("test", collect=True)
        if not (self.layout.last and self.layout.replica == 0):
            dist.barrier()
            return
        from sklearn.metrics import classification_report, confusion_matrix
        pairs = test.pop("pairs")
        y, p = [a for a, _ in pairs], [b for _, b in pairs]
        labels = list(range(len(self.splits.labels)))
        report = classification_report(y, p, labels=labels, target_names=self.splits.labels, digits=4,
                                       zero_division=0)
        (self.out / "classification_report.txt").write_text(
            report + "\nconfusion matrix (rows: true, columns: predicted)\n" + str(confusion_matrix(y, p,
                                                                                              labels=labels)) + "\n")
        samples = self.step * self.args.batch_size * self.layout.replicas
        metrics = {"evals": self.evals, "test": test, "steps": self.step, "world_size": self.world,
                   "strategy": "pipeline", "mixed_precision": "no", "labels": self.splits.labels,
                   "pipeline": {"stages": self.stages, "replicas": self.layout.replicas,
                                "microbatches": self.microbatches},
                   "samples_per_s": samples / max(1e-9, getattr(self, "train_seconds", 0.0) or 1e-9),
                   "args": {k: v for k, v in vars(self.args).items() if isinstance(v, (int, float, str, bool))},
                   "run_id": os.environ.get("KIT_RUN_ID")}
        (self.out / "metrics.json").write_text(json.dumps(metrics, indent=1))
        _say(f"test accuracy {test['accuracy']:.4f} loss {test['loss']:.4f} ({test['examples']} examples); "
             f"world {self.world} pipeline {self.stages}x{self.layout.replicas}")
        dist.barrier()


def run(args, stages: int) -> int:
    microbatches = int(os.environ.get(MICROBATCHES_ENV) or stages)
    if pretrain_enabled(args):  # not built for stages: say so, and record what runs (fingerprint, metrics)
        if int(os.environ.get("RANK", "0")) == 0:
            _say("pipeline: no pretrain phase under pipeline stages; fine-tuning starts from a random encoder")
        args.pretrain_epochs, args.pretrain_steps = 0.0, 0
    if args.batch_size % microbatches:
        print(f"config error: --batch-size {args.batch_size} is not a multiple of the {microbatches} pipeline "
              f"micro-batches", file=sys.stderr, flush=True)
        return EXIT_CONFIG
    preemption = preempt.Preemption()
    preemption.install()   # from the first moment, as the ordinary loop
    run_ = None
    try:
        run_ = PipelineRun(args, stages, microbatches, preemption)
        return _run(run_)
    except preempt.Preempted as exc:
        return _preempted(args, run_, exc.signal_name)
    except Exception:
        if preemption.terminate:   # a collective failed because the other ranks had already stopped
            return _preempted(args, run_, "SIGTERM")
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _run(run_: PipelineRun) -> int:
    args = run_.args
    try:
        if run_.rank == 0:
            run_.out.mkdir(parents=True, exist_ok=True)
        try:
            run_.load()
        except data.DataError as exc:
            raise Fail(EXIT_BAD_DATA, f"bad data: {exc}") from None
        run_.check_data()
        run_.build()
        run_.resume_or_start()
        if not run_.train():
            if run_.rank == 0:
                preempt.write_marker(run_.out, run_.step, run_.checkpoint_path, run_.preemption.signal_name)
                _say(f"preempted at step {run_.step}: checkpoint {run_.checkpoint_path}, exit {EXIT_PREEMPTED}")
            dist.barrier()
            return EXIT_PREEMPTED
        run_.report()
        if run_.rank == 0:
            resume.finish(run_.out, run_.step, run_.fingerprint)
        dist.barrier()
        return 0
    except Fail as exc:
        if str(exc):
            print(str(exc), file=sys.stderr, flush=True)
        return exc.code


def _preempted(args, run_, signal_name: str) -> int:
    step, last = (run_.step, run_.checkpoint_path) if run_ is not None else (0, None)
    return preempt.stopped_outside_loop(args.output_dir, step, last, signal_name, run_ is None or run_.rank == 0,
                                        EXIT_PREEMPTED)


__all__ = ["run", "stages_from_env"]
