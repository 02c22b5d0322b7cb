"""The data pipeline check across a real world of 2 CPU processes on 2 'nodes' that share no files: a node whose
cache holds another tokenizer of the same size (what an old nondeterministic cache looked like) stops both, with one
line naming that node, under the ordinary loop and under pipeline parallelism (where nodes that agree train)."""

import json
import re
import shutil

from tests.train.launch import run_private_nodes
from tests.train.support import synthetic_rows, write_csv
from train import data, tokenizing


def _args(data_path, out="out", *extra):
    # Relative paths: node 0 works under host0/, node 1 under host1/.
    return ["--data", str(data_path), "--output-dir", str(out), "--cache-dir", "cache", "--model", "tiny",
            "--vocab-size", "200", "--max-length", "32", "--batch-size", "8", "--eval-batch-size", "16",
            "--resume", "no", "--no-save-model", "--pretrain-epochs", "0", *extra]


def _plant_swapped_tokenizer(tmp_path, data_path):
    """Node 1's cache gets the tokenizer of this data with two ids swapped: same size, other ids for '很' and '好'."""
    splits = data.load_splits(str(data_path), "text", "label", 42, 0.1, 0.1)
    tok_dir = tokenizing.trained_tokenizer_dir(tmp_path / "host1" / "cache", splits, 200)
    spec = json.loads((tok_dir / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    vocab["很"], vocab["好"] = vocab["好"], vocab["很"]
    (tok_dir / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))


def _assert_stopped_by_the_data_check(results, tmp_path):
    out = results[0].stdout + results[1].stdout
    assert [r.returncode for r in results] != [0, 0], out[-4000:]
    lines = [line for line in out.splitlines() if "the data pipeline differs" in line]
    assert len(lines) == 1, out[-4000:]   # the main process alone says it
    assert re.search(r"world check failed: the data pipeline differs between nodes: tokenizer [0-9a-f]{10} on node 0 "
                     r"\([^)]+\), [0-9a-f]{10} on node 1 \([^)]+\); delete the cache \(cache\) or give every node "
                     r"the same --cache-dir$", lines[0]), lines[0]
    # Every rank exits with the world check's code (torchrun reports each worker's), and none trained.
    for result in results:
        assert re.search(r"exitcode\s*:\s*3\b", result.stdout), result.stdout[-3000:]
    assert not re.search(r"\bstep \d+/", out)
    assert not list(tmp_path.rglob("metrics.json"))


def test_a_node_whose_cache_holds_another_tokenizer_stops_the_world(tmp_path):
    # (Two nodes that build their own agree: test_private_dirs.py.)
    data_path = write_csv(tmp_path / "d.csv", synthetic_rows(160))
    _plant_swapped_tokenizer(tmp_path, data_path)
    _assert_stopped_by_the_data_check(run_private_nodes(tmp_path, _args(data_path, "out", "--max-steps", "2")),
                                      tmp_path)


def test_the_pipeline_loop_checks_the_data_too(tmp_path):
    data_path = write_csv(tmp_path / "d.csv", synthetic_rows(160))
    env = {"KIT_EXPECTED_PIPELINE_STAGES": "2"}
    # The pipeline loop's checkpoints need one output directory for all nodes: shared here, the caches are not.
    args = _args(data_path, tmp_path / "out", "--max-steps", "2")
    ok = run_private_nodes(tmp_path, args, env)
    assert [r.returncode for r in ok] == [0, 0], ok[0].stdout[-4000:] + ok[1].stdout[-4000:]
    assert "pipeline: rank 1 is stage 1/2" in ok[1].stdout   # this launch takes the pipeline loop
    _fresh(tmp_path)
    _plant_swapped_tokenizer(tmp_path, data_path)
    _assert_stopped_by_the_data_check(run_private_nodes(tmp_path, args, env), tmp_path)


def _fresh(tmp_path):
    """Empty caches and no results on both nodes."""
    for node in ("host0", "host1"):
        shutil.rmtree(tmp_path / node / "cache")
        shutil.rmtree(tmp_path / node / "out", ignore_errors=True)
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
