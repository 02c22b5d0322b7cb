"""Fixtures for tests/train (helpers live in support.py; launch.py runs jobs through `kit submit`)."""

import pytest

from tests.train.support import synthetic_rows, write_csv


@pytest.fixture
def small_csv(tmp_path):
    return write_csv(tmp_path / "small.csv", synthetic_rows(240))
