"""Can this machine run the harness? In CI (CI=true) a missing prerequisite fails the test; elsewhere it skips.

.ci/run installs the Debian packages, so a skip in CI would hide a broken install: it must fail instead.
"""

import os
import shutil
import subprocess

import pytest

NEEDS = {
    "hosts": ["ip", "nsenter", "unshare", "setpriv", "tini"],
    "ssh": ["/usr/sbin/sshd", "ssh-keygen", "ssh", "ssh-agent", "ssh-add"],
    "slurm": ["munged", "mungekey", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sbatch", "srun", "sacct",
              "sinfo", "scontrol"],
}
INSTALL_HINT = ("run .ci/run, or: apt-get install -y slurm-wlm slurmdbd munge openssh-server iproute2 tini "
                "mariadb-server")


def in_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable_reason(*parts):
    """Why the harness parts ("hosts", "ssh", "slurm") cannot start here, or None when they can."""
    if os.geteuid() != 0:
        return "the test cluster needs root (network namespaces, sshd, slurmd)"
    missing = [tool for part in ("hosts", *parts) for tool in NEEDS[part] if not shutil.which(tool)]
    if missing:
        return f"the test cluster needs {', '.join(missing)}: {INSTALL_HINT}"
    probe = subprocess.run(["unshare", "--net", "--mount", "--uts", "--pid", "--fork", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"namespaces are not allowed here (unshare: {probe.stderr.strip()})"
    return None


def require(*parts):
    """Skip (locally) or fail (in CI) the calling test or fixture when the harness cannot start."""
    reason = unavailable_reason(*parts)
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"CI must run the cluster tests: {reason}", pytrace=False)
    pytest.skip(reason)
