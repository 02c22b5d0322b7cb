"""Mixed precision that proves itself: at start, one forward of the prepared model must compute in the planned dtype.

accelerate decides the precision from kit's config, but a run may silently compute in float32 all the same: whether
accelerate wraps the prepared model's forward in autocast depends on its version and launch path (on CPU it has
been seen not to), and a config's precision may never reach the engine.  The training loop runs every forward under
`accelerator.autocast()` (Trainer.forward), and this check runs that very forward once on every rank, records the
output dtype of every linear layer, and fails the run (exit 3, one line) when any of them is not the planned dtype.
PyTorch's CPU autocast knows bfloat16 only, so fp16 on CPU fails here (kit refuses it before launch; this catches a
launch by hand).
"""

from __future__ import annotations

import torch

PREFIX = "precision check failed: "
EXPECTED = {"no": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def sample_batch(encoded_split, device, length: int = 16, chars: bool = False) -> dict:
    """The first example of a split, cut to `length` tokens (and characters, for an n-gram head that reads them):
    enough for every layer to run once."""
    ids = encoded_split.tokens(0)[:length].long().unsqueeze(0).to(device)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if chars:
        batch["char_ids"] = encoded_split.text_chars(0)[:length].long().unsqueeze(0).to(device)
    return batch


def linear_dtypes(accelerator, model, forward, batch: dict) -> list[torch.dtype]:
    """Collective (one `forward(batch)` of the prepared model on every rank, the training loop's own forward):
    the output dtype of each linear layer."""
    seen: list[torch.dtype] = []
    inner = accelerator.unwrap_model(model)
    hooks = [
        m.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
        for m in inner.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            forward(batch)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
    return seen


def verdict(planned: str, device: str, seen: list[torch.dtype]) -> str | None:
    """None when every linear layer computed in the planned dtype; else the failure line."""
    want = EXPECTED.get(planned)
    if want is None:
        return f"{PREFIX}unknown mixed precision {planned!r} (no, fp16 or bf16)"
    if not seen:
        return f"{PREFIX}the forward ran no linear layer, so the precision cannot be seen"
    wrong = sorted({str(d).removeprefix("torch.") for d in seen if d != want})
    if not wrong:
        return None
    hint = (
        " (PyTorch's CPU autocast supports bf16 only: use bf16 or no on CPU)"
        if (device == "cpu" and planned == "fp16")
        else ""
    )
    return (
        f"{PREFIX}mixed precision {planned} planned but a forward on {device} computes in "
        f"{', '.join(wrong)} ({sum(d != want for d in seen)} of {len(seen)} linear layers){hint}"
    )


def describe(planned: str, device: str, seen: list[torch.dtype]) -> str:
    dtype = str(EXPECTED[planned]).removeprefix("torch.")
    how = "no autocast" if planned == "no" else f"autocast on {device}"
    return (
        f"precision check: mixed precision {planned}: a forward computes in {dtype} ({len(seen)} linear layers, {how})"
    )


def check(accelerator, model, forward, batch: dict) -> str | None:
    """Collective: None when every rank computed in the planned dtype, else the failure line (the same on all)."""
    planned, device = str(accelerator.mixed_precision), accelerator.device.type
    seen = linear_dtypes(accelerator, model, forward, batch)
    problem = verdict(planned, device, seen)
    failed = accelerator.reduce(torch.tensor([1.0 if problem else 0.0], device=accelerator.device), "sum")
    count = int(failed.item())
    if count == 0:
        accelerator.print(describe(planned, device, seen))
        return None
    if problem is None:  # another rank failed; say so with this rank's own view
        return f"{PREFIX}{count} of {accelerator.num_processes} ranks did not compute in the planned {planned}"
    return problem + (f" on {count} of {accelerator.num_processes} ranks" if accelerator.num_processes > 1 else "")


class PrecisionError(RuntimeError):
    """The planned precision did not engage; the message is the run's one line."""


def require(accelerator, trainer, encoded_split) -> None:
    """Collective: raise PrecisionError on every rank unless every rank's training forward (trainer.forward)
    computed in the planned dtype."""
    batch = sample_batch(encoded_split, accelerator.device, chars=trainer.chars)
    problem = check(accelerator, trainer.model, trainer.forward, batch)
    if problem:
        raise PrecisionError(problem)
