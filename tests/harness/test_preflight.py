"""Without what the harness needs, cluster tests skip with the reason locally and fail in CI."""

import pytest

from tests.harness import preflight


@pytest.fixture
def not_root(monkeypatch):
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 1000)


def test_missing_tools_are_named(monkeypatch):
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 0)
    monkeypatch.setattr(preflight.shutil, "which", lambda tool: None if tool in ("tini", "slurmd") else tool)
    reason = preflight.unavailable_reason("slurm")
    assert "tini" in reason and "slurmd" in reason and "apt-get install" in reason
    assert "slurmd" not in preflight.unavailable_reason("ssh").split(":")[0]


def test_outside_ci_the_tests_skip_with_the_reason(monkeypatch, not_root):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs root"):
        preflight.require("ssh")


def test_in_ci_they_fail(monkeypatch, not_root):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the cluster tests: .*needs root"):
        preflight.require("ssh")
