"""Does every rank of the world see the same data pipeline: the same split, tokenizer vocabulary and token ids?

Each node reads the data and builds (or finds in its own cache) the tokenizer and the encoded splits.  A node whose
cache holds another tokenizer (one left by an older, nondeterministic kit; a copy from elsewhere) feeds the one
model other ids for the same text, and the run trains on, silently wrong.  So at start every rank hashes what it
loaded, every rank sees every rank's hashes (an all-gather), and when any differs all fail with exit code 3 while
the main process names the nodes that differ, and what, in one line.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass

from train.world_check import PREFIX

# What is compared, and its name in the message.  The encoded data follows from the other two, so it is named
# only when they agree (a different normaliser, or an encoded cache that does not match its key).
FIELDS = (("split", "split"), ("tokenizer", "tokenizer"), ("encoded", "encoded data"))
SHOWN = 10  # hex digits of a hash in the message


@dataclass(frozen=True)
class Report:
    rank: int
    node: int  # the machine rank (torchrun's GROUP_RANK under kit's static rendezvous)
    host: str
    split: str
    tokenizer: str
    encoded: str


def split_digest(splits) -> str:
    """The split itself (each example's split, label and text, in order) and the label list."""
    h = hashlib.sha256("\0".join(splits.labels).encode() + b"\n")
    for name in ("train", "validation", "test"):
        h.update(f"[{name}]\n".encode())
        for ex in getattr(splits, name):
            h.update(ex.label.encode() + b"\t" + ex.text.encode() + b"\n")
    return h.hexdigest()


def vocab_digest(tokenizer) -> str:
    """The token -> id map (what the embedding rows mean)."""
    h = hashlib.sha256()
    for token, i in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1]):
        h.update(f"{i}\t{token}\n".encode())
    return h.hexdigest()


def encoded_digest(encoded: dict) -> str:
    """The token ids, offsets and labels of every split, and the n-gram head's characters (a few MB:
    milliseconds)."""
    h = hashlib.sha256()
    for name in sorted(encoded):
        enc = encoded[name]
        h.update(name.encode())
        for tensor in (enc.ids, enc.offsets, enc.labels, enc.chars, enc.char_offsets):
            if tensor is not None:
                h.update(tensor.contiguous().numpy().tobytes())
    return h.hexdigest()


def node_rank(rank: int, env=os.environ) -> int:
    if env.get("GROUP_RANK"):
        return int(env["GROUP_RANK"])
    local = int(env.get("LOCAL_WORLD_SIZE") or 0)
    return rank // local if local else 0


def report(rank: int, splits, tokenizer, encoded: dict, env=os.environ) -> Report:
    return Report(
        rank,
        node_rank(rank, env),
        socket.gethostname(),
        split_digest(splits),
        vocab_digest(tokenizer),
        encoded_digest(encoded),
    )


def differences(reports: list[Report]) -> list[tuple[str, str]]:
    """(field, 'value on where, value on where') for each field whose value is not the same on every rank."""
    out = []
    for field, name in FIELDS:
        if len({getattr(r, field) for r in reports}) > 1:
            out.append(
                (
                    field,
                    f"{name} " + ", ".join(f"{value[:SHOWN]} on {where}" for value, where in _groups(reports, field)),
                )
            )
    if any(field in ("split", "tokenizer") for field, _ in out):
        out = [(field, text) for field, text in out if field != "encoded"]
    return out


def _groups(reports: list[Report], field: str) -> list[tuple[str, str]]:
    """Each value with the places that hold it: a whole node when all its ranks agree, else its ranks."""
    nodes: dict[int, list[Report]] = {}
    for r in sorted(reports, key=lambda r: r.rank):
        nodes.setdefault(r.node, []).append(r)
    places: dict[str, list[str]] = {}
    for node, members in sorted(nodes.items()):
        values = {getattr(r, field) for r in members}
        for r in members:
            where = f"node {node} ({r.host})" if len(values) == 1 else f"rank {r.rank} on node {node} ({r.host})"
            if where not in places.setdefault(getattr(r, field), []):
                places[getattr(r, field)].append(where)
    return [(value, " and ".join(where)) for value, where in places.items()]


def failure(reports: list[Report], cache_dir: str, own_tokenizer: bool) -> str | None:
    """The one line to print when the ranks differ (None when they all agree)."""
    found = differences(reports)
    if not found:
        return None
    fields = {field for field, _ in found}
    if "split" in fields:
        hint = "give every node the same --data file"
    elif own_tokenizer:
        hint = "give every node the same --model directory"
    else:
        home = os.path.expanduser("~")
        shown = "~" + cache_dir[len(home) :] if cache_dir.startswith(home + os.sep) else cache_dir
        hint = f"delete the cache ({shown}) or give every node the same --cache-dir"
    return PREFIX + "the data pipeline differs between nodes: " + "; ".join(text for _, text in found) + "; " + hint


def check(mine: Report, gather, cache_dir: str, own_tokenizer: bool) -> str | None:
    """Collective: `gather(report)` returns every rank's report (all ranks must call it)."""
    return failure(list(gather(mine)), cache_dir, own_tokenizer)
