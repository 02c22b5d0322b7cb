"""The job spec: what to run and how to distribute it (jobs/*.yaml)."""

from typing import Annotated, Literal, Optional

from pydantic import Field, StringConstraints, field_validator, model_validator

from launcher.spec.base import ENV_NAME_PATTERN, NAME_PATTERN, StrictModel, no_reserved_env
from launcher.spec.sweep import SweepSpec

Strategy = Literal["ddp", "deepspeed", "fsdp"]
MixedPrecision = Literal["no", "fp16", "bf16"]
OffloadDevice = Literal["none", "cpu", "nvme"]
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME_PATTERN)]
PositiveInt = Annotated[int, Field(ge=1)]


def yaml_no_to_str(value):
    """YAML 1.1 reads a bare `no` as False; `mixed_precision: no` means the string."""
    return "no" if value is False else value


_ENTRYPOINT_FORMS = (
    "a script path (entrypoint: train.py), a module (entrypoint: -m pkg.train), or the mapping "
    "{script: PATH} or {module: NAME}; the job's arguments go in args: [...]"
)


class Entrypoint(StrictModel):
    """What each rank runs. In a job file, `entrypoint: train.py` is short for `{script: train.py}` and
    `entrypoint: -m pkg.train` for `{module: pkg.train}`; nothing else is read from a string (arguments go in
    `args:`)."""

    module: Optional[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.]*$")]] = None
    script: Optional[str] = None

    @model_validator(mode="before")
    @classmethod
    def from_string(cls, value):
        """The short forms of a job file: one script path, or `-m` and one module name."""
        if isinstance(value, str):
            words = value.split()
            if len(words) == 2 and words[0] == "-m":
                return {"module": words[1]}
            if len(words) == 1 and words[0] == value and value != "-m":
                return {"script": value}
            raise ValueError(f"{value!r} is not one script path or -m MODULE; write {_ENTRYPOINT_FORMS}")
        if not isinstance(value, (dict, Entrypoint)):
            raise ValueError(f"{value!r} is not {_ENTRYPOINT_FORMS}")
        return value

    @field_validator("module", mode="before")
    @classmethod
    def not_a_path(cls, value):
        """`module: pkg/train.py` is a path: say which key takes it (the pattern alone would only quote a regex)."""
        if isinstance(value, str) and ("/" in value or value.endswith(".py")):
            name = value.removesuffix(".py").replace("/", ".").strip(".")
            raise ValueError(f"{value!r} is a path, not a module name; use {{script: {value}}} or {{module: {name}}}")
        return value

    @model_validator(mode="after")
    def exactly_one(self):
        if (self.module is None) == (self.script is None):
            raise ValueError("set exactly one of entrypoint.module or entrypoint.script")
        return self


class DeepSpeedOptions(StrictModel):
    zero_stage: Literal[0, 1, 2, 3] = 2
    offload_optimizer: OffloadDevice = "none"
    offload_param: OffloadDevice = "none"
    nvme_path: Optional[str] = None
    gradient_clipping: Optional[Annotated[float, Field(gt=0)]] = None
    zero3_init: bool = False
    zero3_save_16bit_model: bool = False
    # A user's own DeepSpeed JSON; exclusive with the options above.
    config_file: Optional[str] = None

    @model_validator(mode="after")
    def consistent(self):
        if self.config_file is not None:
            others = sorted(self.model_fields_set - {"config_file", "zero3_init"})
            if others:
                raise ValueError(f"config_file excludes {', '.join(others)}: put them in the JSON file")
        if "nvme" in (self.offload_optimizer, self.offload_param) and not self.nvme_path:
            raise ValueError("offload to nvme needs nvme_path")
        if self.offload_param != "none" and self.zero_stage != 3:
            raise ValueError("offload_param needs zero_stage 3")
        if self.offload_optimizer != "none" and self.zero_stage == 0:
            raise ValueError("offload_optimizer needs zero_stage 1, 2 or 3")
        return self


class FsdpOptions(StrictModel):
    version: Literal[1, 2] = 2
    # FSDP1: sharding strategy; FSDP2 expresses the same as reshard_after_forward.
    sharding: Literal["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"] = "FULL_SHARD"
    reshard_after_forward: bool = True
    auto_wrap_policy: Literal["TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"] = "TRANSFORMER_BASED_WRAP"
    transformer_layer_cls: Optional[str] = None
    min_num_params: Optional[PositiveInt] = None
    state_dict_type: Literal["SHARDED_STATE_DICT", "FULL_STATE_DICT"] = "SHARDED_STATE_DICT"
    cpu_offload: bool = False
    activation_checkpointing: bool = False

    @model_validator(mode="after")
    def consistent(self):
        if self.version == 2 and "sharding" in self.model_fields_set:
            raise ValueError("sharding is for fsdp version 1; version 2 uses reshard_after_forward")
        if self.version == 1 and "reshard_after_forward" in self.model_fields_set:
            raise ValueError("reshard_after_forward is for fsdp version 2; version 1 uses sharding")
        if self.min_num_params is not None and self.auto_wrap_policy != "SIZE_BASED_WRAP":
            raise ValueError("min_num_params needs auto_wrap_policy SIZE_BASED_WRAP")
        if self.transformer_layer_cls is not None and self.auto_wrap_policy != "TRANSFORMER_BASED_WRAP":
            raise ValueError("transformer_layer_cls needs auto_wrap_policy TRANSFORMER_BASED_WRAP")
        return self


class Timeouts(StrictModel):
    """Bounds on a run's waits, in seconds (every wait has one)."""

    # The world must form (every node's launcher past its rendezvous) within this; else kit stops the run and
    # says which node could not reach the master, and why.
    # At least 5 s: python and torch alone take about that to start on a node, so less can only fail.
    rendezvous: Annotated[float, Field(ge=5, le=86400)] = 300.0
    # No rank makes progress (no output from any rank) for this long: kit records every rank's stack, names the
    # stuck ranks and stops the run. Unset: off.
    hang: Optional[Annotated[float, Field(ge=5, le=7 * 86400)]] = None


class JobSpec(StrictModel):
    name: Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
    entrypoint: Entrypoint
    # Each node's launcher: `accelerate launch`, or torchrun with the settings accelerate's launcher would hand the
    # job in its environment (render/torchrun.py); the training code sees the same either way.
    launcher: Literal["accelerate", "torchrun"] = "accelerate"
    args: list[str] = []
    nodes: PositiveInt = 1
    # None: take the cluster's gpus_per_node. 0: a CPU job.
    gpus_per_node: Optional[Annotated[int, Field(ge=0)]] = None
    # Processes per node on CPU clusters (on GPUs it is one per GPU).
    procs_per_node: Optional[PositiveInt] = None
    strategy: Strategy = "ddp"
    mixed_precision: MixedPrecision = "no"
    gradient_accumulation_steps: PositiveInt = 1
    # Pipeline parallelism in the training module: the model cut into this many stages across the world's
    # processes (data parallelism across the remaining factor); micro-batches per step (default: the larger of
    # the stages and gradient_accumulation_steps).
    pipeline_stages: PositiveInt = 1
    pipeline_microbatches: Optional[PositiveInt] = None
    batch_size_per_device: Optional[PositiveInt] = None
    global_batch_size: Optional[PositiveInt] = None
    deepspeed: DeepSpeedOptions = DeepSpeedOptions()
    fsdp: FsdpOptions = FsdpOptions()
    env: dict[EnvName, str] = {}
    _env_not_reserved = field_validator("env", mode="after")(no_reserved_env)
    # Names whose values come from the submitting shell's environment at run time, never stored or printed.
    secret_env: list[EnvName] = []
    dynamo_backend: Optional[Literal["no", "eager", "aot_eager", "inductor", "cudagraphs"]] = None
    timeouts: Timeouts = Timeouts()
    # Start the world again (on a fresh port; the job resumes from its checkpoint) up to this many times after a
    # failure that is not the job's own verdict: a node lost, a rank killed by a signal, a world that did not
    # form, a hang.
    restarts: Annotated[int, Field(ge=0, le=100)] = 0
    # Before training, every node's Python, library versions and code hash are compared (render/envcheck.py):
    # strict stops a run whose nodes differ (exit 2), warn says the table and trains, off skips it.
    env_check: Literal["strict", "warn", "off"] = "strict"
    # A hyperparameter sweep over this job (see launcher/sweeps); `kit submit` then runs one run per trial.
    sweep: Optional[SweepSpec] = None

    _no_is_string = field_validator("mixed_precision", mode="before")(yaml_no_to_str)

    @model_validator(mode="after")
    def batch_consistent(self):
        if self.global_batch_size is not None and self.batch_size_per_device is None:
            raise ValueError("global_batch_size needs batch_size_per_device")
        return self
