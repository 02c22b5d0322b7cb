"""kit's side of the environment check (insight/drift.py) for a plan whose checks ran on the hosts: a node whose
checks sent no fingerprint is never silently left out of the comparison."""

from types import SimpleNamespace

import pytest

from launcher.errors import KitError
from launcher.insight.drift import doctor_rows, fingerprint, judge_plan


def _plan(mode):
    return SimpleNamespace(env_check=mode, nodes=[SimpleNamespace(machine_rank=0, host="n1"),
                                                  SimpleNamespace(machine_rank=1, host="n2")])


def test_a_node_without_a_fingerprint_is_refused_in_strict_mode_and_named_in_warn(capsys):
    here = fingerprint("module", "train")
    with pytest.raises(KitError, match=r"node 1 \(n2\) sent no environment fingerprint"):
        judge_plan(_plan("strict"), {0: here})
    capsys.readouterr()
    assert judge_plan(_plan("warn"), {0: here}) is None
    assert capsys.readouterr().err == ("kit: warning: env_check: node 1 (n2) sent no environment fingerprint; not "
                                       "compared\n")
    assert judge_plan(_plan("off"), {}) is None
    assert judge_plan(_plan("strict"), {0: here, 1: here}) is None and capsys.readouterr().err == ""


def test_doctor_rows_say_pass_when_the_hosts_agree():
    here = fingerprint("module", "train")
    assert [r[2] for r in doctor_rows([("n1", here), ("n2", here)])] == ["PASS", "PASS"]
