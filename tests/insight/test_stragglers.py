"""The straggler watch (insight/stragglers.py): a rank whose relative score stays below 0.7 over its last report
windows is named once, with the section it is slowest in; noise under the floor names no one; the time the
world waited is counted only for windows where the slowest rank scored below the threshold."""

import json
import math
from types import SimpleNamespace

from launcher.core.describe import _straggler as describe_straggler
from launcher.insight.events import MARK
from launcher.insight.stragglers import FLOOR, THRESHOLD, Stragglers, below, line, machine
from launcher.insight.watch import InsightWatch
from launcher.records import RunRecord


def _window(w, forward, data=(0.0005, 0.0005), n=10):
    return [{"e": "sections", "t": float(w), "r": r, "w": w, "n": n, "node": r, "data": data[r], "forward": f}
            for r, f in enumerate(forward)]


def _feed(watch, windows):
    found = []
    for w, fwd in enumerate(windows):
        for e in _window(w, fwd):
            got = watch.feed(e)
            if got is not None:
                found.append((w, got))
    return found


def test_a_slow_forward_is_named_once_after_a_window():
    watch = Stragglers(2)
    found = _feed(watch, [(0.05, 0.05)] * 2 + [(0.05, 0.11)] * 6)
    assert len(found) == 1
    w, s = found[0]
    # Two slow windows of three: 1.8x the fastest rank over them, score 0.57.
    assert w == 3 and (s.rank, s.node, s.section) == (1, 1, "forward") and s.ratio == 1.8 and s.score < 0.7
    assert line(s, "n2") == "node 1 (n2) rank 1, forward 1.8x the fastest rank"
    assert abs(watch.lost_s - 6 * 10 * 0.06) < 1e-9


def test_even_ranks_and_tiny_sections_name_no_one():
    watch = Stragglers(2)
    assert _feed(watch, [(0.05, 0.055)] * 6) == []               # 10% apart: score 0.91
    tiny = Stragglers(2)
    assert _feed(tiny, [(0.0001, 0.0004)] * 6) == []             # 4x, but 0.3 ms: under the floor
    assert FLOOR > 0.0004 - 0.0001 and watch.lost_s == tiny.lost_s == 0.0


def test_one_slow_window_among_fast_ones_is_not_a_straggler():
    watch = Stragglers(2)
    # A rank 1.6x slower in one window of three averages 1.2x over them: not a straggler.
    assert _feed(watch, [(0.05, 0.05), (0.05, 0.08), (0.05, 0.05), (0.05, 0.05), (0.05, 0.08), (0.05, 0.05)]) == []


def test_a_window_waits_for_every_rank():
    watch = Stragglers(3)
    for e in _window(0, (0.05, 0.2)) * 4:
        assert watch.feed(e) is None


def test_time_lost_in_either_section_adds_up_over_both():
    # Rank 1 loses 1.5 ms per step in data and in forward: either alone scores 0.73 with the 2 ms floor, both
    # together 0.67.
    watch = Stragglers(2)
    slow = [{"e": "sections", "t": float(w), "r": r, "w": w, "n": 10, "node": r,
             "data": (0.002, 0.0035)[r], "forward": (0.002, 0.0035)[r]} for w in range(4) for r in range(2)]
    named = [f for f in map(watch.feed, slow) if f is not None]
    assert len(named) == 1 and named[0].section == "data and forward" and named[0].ratio == 1.75
    assert 0.66 < named[0].score < 0.67


# Each rank's `sections` report as the training module writes it (train/insight.py), with the node's load and the
# training thread's wait for a CPU.
def _reports(w, data, forward, load=(0.4, 0.4), cpus=2, wait=(0.0, 0.0), threads=2, n=20):
    return [{"e": "sections", "t": 1000.0 + 5 * w, "r": r, "w": w, "from": 20 * w, "to": 20 * w + n - 1, "n": n,
             "node": 0, "data": data[r], "forward": forward[r], "load": load[r], "cpus": cpus, "wait": wait[r],
             "threads": threads} for r in range(2)]


def _named(events, world=2):
    watch = Stragglers(world)
    found = [f for f in map(watch.feed, events) if f is not None]
    assert len(found) == 1, found
    return found[0]


def test_a_zero_time_baseline_gives_a_finite_ratio_and_its_times():
    # Rank 0's batches are always ready (0.0 s), rank 1 waits 4 ms a step: named, and never "inf".
    s = _named([e for w in range(3) for e in _reports(w, (0.0, 0.004), (0.05, 0.05))])
    assert (s.rank, s.section) == (1, "data") and s.ratio is None
    assert all(math.isfinite(v) for v in (s.score, s.own_s, s.fastest_s))
    assert line(s, "localhost") == "node 0 (localhost) rank 1, data 4.0 ms per step against 0.0 ms on the fastest rank"


def test_a_rank_slowed_by_a_loaded_machine_is_said_so():
    # Other processes on the machine: load 6.1 on 2 cores, the run's own 2 threads; rank 1 waited 60 ms a step.
    loaded = [e for w in range(3) for e in _reports(w, (0.001, 0.001), (0.05, 0.11), load=(6.1, 6.1),
                                                    wait=(0.0, 0.06))]
    s = _named(loaded)
    assert s.rank == 1 and s.section == "forward" and s.ratio == 2.2
    assert line(s, "localhost") == ("node 0 (localhost) rank 1, forward 2.2x the fastest rank; the machine is "
                                    "loaded (load 6.1 on 2 cores, other processes; rank 1 waited 60 ms a step more "
                                    "than the others for a CPU)")
    # The run's own processes fill the cores: loaded, not by others.
    own = [dict(e, load=2.2, threads=4) for e in loaded]
    assert ("loaded (load 2.2 on 2 cores, the run's own 4 threads; rank 1 waited 60 ms a step more than the others "
            "for a CPU)") in line(_named(own), "localhost")
    # The load average lags: a rank that waited for a CPU most of its excess is slowed by others' work.
    early = [dict(e, load=1.1) for e in loaded]
    assert line(_named(early), "n1").endswith("; other processes took its CPU (rank 1 waited 60 ms a step more than "
                                              "the others for a CPU; load 1.1 on 2 cores)")
    # A quiet machine: no cause said (older training modules report no load at all).
    quiet = [dict(e, load=0.3, wait=0.0) for e in loaded]
    bare = [{k: v for k, v in e.items() if k not in ("load", "cpus", "wait", "threads")} for e in loaded]
    assert line(_named(quiet), "n1") == line(_named(bare), "n1") == "node 0 (n1) rank 1, forward 2.2x the fastest rank"


def test_a_score_prints_below_its_threshold():
    # (0.05 + 2 ms) / (0.0727 + 2 ms) = 0.696: said as 0.696 < 0.7, never 0.70 < 0.7.
    s = _named([e for w in range(3) for e in _reports(w, (0.0005, 0.0005), (0.05, 0.0727))])
    assert 0.695 <= s.score < 0.7 and below(s.score, THRESHOLD) == "0.696 < 0.7"
    assert below(0.62, 0.7) == "0.62 < 0.7" and below(0.6999, 0.7) == "0.6999 < 0.7"


def _watched(tmp_path, events):
    """kit's watch (insight/watch.py) over a real record whose node log holds these reports: (console, status)."""
    (tmp_path / "status.json").write_text(json.dumps({"run_id": "r", "state": "running"}))
    record = RunRecord(str(tmp_path))
    plan = SimpleNamespace(world=SimpleNamespace(world_size=2), attempt=1,
                           nodes=[SimpleNamespace(machine_rank=0, host="localhost")])
    said = []
    watch = InsightWatch(plan, record, None, said.append)
    with open(tmp_path / "node0.log", "w") as f:
        f.writelines(f"[node0/rank{e['r']}] {MARK}{json.dumps({k: v for k, v in e.items() if k != 'node'})}\n"
                     for e in events)
    watch.poll()
    return said, record.read_status()


def test_a_straggler_against_a_zero_time_baseline_is_recorded_not_dropped(tmp_path):
    said, status = _watched(tmp_path, [e for w in range(3) for e in _reports(w, (0.0, 0.004), (0.05, 0.05))])
    assert said == ["kit: straggler: node 0 (localhost) rank 1, data 4.0 ms per step against 0.0 ms on the fastest "
                    "rank (its relative score 0.33 < 0.7 over its last report windows; the world steps at its pace)"]
    assert status.straggler is not None and status.straggler["rank"] == 1 and status.straggler["ratio"] is None
    assert "inf" not in json.dumps(status.straggler)


def test_the_console_score_reads_true_and_a_loaded_machine_is_recorded(tmp_path):
    said, status = _watched(tmp_path, [e for w in range(3) for e in _reports(
        w, (0.0005, 0.0005), (0.05, 0.0727), load=(6.1, 6.1), wait=(0.0, 0.02))])
    assert said == ["kit: straggler: node 0 (localhost) rank 1, forward 1.4x the fastest rank; the machine is loaded "
                    "(load 6.1 on 2 cores, other processes; rank 1 waited 20 ms a step more than the others for a CPU) "
                    "(its relative score 0.696 < 0.7 over its last report windows; the world steps at its pace)"]
    # kit status says the same, from the record.
    assert describe_straggler(status.straggler)["line"] == said[0][len("kit: straggler: "):].split(" (its relative")[0]


def test_a_loaded_machine_that_does_not_explain_the_rank_is_said_so():
    # Load 6.1 on 2 cores, but rank 1 waited no longer for a CPU than rank 0, though it is 60 ms a step slower
    # (stopped from outside): the load takes CPU from both alike.
    s = _named([e for w in range(3) for e in _reports(w, (0.001, 0.001), (0.05, 0.11), load=(6.1, 6.1),
                                                      wait=(0.001, 0.001))])
    assert machine(s) == ("the machine is loaded (load 6.1 on 2 cores, other processes; though rank 1 waited only 0 ms "
                          "a step more than the others for a CPU: something else slowed it too)")


def test_a_report_of_infinite_time_is_not_a_number_to_score():
    # A torn or forged line (json reads "Infinity"): that section is left out, nothing infinite comes out.
    events = [dict(e, forward=float("inf")) if e["r"] == 1 else e
              for w in range(3) for e in _reports(w, (0.0, 0.004), (0.05, 0.05))]
    s = _named(events)
    assert s.section == "data" and all(math.isfinite(v) for v in (s.score, s.own_s, s.fastest_s))
