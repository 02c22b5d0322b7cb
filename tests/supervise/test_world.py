"""WorldWatch on plans built by the planner, with a fake clock: a world of one process has nothing to wait for;
a larger one forms when every node joined, or fails at the deadline naming a node."""

from launcher.supervise.world import WorldWatch
from tests.launcher.planning import LOCAL_CPU, cluster, job, plan


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_world_of_one_process_formed_when_it_started():
    clock = Clock()
    asked = []
    p = plan(job(timeouts={"rendezvous": 5}), cluster(LOCAL_CPU))
    watch = WorldWatch(p, lambda n: asked.append(n) or False, lambda n: "unreachable", clock=clock)
    assert watch.formed and watch.formed_at == 1000.0
    clock.now += 3600
    assert watch.poll() is None and asked == []   # never asks for a join that no launcher would log


def test_a_larger_world_forms_only_when_every_node_joined_or_fails_at_the_deadline():
    clock = Clock()
    joined = {0}
    p = plan(job(timeouts={"rendezvous": 5}), cluster(LOCAL_CPU), nodes=2)
    watch = WorldWatch(p, lambda n: n.machine_rank in joined, lambda n: None, clock=clock)
    assert not watch.formed and watch.poll() is None
    clock.now += 6
    failure = watch.poll()
    assert failure is not None and failure.node == 1 and failure.meaning == "never joined"
    ok = WorldWatch(p, lambda n: True, lambda n: None, clock=clock)
    assert ok.poll() is None and ok.formed
