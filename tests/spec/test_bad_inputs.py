"""A corpus of bad inputs through the real CLI, without --dry-run: each gives exit code 2, one line naming the field,
and starts and writes nothing. The fixture files are in bad_inputs/; each bad job differs from job.yaml in one place."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

FIXTURES = Path(__file__).resolve().parent / "bad_inputs"
MARKER = "STARTED"  # written by start_marker.py, the entrypoint of every job here
LEAKS = ("Traceback", "constrained-", "function-after", "pydantic", "ValidationError")


def case(id_, args, *expected, xfail=None):
    marks = [pytest.mark.xfail(reason=xfail, strict=True)] if xfail else []
    return pytest.param(args, expected, id=id_, marks=marks)


SSH = ["job.yaml", "--cluster", "cluster_ssh.yaml"]

CASES = [
    # malformed YAML
    # the line named is the mistake's, as a user counts (PyYAML's problem mark is where it gave up: for a quote or
    # bracket left open, a later line)
    case("yaml-malformed", ["job_malformed.yaml"],
         "job_malformed.yaml: line 2: invalid YAML: a '{' opened here is not closed by a '}'"),
    case("yaml-unclosed-quote", ["job_yaml_unclosed_quote.yaml"],
         "job_yaml_unclosed_quote.yaml: line 3: invalid YAML: a quote opened here is never closed"),
    case("yaml-deeper-indent", ["job_yaml_deeper_indent.yaml"],
         "job_yaml_deeper_indent.yaml: line 4: invalid YAML: a ':' that cannot be here: this line is indented deeper"),
    case("yaml-bad-dedent", ["job_yaml_bad_dedent.yaml"],
         "job_yaml_bad_dedent.yaml: line 4: invalid YAML: this line's indentation does not match the lines above"),
    case("yaml-tab", ["job_yaml_tab.yaml"], "job_yaml_tab.yaml: line 3: invalid YAML: a tab; YAML indents with spaces"),
    case("yaml-missing-colon", ["job_yaml_missing_colon.yaml"],
         "job_yaml_missing_colon.yaml: line 4: invalid YAML: a key without its ':' (write key: value)"),
    case("yaml-malformed-cluster", ["job.yaml", "--cluster", "cluster_malformed.yaml"], "cluster_malformed.yaml",
         "invalid YAML"),
    case("yaml-duplicate-key", ["job_duplicate_key.yaml"], "job_duplicate_key.yaml", "duplicate key 'nodes'"),
    case("yaml-top-level-list", ["job_list.yaml"], "job_list.yaml", "top level", "list"),
    case("yaml-empty", ["job_empty.yaml"], "job_empty.yaml", "top level", "empty"),
    # unknown keys at every level
    case("unknown-job-key", ["job_unknown_key.yaml"], "job_unknown_key.yaml: unknown key 'epochs'",
         "valid keys here:", "nodes"),
    case("unknown-job-key-close", ["job_unknown_key_close.yaml"],
         "job_unknown_key_close.yaml: unknown key 'node'; did you mean 'nodes'?"),
    case("unknown-deepspeed-key", ["job_unknown_deepspeed_key.yaml"],
         "unknown key 'deepspeed.stage3_prefetch_bucket_size'", "zero_stage"),
    case("unknown-fsdp-key", ["job_unknown_fsdp_key.yaml"], "unknown key 'fsdp.sharding_strategy'", "version"),
    case("unknown-entrypoint-key", ["job_unknown_entrypoint_key.yaml"], "unknown key 'entrypoint.argv'", "module"),
    case("unknown-cluster-key", ["job.yaml", "--cluster", "cluster_unknown_key.yaml"],
         "cluster_unknown_key.yaml: unknown key 'gpus'", "gpus_per_node"),
    case("unknown-host-key", ["job.yaml", "--cluster", "cluster_unknown_host_key.yaml"],
         "unknown key 'hosts[0].ip'"),
    case("unknown-slurm-key", ["job.yaml", "--cluster", "cluster_unknown_slurm_key.yaml"],
         "unknown key 'slurm.nodes'", "partition"),
    case("unknown-ssh-key", ["job.yaml", "--cluster", "cluster_unknown_ssh_key.yaml"],
         "unknown key 'ssh.password'", "identity_file"),
    case("unknown-master-port-key", ["job.yaml", "--cluster", "cluster_unknown_master_port_key.yaml"],
         "unknown key 'master_port.offset'"),
    # wrong types
    case("nodes-string", ["job_nodes_string.yaml"], "job_nodes_string.yaml: nodes:", "'2'"),
    case("nodes-zero", ["job_nodes_zero.yaml"], "nodes:", "greater than or equal to 1"),
    # a bound that nothing can meet: python and torch alone take seconds to start
    case("rendezvous-tiny", ["job_rendezvous_tiny.yaml"], "timeouts.rendezvous:", "greater than or equal to 5",
         "(got 0.5)"),
    case("hang-tiny", ["job_hang_tiny.yaml"], "timeouts.hang:", "greater than or equal to 5"),
    case("gpus-negative", ["job.yaml", "--cluster", "cluster_gpus_negative.yaml"], "gpus_per_node:", "-1"),
    case("env-value-int", ["job_env_int.yaml"], "env", "valid string", "(got 4)"),
    case("args-not-list", ["job_args_not_list.yaml"], "args:", "valid list"),
    # wrong values
    case("strategy-zero", ["job_strategy_zero.yaml"], "strategy:", "'zero'"),
    case("mixed-precision-bf32", ["job_mixed_precision_bf32.yaml"], "mixed_precision:", "'bf32'"),
    case("zero-stage-7", ["job_zero_stage_7.yaml"], "deepspeed.zero_stage:", "7"),
    case("offload-device-gpu", ["job_offload_gpu.yaml"], "deepspeed.offload_optimizer:", "'gpu'"),
    case("fsdp-version-3", ["job_fsdp_version_3.yaml"], "fsdp.version:", "3"),
    case("name-with-space", ["job_bad_name.yaml"], "name:", "'my job'"),
    case("backend-kubernetes", ["job.yaml", "--cluster", "cluster_backend_k8s.yaml"], "backend:", "'kubernetes'"),
    case("master-port-privileged", ["job.yaml", "--cluster", "cluster_master_port_low.yaml"],
         "master_port:", "1024"),
    # impossible shapes
    case("3-nodes-on-2-hosts", [*SSH, "--nodes", "3"], "nodes:", "3 nodes", "2 hosts"),
    case("gpus-beyond-host", [*SSH, "--gpus", "8"], "gpus_per_node:", "8 GPUs", "box-a has 4"),
    case("fsdp-on-cpu", ["job.yaml", "--strategy", "fsdp"], "strategy: fsdp needs GPUs"),
    case("fp16-on-cpu", ["job.yaml", "--mixed-precision", "fp16"], "mixed_precision: fp16 needs GPUs"),
    case("fp16-on-cpu-set", ["job.yaml", "--set", "mixed_precision=fp16"], "mixed_precision: fp16 needs GPUs"),
    case("global-batch-indivisible", ["job_global_batch.yaml"], "global_batch_size: 10", "multiple of 8"),
    case("offload-param-needs-stage-3", ["job_offload_param_stage2.yaml"], "deepspeed:",
         "offload_param needs zero_stage 3"),
    case("entrypoint-list", ["job_entrypoint_list.yaml"], "job_entrypoint_list.yaml: entrypoint: ['start_marker.py'] "
         "is not a script path (entrypoint: train.py), a module (entrypoint: -m pkg.train), or the mapping "
         "{script: PATH} or {module: NAME}"),
    case("entrypoint-string-with-args", ["job.yaml", "--set", "entrypoint=start_marker.py --lr 3"],
         "is not one script path or -m MODULE", "the job's arguments go in args: [...]"),
    case("module-and-script", ["job_module_and_script.yaml"], "entrypoint:", "exactly one"),
    case("ssh-cluster-without-hosts", ["job.yaml", "--cluster", "cluster_ssh_no_hosts.yaml"], "hosts"),
    # a job file and a cluster file the wrong way round
    case("job-and-cluster-swapped", ["cluster_ssh.yaml", "--cluster", "job.yaml"],
         "cluster_ssh.yaml looks like a cluster file (it has backend:); did you swap JOB and --cluster?"),
    case("job-given-as-cluster", ["job.yaml", "--cluster", "job.yaml"],
         "job.yaml looks like a job file (it has entrypoint:); did you swap JOB and --cluster?"),
    # a path where a module name goes
    case("module-given-as-path", ["-m", "pkg/file.py"],
         "-m pkg/file.py: -m takes a module name (pkg.file), not a path; use kit submit pkg/file.py or -m pkg.file"),
    case("module-given-as-file", ["-m", "start_marker.py"], "-m takes a module name (start_marker), not a path"),
    case("module-path-in-job", ["job.yaml", "--set", "entrypoint={module: pkg/file.py}"],
         "'pkg/file.py' is a path, not a module name; use {script: pkg/file.py} or {module: pkg.file}"),
    # missing files
    case("missing-job-file", ["no_such_job.yaml"], "job no_such_job.yaml: no such file"),
    case("missing-cluster-file", ["job.yaml", "--cluster", "no_such_cluster.yaml"],
         "cluster no_such_cluster.yaml: no such file"),
    case("missing-deepspeed-json", ["job_ds_missing.yaml"],
         "deepspeed.config_file <workdir>/missing_ds.json: no such file"),
    case("job-file-is-directory", ["."], "job .: is a directory"),
    case("missing-ssh-identity-file", ["job.yaml", "--cluster", "cluster_ssh_missing_key.yaml"],
         "ssh.identity_file <workdir>/no_such_key: no such file", "ssh-agent"),
    case("missing-ssh-config-file", [*SSH, "--set", "cluster.ssh.config_file=no_such_ssh_config"],
         "ssh.config_file <workdir>/no_such_ssh_config: no such file", "~/.ssh/config"),
    # bad DeepSpeed JSON
    case("deepspeed-json-invalid", ["job_ds_invalid.yaml"], "deepspeed.config_file <workdir>/ds_invalid.json: line 4",
         "invalid JSON"),
    case("deepspeed-json-unknown-key", ["job_ds_unknown_key.yaml"],
         "ds_unknown_key.json: unknown key 'zero_optimisation'", "zero_optimization"),
    case("deepspeed-json-batch-mismatch", ["job_ds_batch.yaml"], "ds_batch_mismatch.json: train_batch_size 16",
         "world size 2 = 8"),
    case("deepspeed-json-precision-mismatch", ["job_ds_precision.yaml"], "ds_bf16.json: bf16.enabled", "'no'"),
    # bad command-line values
    case("set-without-equals", ["job.yaml", "--set", "nodes"], "--set 'nodes'", "key=value"),
    case("set-with-space", ["job.yaml", "--set", "nodes", "2"],
         "--set nodes 2: --set takes KEY=VALUE; did you mean --set nodes=2?"),
    case("set-with-space-after-equals-form", ["job.yaml", "--set=procs_per_node", "1"],
         "--set procs_per_node 1: --set takes KEY=VALUE; did you mean --set procs_per_node=1?"),
    case("set-unknown-key", ["job.yaml", "--set", "epochs=3"], "unknown key 'epochs'"),
    case("set-wrong-type", ["job.yaml", "--set", "deepspeed.zero_stage=three"],
         "--set deepspeed.zero_stage=three: ", "0, 1, 2 or 3"),
    case("set-unknown-cluster-key", ["job.yaml", "--set", "cluster.gpus=8"],
         "--set cluster.gpus=8: unknown key 'cluster.gpus'; did you mean 'cluster.gpus_per_node'?"),
    case("set-close-key", ["job.yaml", "--set", "node=2"], "--set node=2: unknown key 'node'; did you mean 'nodes'?"),
    # a job's own argument given as a field
    case("set-the-jobs-argument", ["job.yaml", "--set", "lr=0.1"], "--set lr=0.1: unknown key 'lr'",
         "if lr is an argument of your script, give it after --: kit submit JOB -- --lr 0.1"),
    case("nodes-abc", ["job.yaml", "--nodes", "abc"], "--nodes", "'abc'"),
    # a plan of 10^8 nodes used to run out of memory
    case("nodes-huge", ["job.yaml", "--nodes", "99999999"], "nodes: 99999999", "at most 10000"),
    # a newline in a value the message quotes stays one line
    case("script-path-newline", ["job.yaml", "--set", "entrypoint={script: \"no_such.py\\nx\"}"],
         "no_such.py\\nx"),
    case("strategy-flag-zero", ["job.yaml", "--strategy", "zero"], "--strategy zero: ", "'ddp', 'deepspeed' or 'fsdp'"),
    case("gpus-negative", ["job.yaml", "--gpus", "-1"], "--gpus -1: ", "greater than or equal to 0"),
    case("port-privileged", ["job.yaml", "--port", "80"], "--port 80: ", "greater than or equal to 1024"),
    case("abbreviated-flag", ["job.yaml", "--gpu", "2"], "unrecognized arguments: --gpu 2", "did you mean --gpus"),
    case("node-without-dry-run", ["job.yaml", "--node", "2"], "--node 2 prints node K", "the number of nodes is --nodes"),
    case("format-without-dry-run", ["job.yaml", "--format", "json"], "--format json", "needs --dry-run"),
    case("flag-and-set-conflict", ["job.yaml", "--nodes", "2", "--set", "nodes=3"],
         "nodes: --nodes 2 conflicts with --set nodes=3"),
    case("set-twice-conflict", ["job.yaml", "--set", "procs_per_node=1", "--set", "procs_per_node=2"],
         "procs_per_node: --set procs_per_node=1 conflicts with --set procs_per_node=2"),
    case("run-id-trailing-newline", ["job.yaml", "--run-id", "r\n"], "run id 'r\\n'"),
    case("slurm-extra-sbatch-newline", ["job.yaml", "--cluster", "cluster_slurm.yaml", "--set",
                                        'cluster.slurm.extra_sbatch=["--comment=x\\necho INJECTED > pwned.txt"]'],
         "--set cluster.slurm.extra_sbatch=", "control character"),
    case("slurm-account-newline", ["job.yaml", "--cluster", "cluster_slurm.yaml", "--set",
                                   'cluster.slurm.account="acct\\nid"'], "--set cluster.slurm.account=", "control character"),
    case("run-root-newline", ["job.yaml", "--set", 'cluster.run_root="runs\\necho x"'], "--set cluster.run_root=",
         "control character"),
    case("ssh-connect-timeout-inf", [*SSH, "--set", "cluster.ssh.connect_timeout=.inf"], "--set cluster.ssh.connect_timeout=.inf: ",
         "finite number"),
    # ... and in the cluster file, which kit's early logins read before the schema: no thread's traceback above it
    case("ssh-connect-timeout-inf-in-file", ["job.yaml", "--cluster", "cluster_ssh_timeout_inf.yaml"],
         "cluster_ssh_timeout_inf.yaml: ssh.connect_timeout: Input should be a finite number (got inf)"),
    case("ssh-connect-timeout-huge-in-file", ["job.yaml", "--cluster", "cluster_ssh_timeout_huge.yaml"],
         "cluster_ssh_timeout_huge.yaml: ssh.connect_timeout: Input should be less than or equal to 600"),
    case("ssh-host-timeout-nan", [*SSH, "--set", "cluster.ssh.host_timeout=.nan"], "--set cluster.ssh.host_timeout=.nan: ",
         "finite number"),
    case("grid-too-large", ["job.yaml", "--sweep", "sweep_huge.yaml"], "sweep_huge.yaml",
         "= 1000000000000 trials is above the cap of 10000"),
    case("sweep-id-shaped-like-a-trial", ["job.yaml", "--sweep", "sweep_small.yaml", "--run-id", "mine-t0"],
         "--run-id mine-t0", "may not end in -t<N>"),
    # what a run checks before it starts, and the dry-run too (DRY_RUN_TOO below)
    case("script-missing", ["no_such_script.py"],
         "entrypoint.script no_such_script.py: no such file in the node's workdir <workdir>"),
    case("module-missing", ["-m", "no_such_module_here"], "entrypoint.module no_such_module_here: not importable"),
    case("script-syntax-error", ["syntax_error.py"],
         "kit: error: syntax_error.py:3: SyntaxError: invalid syntax (the job's script); fix it before submitting"),
    case("secret-env-unset", ["job_secret_env.yaml"],
         "secret_env: KIT_TEST_UNSET_SECRET not set in your environment; export it first"),
    case("deepspeed-cpu-without-gloo", ["accelerator_no_gloo.py", "--strategy", "deepspeed", "--procs-per-node", "2"],
         "strategy deepspeed on CPU nodes: accelerator_no_gloo.py builds an Accelerator but never asks for the gloo "
         "process group", "InitProcessGroupKwargs(backend=\"gloo\")", "--strategy ddp"),
    case("deepspeed-cpu-without-gloo-in-helper", ["uses_helper.py", "--strategy", "deepspeed"],
         "uses_helper.py (through helper_builds_accelerator.py) builds an Accelerator but never asks for the gloo"),
    # reserved environment
    case("reserved-env-kit-run-id", ["job_env_reserved.yaml"], "job_env_reserved.yaml: env:", "KIT_RUN_ID", "set by kit"),
    case("reserved-env-in-cluster", ["job.yaml", "--cluster", "cluster_env_reserved.yaml"],
         "env:", "KIT_EXPECTED_WORLD_SIZE", "set by kit"),
    case("reserved-env-in-cluster-names-file", ["job.yaml", "--cluster", "cluster_env_reserved.yaml"],
         "cluster_env_reserved.yaml"),
]


def kit(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launcher", "submit", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def workdir(tmp_path):
    for path in FIXTURES.iterdir():
        shutil.copy(path, tmp_path / path.name)
    # Written here, not kept as a fixture file: a .py file that does not compile would trip tools over the tree.
    (tmp_path / "syntax_error.py").write_text("import os\n\ndef main(:\n    pass\n")
    return tmp_path


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("args, expected", CASES)
def test_bad_input_exits_2_with_one_line_and_starts_nothing(args, expected, workdir):
    before = listing(workdir)
    result = kit(args, workdir)
    err = result.stderr
    assert result.returncode == 2, err
    assert result.stdout == ""
    assert err.startswith("kit: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert not any(leak in err for leak in LEAKS), err
    for text in expected:
        # <workdir>: errors about files show the absolute path tried.
        assert text.replace("<workdir>", str(workdir)) in err, err
    assert listing(workdir) == before
    assert not (workdir / "runs").exists() and not (workdir / MARKER).exists()


@pytest.mark.parametrize("args, header, lines", [
    (["job_three_mistakes.yaml"], "job_three_mistakes.yaml: 3 mistakes, each on a line below",
     ["job_three_mistakes.yaml: entrypoint: ['start_marker.py'] is not a script path",
      "job_three_mistakes.yaml: strategy: Input should be 'ddp', 'deepspeed' or 'fsdp' (got 'zero')",
      "job_three_mistakes.yaml: unknown key 'node'; did you mean 'nodes'?"]),
    (["job.yaml", "--cluster", "cluster_two_mistakes.yaml"], "cluster_two_mistakes.yaml: 2 mistakes",
     ["cluster_two_mistakes.yaml: unknown key 'hosts[0].gpu'; did you mean 'hosts[0].gpus'?",
      "cluster_two_mistakes.yaml: hosts[1].gpus: Input should be a valid integer (got 'four')"]),
], ids=["job", "cluster"])
def test_a_files_mistakes_are_told_together_one_a_line(args, header, lines, workdir):
    before = listing(workdir)
    result = kit(args, workdir)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    got = result.stderr.splitlines()
    assert len(got) == 1 + len(lines) and all(line.startswith("kit: error: ") for line in got), result.stderr
    assert got[0].startswith(f"kit: error: {header}")
    for line, expected in zip(got[1:], lines):
        assert line.startswith(f"kit: error: {expected}"), result.stderr
    assert not any(leak in result.stderr for leak in LEAKS), result.stderr
    assert listing(workdir) == before and not (workdir / MARKER).exists()


@pytest.mark.parametrize("job, mapping", [("job_entrypoint_string.yaml", {"script": "start_marker.py"}),
                                          ("job_entrypoint_module_string.yaml", {"module": "start_marker"})],
                         ids=["script", "module"])
def test_an_entrypoint_string_plans_as_its_mapping(job, mapping, workdir):
    # `entrypoint: FILE` is {script: FILE}, `entrypoint: -m NAME` is {module: NAME}: the same plan to the byte.
    (workdir / "mapping.yaml").write_text(yaml.safe_dump({"name": "probe", "entrypoint": mapping,
                                                          "procs_per_node": 2}))
    short, long = (kit([path, "--dry-run", "--run-id", "r", "--format", "json"], workdir)
                   for path in (job, "mapping.yaml"))
    assert short.returncode == 0, short.stderr
    assert long.returncode == 0, long.stderr
    assert json.loads(short.stdout) == json.loads(long.stdout)


def test_corpus_size():
    assert len(CASES) >= 30


@pytest.mark.parametrize("args", [["job.yaml"], SSH, ["job_ds.yaml"], ["job.yaml", "--set", "nodes=2"]],
                         ids=["job", "ssh-cluster", "deepspeed-json", "set"])
def test_base_inputs_are_valid(args, workdir):
    # Each bad input is one change away from these; they plan fine, so the failures above come from that change.
    result = kit([*args, "--dry-run", "--run-id", "r"], workdir)
    assert result.returncode == 0, result.stderr
    assert "kit plan: run r" in result.stdout
    assert not (workdir / "runs").exists() and not (workdir / MARKER).exists()


# On an SSH cluster whose hosts kit logs in to early, the specs are loaded in a forked planner
# (launcher/commands/planner.py): the same one line as in kit's own process (where a cluster override sends
# it), and no process left behind.
THROUGH_THE_PLANNER = ["unknown-job-key", "nodes-string", "zero-stage-7", "missing-deepspeed-json",
                       "deepspeed-json-unknown-key", "set-unknown-key", "3-nodes-on-2-hosts", "gpus-beyond-host",
                       "missing-ssh-identity-file"]


def _processes_in(directory: Path) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(directory):
                found.append(pid)
        except OSError:
            continue
    return found


@pytest.mark.parametrize("args, expected", [c.values for c in CASES if c.id in THROUGH_THE_PLANNER],
                         ids=[c.id for c in CASES if c.id in THROUGH_THE_PLANNER])
def test_bad_input_through_the_planner_is_the_same_one_line(args, expected, workdir):
    if "--cluster" not in args:
        args = [*args, "--cluster", "cluster_ssh.yaml"]
    before = listing(workdir)
    result = kit(args, workdir)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("kit: error: ") and result.stderr.count("\n") == 1, result.stderr
    for text in expected:
        assert text.replace("<workdir>", str(workdir)) in result.stderr, result.stderr
    assert listing(workdir) == before
    assert _processes_in(workdir) == []
    in_process = kit([*args, "--set", "cluster.name=boxes"], workdir)   # an override: no early logins
    assert in_process.stderr == result.stderr


# `--dry-run` checks everything a run checks before it starts, except reaching hosts: the same one line.
DRY_RUN_TOO = ["script-missing", "module-missing", "script-syntax-error", "secret-env-unset",
               "deepspeed-cpu-without-gloo", "deepspeed-cpu-without-gloo-in-helper"]


@pytest.mark.parametrize("args, expected", [c.values for c in CASES if c.id in DRY_RUN_TOO], ids=DRY_RUN_TOO)
def test_the_dry_run_refuses_what_the_run_refuses_in_the_same_line(args, expected, workdir):
    before = listing(workdir)
    run, dry = kit(args, workdir), kit([*args, "--dry-run"], workdir)
    assert (dry.returncode, dry.stdout, dry.stderr) == (2, "", run.stderr), dry.stderr
    assert listing(workdir) == before


def test_a_program_that_asks_for_gloo_or_builds_no_accelerator_may_run_deepspeed_on_cpu(workdir):
    # The word gloo in the arguments counts as asking (a --backend gloo the script reads); no Accelerator at all
    # (plain torch.distributed picks gloo on CPU itself) is not accelerate's trap.
    for args in (["accelerator_no_gloo.py", "--", "--backend", "gloo"], ["start_marker.py"]):
        result = kit([*args[:1], "--strategy", "deepspeed", "--procs-per-node", "2", "--dry-run", *args[1:]],
                     workdir)
        assert result.returncode == 0, result.stderr


def test_a_dry_run_needs_no_key_file(workdir):
    # The plan needs no key: the example configs name ~/.ssh/id_ed25519, which a planning machine may lack.
    result = kit(["job.yaml", "--cluster", "cluster_ssh_missing_key.yaml", "--dry-run", "--run-id", "r"], workdir)
    assert result.returncode == 0, result.stderr
    assert "kit plan: run r" in result.stdout
