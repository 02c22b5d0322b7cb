"""The straggler watch (insight/stragglers.py): a rank whose relative score stays below 0.7 over its last report
windows is named once, with the section it is slowest in; noise under the floor names no one; the time the
world waited is counted only for windows where the slowest rank scored below the threshold."""

from launcher.insight.stragglers import FLOOR, Stragglers, line


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
