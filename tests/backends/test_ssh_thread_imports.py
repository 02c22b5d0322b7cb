"""kit's SSH threads (the early logins, the hosts' checks) import none of kit's modules: a thread importing them
while the main thread imports others can deadlock on their package locks. It did: `kit submit` died with
`_DeadlockError: deadlock detected by _ModuleLock('launcher.preflight')` when an early login's thread imported
the gate's module while kit's main thread imported the backend. Checked in a fresh interpreter (where nothing is
imported yet) with an audit hook that sees every module load and the thread that made it."""

import os
import subprocess
import sys

from tests.backends.sshrun import cluster, workdir
from tests.launcher.localrun import REPO, write_job

RUNNER = """
import sys, threading
loads = []
def hook(event, args):
    if event == "import" and str(args[0]).startswith("launcher"):
        loads.append((str(args[0]), threading.current_thread() is threading.main_thread()))
sys.addaudithook(hook)
from launcher.cli import main
code = main(sys.argv[1:])
print("kit-test thread imports:", sorted({name for name, in_main in loads if not in_main}))
print("kit-test main imports:", len([1 for name, in_main in loads if in_main]))
sys.stdout.flush()
import os
os._exit(code)
"""


def test_ssh_threads_import_none_of_kit(ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    result = subprocess.run([sys.executable, "-c", RUNNER, "submit", job, "--cluster", cluster(ssh_hosts, tmp_path),
                             "--run-id", "ssh-thread-imports"], cwd=workdir(ssh_hosts), capture_output=True,
                            text=True, timeout=120, env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in result.stdout.splitlines()
             if line.startswith("kit-test ")}
    assert int(lines["kit-test main imports"]) > 20   # the hook saw kit load
    assert lines["kit-test thread imports"] == "[]", lines
