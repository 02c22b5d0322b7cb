"""The reference job reads as an example (issue 36 item 2): from `python -m train` to the training step is at most
3 hops (main -> run -> Trainer.train, whose loop holds the step itself), and the loop names none of the opt-in
extras (n-gram head, MLM pretraining, pipeline parallel): they live in their own modules. Read from the source, as
a reader follows it."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTRAS = ("ngram", "mlm", "pretrain", "pipeline")


def function(path: str, name: str, cls: str | None = None) -> ast.FunctionDef:
    tree = ast.parse((REPO / path).read_text())
    scope = tree.body
    if cls is not None:
        scope = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    return next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name)


def calls(fn: ast.FunctionDef) -> set[str]:
    """Names called in `fn`: `f(...)` as f, `obj.f(...)` as f."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def test_three_hops_from_python_m_train_to_the_step():
    main = function("train/__main__.py", "main")
    assert "run" in calls(main)                                       # hop 1: main -> run
    run = function("train/run.py", "run")
    assert "train" in calls(run)                                      # hop 2: run -> trainer.train()
    loop = function("train/trainer.py", "train", cls="Trainer")
    step = calls(loop)                                                # the step is in the loop itself
    assert {"backward", "step", "zero_grad", "accumulate", "clip_grad_norm_"} <= step, step
    assert "forward" in step                                          # the model call, with the planned autocast


def test_the_loop_and_the_run_name_no_extra():
    loop = ast.unparse(function("train/trainer.py", "train", cls="Trainer")).lower()
    assert not [e for e in EXTRAS if e in loop], loop
    # run() calls the pretrain phase once, as its own module's step, and has no pipeline branch (main dispatches).
    run = ast.unparse(function("train/run.py", "run"))
    assert "pipeline_run" not in run and "stages" not in run and run.count("pretrain.") == 1, run
    assert "ngram" not in (REPO / "train" / "trainer.py").read_text()
