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

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from train import EXIT_BAD_DATA, EXIT_CONFIG, EXIT_PREEMPTED, EXIT_WORLD_CHECK
from train import data, data_check, fingerprint, insight, model as model_lib, preempt, resume, tokenizing
from train.batching import BucketBatchSampler
from train.pipeline import Fail, StageModule, say
from train.pipeline_eval import evaluate_and_record, report
from train.pipeline_state import resume_or_start, save
from train.pipeline_world import check_world
from train.pretrain import enabled as pretrain_enabled

STAGES_ENV, MICROBATCHES_ENV = "KIT_EXPECTED_PIPELINE_STAGES", "KIT_EXPECTED_PIPELINE_MICROBATCHES"


def stages_from_env(env=os.environ) -> int:
    return int(env.get(STAGES_ENV) or 1)


def _loss(logits, labels):
    return torch.nn.functional.cross_entropy(logits, labels)


def _pad(rows, length: int, pad_id: int, size: int):
    """(ids, mask, labels) padded to `length` and to `size` rows (extra rows: label -100, counted nowhere)."""
    ids = torch.full((size, length), pad_id, dtype=torch.long)
    mask = torch.zeros((size, length), dtype=torch.long)
    labels = torch.full((size,), -100, dtype=torch.long)
    for i, (tokens, label) in enumerate(rows):
        n = min(len(tokens), length)
        ids[i, :n], mask[i, :n], labels[i] = tokens[:n], 1, label
    mask[len(rows) :, 0] = 1  # a row of padding still attends to one position (no all-masked softmax)
    return ids, mask, labels


class PipelineRun:
    def __init__(self, args, stages: int, microbatches: int, preemption: preempt.Preemption):
        self.args, self.stages, self.microbatches, self.preemption = args, stages, microbatches, preemption
        self.checkpoint_path: Path | None = None
        self.device = torch.device(
            f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu"
        )
        dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.out = Path(args.output_dir)
        self.step = 0
        self.evals: list[dict] = []

    # ---- data and model
    def load(self):
        args = self.args
        splits = data.load_splits(
            args.data,
            args.text_column,
            args.label_column,
            args.seed,
            args.val_fraction,
            args.test_fraction,
            args.dedupe,
        )
        data.require_one_batch(splits, args.batch_size, max(1, self.world // self.stages), "pipeline replicas")
        cache = Path(args.cache_dir)
        local_first = int(os.environ.get("LOCAL_RANK", 0)) == 0
        for turn in (True, False):  # the node's first process builds the caches, the others then read them
            if turn == local_first:
                tok_dir = (
                    Path(args.model)
                    if model_lib.is_local_model(args.model)
                    else tokenizing.trained_tokenizer_dir(cache, splits, args.vocab_size, args.cjk)
                )
                encoded = tokenizing.encode_splits(cache, splits, tok_dir, args.max_length)
            dist.barrier()
        self.splits, self.tokenizer, self.encoded = splits, tokenizing.load_tokenizer(tok_dir), encoded

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
        torch.manual_seed(args.seed)  # the same whole model on every rank; each keeps its stage
        if args.ngram_buckets and self.rank == 0:
            # The head reads the input ids, which only the first stage sees; the stages train BERT alone.
            print("note: pipeline stages train BERT without the n-gram head (--ngram-buckets is not used)", flush=True)
        net = model_lib.build_model(
            args.model, len(self.splits.labels), len(self.tokenizer), args.max_length, args.dropout
        )
        check_world(self, net.config.num_hidden_layers)
        self.fingerprint = fingerprint.build(args, net.config, self.splits.fingerprint, "pipeline", self.world, "no")
        self.fingerprint["pipeline_stages"] = self.stages
        self.module = StageModule(net, self.layout.stage, self.stages, self.layers).to(self.device)
        del net
        from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

        self.pipe_stage = PipelineStage(self.module, self.layout.stage, self.stages, self.device, group=self.pipe_group)
        # Every stage gets the loss function: a schedule without one runs no backward on that stage.
        self.schedule = ScheduleGPipe(self.pipe_stage, n_microbatches=self.microbatches, loss_fn=_loss)
        self.optimizer = model_lib.build_optimizer(self.module, args.lr, args.weight_decay)
        enc = self.encoded["train"]
        self.sampler = BucketBatchSampler(enc.lengths(), args.batch_size, args.seed, args.bucketing)
        self.per_epoch = len(self.sampler) // self.layout.replicas
        if self.per_epoch < 1:
            raise Fail(
                EXIT_CONFIG,
                f"config error: {len(self.sampler)} batches of {args.batch_size} cannot feed "
                f"{self.layout.replicas} pipeline replicas",
            )
        self.total = args.max_steps or max(1, round(args.epochs * self.per_epoch))
        warmup = int(round(args.warmup * self.total)) if args.warmup < 1 else int(args.warmup)
        self.scheduler = model_lib.build_scheduler(self.optimizer, warmup, self.total)

    # ---- steps
    def batch(self, split: str, rows_idx, size: int):
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
        return float(sum(loss.item() for loss in losses) / len(losses)) if losses else None

    def _sync_and_clip(self) -> None:
        params = [p for p in self.module.parameters() if p.grad is not None]
        if self.layout.replicas > 1:  # the replicas of this stage average their gradients
            for p in params:
                dist.all_reduce(p.grad, group=self.stage_group)
                p.grad /= self.layout.replicas
        if self.args.max_grad_norm > 0:  # one norm over the whole model: every stage's share, summed
            sq = (
                torch.stack([p.grad.pow(2).sum() for p in params]).sum()
                if params
                else torch.zeros((), device=self.device)
            )
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
        with self.preemption.deferred():  # signals only set a flag here; every rank acts on it at one step
            finished = self._train_steps()
        self.train_seconds = time.monotonic() - started
        if not finished:
            return False
        self.preemption.raise_if_terminated()
        evaluate_and_record(self)
        save(self)
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
            batches = self.sampler.batches(epoch)[: self.per_epoch * self.layout.replicas]
            for k in range(offset, self.per_epoch):
                if self.step >= self.total:
                    break
                rows = batches[k * self.layout.replicas + self.layout.replica]
                loss = self._forward_backward(*self.batch("train", rows, args.batch_size))
                self._sync_and_clip()
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.step += 1
                if self.layout.last and (self.step % args.log_every == 0 or self.step == self.total):
                    mean = self._mean_over_replicas(loss)
                    if self.layout.replica == 0:
                        say(
                            f"step {self.step}/{self.total} epoch {epoch} loss {mean:.4f} "
                            f"lr {self.scheduler.get_last_lr()[0]:.2e}"
                        )
                if args.eval_every and self.step % args.eval_every == 0 and self.step < self.total:
                    evaluate_and_record(self)
                if self._stop_agreed():
                    save(self)
                    return False
                if args.save_every and self.step % args.save_every == 0 and self.step < self.total:
                    save(self)
        return True


def run(args, stages: int) -> int:
    microbatches = int(os.environ.get(MICROBATCHES_ENV) or stages)
    if pretrain_enabled(args):  # not built for stages: say so, and record what runs (fingerprint, metrics)
        if int(os.environ.get("RANK", "0")) == 0:
            say("pipeline: no pretrain phase under pipeline stages; fine-tuning starts from a random encoder")
        args.pretrain_epochs, args.pretrain_steps = 0.0, 0
    if args.batch_size % microbatches:
        print(
            f"config error: --batch-size {args.batch_size} is not a multiple of the {microbatches} pipeline "
            f"micro-batches",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_CONFIG
    preemption = preempt.Preemption()
    preemption.install()  # from the first moment, as the ordinary loop
    run_ = None
    try:
        run_ = PipelineRun(args, stages, microbatches, preemption)
        return _run(run_)
    except preempt.Preempted as exc:
        return _preempted(args, run_, exc.signal_name)
    except Exception:
        if preemption.terminate:  # a collective failed because the other ranks had already stopped
            return _preempted(args, run_, "SIGTERM")
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _run(run_: PipelineRun) -> int:
    try:
        if run_.rank == 0:
            run_.out.mkdir(parents=True, exist_ok=True)
        try:
            run_.load()
        except data.DataError as exc:
            raise Fail(EXIT_BAD_DATA, f"bad data: {exc}") from None
        run_.check_data()
        run_.build()
        resume_or_start(run_)
        if not run_.train():
            if run_.rank == 0:
                preempt.write_marker(run_.out, run_.step, run_.checkpoint_path, run_.preemption.signal_name)
                say(f"preempted at step {run_.step}: checkpoint {run_.checkpoint_path}, exit {EXIT_PREEMPTED}")
            dist.barrier()
            return EXIT_PREEMPTED
        report(run_)
        if run_.rank == 0:
            resume.finish(run_.out, run_.step, run_.fingerprint)
        dist.barrier()
        return 0
    except resume.AlreadyFinished as exc:  # an earlier attempt finished the run: nothing to do (train/resume.py)
        if run_.rank == 0:
            say(str(exc))
        insight.finished_earlier(exc.step, run_.rank == 0)
        dist.barrier()
        return 0
    except Fail as exc:
        if str(exc):
            print(str(exc), file=sys.stderr, flush=True)
        return exc.code


def _preempted(args, run_, signal_name: str) -> int:
    step, last = (run_.step, run_.checkpoint_path) if run_ is not None else (0, None)
    return preempt.stopped_outside_loop(
        args.output_dir, step, last, signal_name, run_ is None or run_.rank == 0, EXIT_PREEMPTED
    )


__all__ = ["run", "stages_from_env"]
