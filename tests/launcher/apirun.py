"""Drive kit's Python API from a fresh interpreter, as a user's program would: a script that imports `launcher as
kit`, runs the steps the test names, and prints what it saw as one JSON object on its last line."""

import json
import subprocess
import sys
import textwrap

from tests.launcher.localrun import REPO

PRELUDE = """
import json, os, sys, time
sys.path.insert(0, {repo!r})
import launcher as kit
seen = {{}}
def bad(call):
    try:
        call()
    except kit.KitError as e:
        return str(e)
    return None
"""


def run_api(body: str, cwd, timeout: float = 600, env=None) -> dict:
    """Run `body` (Python that fills the dict `seen`) in a new interpreter in `cwd`; return `seen`."""
    script = PRELUDE.format(repo=REPO) + textwrap.dedent(body) + "\nprint(json.dumps(seen, default=str))\n"
    r = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
