"""The Python API has its own words (issue 29): wrong argument types are one KitError naming the parameter as the
caller wrote it (never a TypeError from deep inside), run_id="" is refused, and the core's errors name keyword
arguments, not the command line's flags."""

import pytest

import launcher as kit
from launcher.errors import KitError
from tests.launcher.localrun import REPO

JOB = f"{REPO}/jobs/bert_cls.yaml"


@pytest.mark.parametrize("given,said", [
    ({"nodes": "2"}, "nodes='2': give an int"),
    ({"nodes": True}, "nodes=True: give an int"),
    ({"port": 2.5}, "port=2.5: give an int"),
    ({"strategy": 3}, "strategy=3: give a string"),
    ({"run_id": ""}, "run_id='': give a non-empty string"),
    ({"run_id": 5}, "run_id=5: give a non-empty string"),
    ({"args": "--epochs 1"}, "args='--epochs 1': a list of strings"),
    ({"args": [1, 2]}, "args=[1, 2]: a list of strings"),
    ({"cluster": 7}, "cluster=7: a path"),
    ({"gpus": -1}, "gpus=-1: Input should be greater than or equal to 0"),
    ({"procs_per_node": 0}, "procs_per_node=0: Input should be greater than or equal to 1"),
    ({"set": {"deepspeed.zero_stage": 7}}, "set['deepspeed.zero_stage']=7: Input should be 0, 1, 2 or 3"),
])
def test_a_wrong_argument_is_named_as_the_caller_wrote_it(given, said):
    with pytest.raises(KitError) as e:
        kit.plan(JOB, **given)
    assert str(e.value).startswith(said), str(e.value)
    assert not str(e.value).startswith("--")


def test_a_jobs_own_argument_given_as_a_field_is_pointed_to_args():
    # The command line says `kit submit JOB -- --lr 0.1`; the API's way to give the job an argument is args=[...].
    with pytest.raises(KitError) as e:
        kit.plan(JOB, set={"lr": 0.1, "node": 2})
    text = str(e.value)
    assert "set['lr']=0.1: unknown key 'lr'" in text and "give it in args=['--lr', '0.1']" in text, text
    assert "set['node']=2: unknown key 'node'; did you mean 'nodes'?" in text, text
    assert "kit submit" not in text, text


def test_get_run_refuses_an_empty_id():
    with pytest.raises(KitError, match=r"^run_id='': a run id"):
        kit.get_run("")
