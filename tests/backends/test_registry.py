"""The registry reads the `kit.backends` entry points itself (backends/registry.py): the same table importlib.metadata
gives, kit's three backends declared in pyproject.toml, and the rules importlib.metadata follows when two
distributions on the path say different things."""

import importlib.metadata
import subprocess
import sys

from launcher.backends import registry


def _dist(site, name: str, version: str, entry_points: str):
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_the_scan_finds_what_importlib_metadata_finds():
    expected = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=registry.GROUP)}
    assert registry.scan() == expected
    assert {"local", "ssh", "slurm"} <= set(expected) and expected["ssh"] == "launcher.backends.ssh"


def test_the_first_distribution_and_entry_point_on_the_path_win(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "mine", "2.0", "[console_scripts]\nx = y:z\n\n[kit.backends]\nmine = new_mine\n")
    _dist(second, "mine", "1.0", "[kit.backends]\nmine = old_mine\nspare = spare_pkg\n")
    _dist(second, "other", "1.0", "[kit.backends]\n# a comment\nmine = others_mine\nthird = third_pkg\n")
    path = [str(first), str(second), str(tmp_path / "missing"), str(tmp_path / "a.zip")]
    assert registry.scan(path=path) == {"mine": "new_mine", "third": "third_pkg"}
    # importlib.metadata on that path alone (a fresh interpreter without site-packages) picks the same ones.
    code = ("import importlib.metadata as m; eps = m.entry_points(group='kit.backends'); "
            "print(sorted((n, eps[n].value) for n in eps.names))")
    seen = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path[:0] = {path!r}; {code}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert seen.stdout.strip() == str(sorted({"mine": "new_mine", "third": "third_pkg"}.items())), seen.stderr


def test_an_unknown_backend_is_one_line_naming_the_installed_ones():
    try:
        registry.placement("nope")
    except Exception as e:
        assert str(e) == "backend 'nope': not one of local, slurm, ssh"
    else:
        raise AssertionError("no error for an unknown backend")
    assert registry.warm_up("nope") is None and registry.handle_class("local") is None
