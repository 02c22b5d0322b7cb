"""The training loop: one Accelerate loop, identical on every rank, for any strategy the config selects."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from accelerate.utils import DistributedType
from tqdm.auto import tqdm

from train import checkpoint, insight, outputs, resources
from train.model import clipped_parameters
from train.preempt import Preemption
from train.progress import progress_bar


@dataclass
class State:
    """Everything a resumed run needs besides accelerate's own state (model, optimizer, scheduler, RNG)."""

    step: int = 0  # optimizer steps done
    epoch: int = 0
    batches_done: int = 0  # micro-batches of `epoch` already consumed by this rank
    train_time: float = 0.0  # seconds spent in training steps (no eval, no checkpointing)
    samples: int = 0  # examples trained on, all ranks
    tokens: int = 0  # non-padding tokens trained on, all ranks
    train_log: list = field(default_factory=list)
    evals: list = field(default_factory=list)


class Trainer:
    name = "train"  # the phase, in log lines and the progress bar (train/pretrain.py: "pretrain")

    def __init__(
        self,
        args,
        accelerator,
        model,
        optimizer,
        scheduler,
        loaders: dict,
        sampler,
        labels: list[str],
        fingerprint: dict | None = None,
        chars: bool = False,
        preemption: Preemption | None = None,
    ):
        self.args, self.accelerator = args, accelerator
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.loaders, self.sampler, self.labels = loaders, sampler, labels
        self.state = State()
        self.preemption = preemption or Preemption()  # the run's, installed at its start (train/run.py)
        self.steps_per_epoch = math.ceil(len(loaders["train"]) / args.grad_accum)
        self.total_steps = args.max_steps or max(1, round(args.epochs * self.steps_per_epoch))
        self.checkpoint_path = None  # last checkpoint written or resumed from
        self.fingerprint = fingerprint  # what a checkpoint must match to be continued (train/fingerprint.py)
        self._owner = None  # does this process manage checkpoint directories on its file system?
        self._pending = (0.0, 0, 0)  # loss sum, micro-batches, tokens since the last log line (this rank)
        self.insight = insight.for_trainer(accelerator, model, self.name)  # kit's timeline, straggler sections
        self.resources = resources.Tracker(accelerator)  # per-rank memory, utilisation, samples/s per log line
        self._logged_time = 0.0  # state.train_time at the last log line
        self.chars = chars  # do the batches carry the text's characters (`char_ids`, train/batching.py)?
        # What gradient clipping bounds: the model's choice (train/model.py), not the loop's.
        self.clipped = clipped_parameters(model, accelerator.distributed_type == DistributedType.FSDP)

    @property
    def prefix(self) -> str:
        return "" if self.name == "train" else f"{self.name} "

    # --- resume -----------------------------------------------------------------------------------------------
    def resume(self, path) -> None:
        with self.insight.span("restore") as late:
            self.accelerator.load_state(str(path))
            self.state = State(**checkpoint.read_state(path))
            late["step"] = self.state.step
        self.checkpoint_path = path
        self._logged_time = self.state.train_time
        self.accelerator.print(
            f"{self.prefix}resumed from {path} at step {self.state.step} (epoch {self.state.epoch}, "
            f"{self.state.batches_done} batches in)"
        )

    def set_owner(self, owner: bool) -> None:
        self._owner = owner

    def save(self):
        if self._owner is None:
            self._owner = checkpoint.directory_owner(self.accelerator, self.args.output_dir)
        with self.insight.span("save", step=self.state.step):
            self.checkpoint_path = checkpoint.save(
                self.accelerator,
                self.args.output_dir,
                self.state.step,
                asdict(self.state),
                self.args.keep_checkpoints,
                self._owner,
                self.fingerprint,
            )
        return self.checkpoint_path

    # --- training ---------------------------------------------------------------------------------------------
    def train(self) -> bool:
        """Train to total_steps; False if stopped by preemption (a checkpoint has been saved).

        The whole loop: an epoch's batches, the step (forward, backward, clip, optimizer and schedule, under
        accelerate's accumulation), then between optimizer steps the log line, evaluation, checkpoint and
        preemption check. Signals only set a flag in here; all ranks act on it together at a step boundary."""
        self.model.train()
        self.resources.probe.start()  # the first interval starts with the loop, not with building it
        bar = progress_bar(
            self.total_steps, self.state.step, disable=not self.accelerator.is_main_process, desc=self.name
        )
        acc, state, per_epoch = self.accelerator, self.state, len(self.loaders["train"])
        self.insight.event("train", step=state.step)
        try:
            with self.preemption.deferred():
                if state.step < self.total_steps and not per_epoch:
                    # Empty epochs would come round for ever, deaf to SIGTERM (deferred in here). train/data.py
                    # refuses a split this small at start; this is the loop's own guard.
                    raise RuntimeError(
                        f"{self.name}: the training loader has no batch for this process; nothing to train on"
                    )
                while state.step < self.total_steps:
                    loss_sum, tokens, micro = (
                        torch.zeros((), dtype=torch.float64),
                        torch.zeros((), dtype=torch.int64),
                        0,
                    )
                    mark = time.perf_counter()
                    for batch in self.insight.batches(self._epoch_loader()):
                        with acc.accumulate(self.model):  # the step
                            loss = self.forward(batch).loss
                            acc.backward(loss)
                            if acc.sync_gradients and self.args.max_grad_norm > 0:
                                acc.clip_grad_norm_(self.clipped, self.args.max_grad_norm)
                            self.optimizer.step()
                            if acc.sync_gradients:  # the schedule counts optimizer steps
                                self.scheduler.step()
                            self.optimizer.zero_grad(set_to_none=True)
                        loss_sum += loss.detach().double().cpu()
                        tokens += batch["attention_mask"].sum().cpu()
                        micro += 1
                        state.batches_done += 1
                        if not acc.sync_gradients:
                            continue
                        state.step += 1
                        bar.update(1)
                        state.train_time += time.perf_counter() - mark
                        self.insight.step_done(state.step)
                        self._account(float(loss_sum), int(tokens), micro)
                        loss_sum.zero_(), tokens.zero_()
                        micro = 0
                        if not self._between_steps(end_of_epoch=state.batches_done >= per_epoch):
                            self.insight.event("end", step=state.step)  # preempted: saved, ending
                            return False
                        mark = time.perf_counter()
                        if state.step >= self.total_steps:
                            break
                    if state.batches_done >= per_epoch:
                        state.epoch, state.batches_done = state.epoch + 1, 0
        finally:
            bar.close()
        self.insight.event("end", step=state.step)  # not on an exception: that is a failure, not an end
        return True

    def _epoch_loader(self):
        # The epoch's batch order is a function of (seed, epoch); skip what a resumed run has already seen.
        self.sampler.set_epoch(self.state.epoch)
        self.loaders["train"].set_epoch(self.state.epoch)
        if self.state.batches_done:
            return self.accelerator.skip_first_batches(self.loaders["train"], self.state.batches_done)
        return self.loaders["train"]

    def forward(self, batch):
        """Every forward of the loop, under the planned precision (train/precision.py checks this very path).
        accelerate's own wrapping of the prepared model is not relied on: whether it autocasts depends on its
        version and launch path (on CPU it has been seen not to)."""
        with self.accelerator.autocast():
            return self.model(**batch)

    def _account(self, loss_sum: float, tokens: int, micro: int) -> None:
        """Count samples/tokens; every log_every steps log the mean loss over ranks (collective)."""
        self.state.samples += micro * self.args.batch_size * self.accelerator.num_processes
        loss_total, n_micro, tok = self._pending
        self._pending = (loss_total + loss_sum, n_micro + micro, tok + tokens)
        if self.state.step % self.args.log_every == 0 or self.state.step == self.total_steps:
            self._log_train()

    def _log_train(self) -> None:
        loss_total, n_micro, tok = self._pending
        stats = torch.tensor([loss_total, n_micro, tok], dtype=torch.float64, device=self.accelerator.device)
        stats = self.accelerator.reduce(stats, reduction="sum").cpu()
        self._pending = (0.0, 0, 0)
        self.state.tokens += int(stats[2])
        loss = float(stats[0] / max(stats[1], 1))
        lr = self.scheduler.get_last_lr()[0]
        ranks = self.resources.interval(n_micro * self.args.batch_size, self.state.train_time - self._logged_time)
        self._logged_time = self.state.train_time
        self.state.train_log.append({"step": self.state.step, "loss": loss, "lr": lr, "ranks": ranks})
        if self.accelerator.is_main_process:
            tqdm.write(
                f"{self.prefix}step {self.state.step}/{self.total_steps} epoch {self.state.epoch} "
                f"loss {loss:.4f} lr {lr:.2e}"
            )

    def _between_steps(self, end_of_epoch: bool) -> bool:
        """Eval, checkpoint, preemption; False when preempted (after saving)."""
        step, args = self.state.step, self.args
        last = step >= self.total_steps
        if (args.eval_every and step % args.eval_every == 0) or (not args.eval_every and end_of_epoch) or last:
            self._record_eval()
        if self.preemption.should_stop(self.accelerator, step):
            if self.state.batches_done >= len(self.loaders["train"]):
                self.state.epoch, self.state.batches_done = self.state.epoch + 1, 0
            self.save()
            return False
        if (args.save_every and step % args.save_every == 0) or (not args.save_every and end_of_epoch) or last:
            # The checkpoint is written as if the epoch were already finished, so resuming starts the next one.
            if end_of_epoch:
                self.state.epoch, self.state.batches_done = self.state.epoch + 1, 0
            self.save()
        return True

    def _record_eval(self) -> None:
        with self.insight.span("eval", step=self.state.step):
            result = self.evaluate("validation")
        entry = {
            "step": self.state.step,
            "epoch": self.state.epoch,
            "loss": result["loss"],
            "accuracy": result["accuracy"],
            "examples": result["examples"],
        }
        self.state.evals.append(entry)
        if self.accelerator.is_main_process:
            tqdm.write(
                f"{self.prefix}eval step {entry['step']}: loss {entry['loss']:.4f} "
                f"accuracy {entry['accuracy']:.4f} ({entry['examples']} examples)"
            )
            outputs.append_curve(self.args.output_dir, entry["step"], loss=entry["loss"], accuracy=entry["accuracy"])

    # --- evaluation -------------------------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, split: str = "validation") -> dict:
        """Loss and accuracy over the whole split; every example counted once across ranks."""
        self.model.eval()
        losses, preds, labels = [], [], []
        for batch in self.loaders[split]:
            logits = self.forward(batch).logits.float()
            loss = F.cross_entropy(logits, batch["labels"], reduction="none")
            loss, pred, label = self.accelerator.gather_for_metrics((loss, logits.argmax(-1), batch["labels"]))
            losses.append(loss.cpu())
            preds.append(pred.cpu())
            labels.append(label.cpu())
        self.model.train()
        losses, preds, labels = torch.cat(losses), torch.cat(preds), torch.cat(labels)
        return {
            "loss": float(losses.mean()),
            "accuracy": float((preds == labels).double().mean()),
            "examples": len(labels),
            "preds": preds.tolist(),
            "labels": labels.tolist(),
        }

    def test(self) -> dict:
        with self.insight.span("test"):
            return self.evaluate("test")
