"""bench/scale.py's table and plot: the growth it extrapolates to 1,024 nodes is the power law through the two
largest sizes measured."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import scale  # noqa: E402


def test_the_line_to_1024_nodes_follows_the_growth_between_the_two_largest_sizes():
    at, b = scale.extrapolate([2, 8, 32], [7, 100, 400], 1024)   # linear from 8 to 32
    assert abs(b - 1.0) < 1e-9 and abs(at - 12800) < 1e-6
    at, b = scale.extrapolate([2, 8, 32], [50, 40, 40], 1024)     # flat: stays flat
    assert b == 0 and at == 40
    at, b = scale.extrapolate([8, 32], [0, 5], 1024)              # no growth rate from a zero
    assert b == 0 and at == 5


def test_the_table_has_a_row_per_run_and_a_dash_where_a_figure_does_not_apply(tmp_path):
    rows = [{"backend": "ssh", "nodes": 2, "world_s": 40.9, "kit_mb": 51.7},
            {"backend": "slurm", "nodes": 2, "world_s": 38.2, "kit_mb": 35.9, "sched_qps": 0.91},
            {"backend": "ssh", "nodes": 8, "world_s": 90.0, "kit_mb": 55.0},
            {"backend": "slurm", "nodes": 8, "world_s": 80.0, "kit_mb": 37.0, "sched_qps": 0.95}]
    lines = scale.table(rows).splitlines()
    assert len(lines) == 5 and "sched q/s" in lines[0]
    assert lines[1].split()[:4] == ["ssh", "2", "-", "40.9"] and "-" in lines[1].split()
    assert "0.91" in lines[2].split()
    scale.plot(rows, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
