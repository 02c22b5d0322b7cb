"""Gradient accumulation: one number, whatever the strategy.

The number can arrive from three places: kit exports the job's ``gradient_accumulation_steps`` as
``ACCELERATE_GRADIENT_ACCUMULATION_STEPS`` (every strategy), kit's DeepSpeed JSON carries it as
``gradient_accumulation_steps``, and ``--grad-accum`` may set it by hand.  accelerate silently lets the
environment variable override the value given to ``Accelerator(...)``, and under DeepSpeed it switches to the
JSON's value at ``prepare()``.  If the loop counted with another number, an "epoch" would be the wrong number of
batches and the LR schedule the wrong length.  So the value accelerate will really use is taken first, a
``--grad-accum`` that disagrees with it is refused, and the value is pinned in accelerate (and in the DeepSpeed
config) before ``prepare()``; the loop, the schedule and the checkpoint fingerprint all read ``args.grad_accum``.
"""

from __future__ import annotations

import os

ENV = "ACCELERATE_GRADIENT_ACCUMULATION_STEPS"


class AccumulationError(ValueError):
    """The sources of the accumulation steps disagree."""


def _deepspeed_value(accelerator):
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    if plugin is None:
        return None, None
    return plugin, plugin.deepspeed_config.get("gradient_accumulation_steps", "auto")


def launcher_value(accelerator, env=os.environ) -> tuple[int, str] | None:
    """(steps, where) as the launcher configured them.  Under DeepSpeed the JSON's number wins, because accelerate
    switches to it at prepare() whatever else says; "auto" there is filled from the environment variable."""
    _, ds = _deepspeed_value(accelerator)
    if isinstance(ds, int) or (isinstance(ds, str) and ds.isdigit()):
        return int(ds), "the DeepSpeed config's gradient_accumulation_steps"
    if str(env.get(ENV, "")).strip().isdigit():
        return int(env[ENV]), f"{ENV} (the job's gradient_accumulation_steps)"
    return None


def resolve(requested: int | None, accelerator, env=os.environ) -> int:
    """The one accumulation count for this run; pins it in accelerate before prepare().  Raises on a conflict."""
    configured = launcher_value(accelerator, env)
    if requested is not None and configured is not None and requested != configured[0]:
        raise AccumulationError(
            f"--grad-accum {requested} but {configured[1]} is {configured[0]}; set gradient "
            "accumulation in one place (the job's gradient_accumulation_steps)"
        )
    steps = configured[0] if configured is not None else (requested or 1)
    accelerator.gradient_accumulation_steps = steps  # what accumulate() counts with
    plugin, _ = _deepspeed_value(accelerator)
    if plugin is not None:
        # "auto" would be filled at prepare() from the plugin's own default; fill it with the agreed value now.
        plugin.deepspeed_config["gradient_accumulation_steps"] = steps
    return steps
