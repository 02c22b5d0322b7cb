"""Fixtures for tests/train (helpers live in support.py, the kit-like launcher in launch.py)."""

import pytest

from tests.train.support import synthetic_rows, write_csv


@pytest.fixture
def small_csv(tmp_path):
    return write_csv(tmp_path / "small.csv", synthetic_rows(240))
