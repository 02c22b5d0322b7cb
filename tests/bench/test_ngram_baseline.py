"""bench/ngram_baseline.py scores the n-gram baseline on exactly the reference job's split."""

import sys
from pathlib import Path

from tests.train.support import synthetic_rows, write_csv
from train import data

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import ngram_baseline  # noqa: E402


def test_the_baseline_sees_the_jobs_split_and_chooses_c_on_validation(tmp_path):
    csv = write_csv(tmp_path / "d.csv", synthetic_rows(300) + synthetic_rows(40))  # repeats: dropped, as the job does
    splits = ngram_baseline.split_for(str(csv), 43)
    job = data.load_splits(str(csv), "text", "label", 43, 0.1, 0.1, True)
    assert splits == job and len(splits.train) + len(splits.validation) + len(splits.test) == 300
    result = ngram_baseline.run(splits)
    assert result["C"] in ngram_baseline.C_GRID
    assert result["validation_accuracy"] > 0.9 and result["test_accuracy"] > 0.9  # the task is learnable
