"""One state machine (issue 36): no module of launcher/ but states.py spells a state as a string literal; each uses
states.py's enums (RunState, AttemptEnd, Meaning, TrialState), so that a state is one thing with one meaning, and
each backend maps its scheduler's words through one table of its own."""

import ast
import os

from launcher.states import AttemptEnd, Meaning, RunState, TrialState

LAUNCHER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "launcher")
# "?" (a record with no state yet) is also every unknown host's and field's placeholder: not checked.
WORDS = {w.value for kind in (RunState, AttemptEnd, Meaning, TrialState) for w in kind} - {"?"}


def _names(tree) -> set:
    """The constants that name something rather than say a state: a mapping's keys (`data["array"]`, `.get("x")`,
    `{"timeout": ...}`) and `__all__`'s entries."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            names.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.Subscript):
            names.add(id(node.slice))
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            names.update(id(n) for n in ast.walk(node.value))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("get", "pop", "setdefault") \
                and node.args:
            names.add(id(node.args[0]))
    return names


def literal_states():
    found = []
    for folder, _, names in os.walk(LAUNCHER):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not name.endswith(".py") or path == os.path.join(LAUNCHER, "states.py"):
                continue
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            names = _names(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS \
                        and id(node) not in names:
                    found.append((os.path.relpath(path, LAUNCHER), node.lineno, node.value))
    return found


def test_no_state_is_spelled_outside_states_py():
    hits = literal_states()
    assert hits == [], "\n".join(f"launcher/{p}:{n}: {w!r}" for p, n, w in hits)


def test_a_record_reads_and_writes_the_same_words():
    from launcher.status import RunStatus
    status = RunStatus.from_json({"run_id": "r", "state": "requeued", "attempts": [{"state": "failed"}]})
    assert status.state is RunState.REQUEUED and not status.state.is_terminal and status.over is False
    assert status.to_json()["state"] == "requeued" and f"{status.state}" == "requeued"
    assert RunStatus.from_json({"state": "a newer kit's word"}).state is RunState.UNKNOWN
    assert RunState.LOST.is_terminal and RunState.LOST != RunState.RUNNING
