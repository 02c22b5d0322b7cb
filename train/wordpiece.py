"""A WordPiece vocabulary built deterministically: the same texts and settings give the same tokens and ids.

The `tokenizers` library's WordPiece trainer does not: it breaks ties between equally frequent merges by token
ids that follow hash order, which differs per process, so two nodes (or two runs) get different token->id maps
and even different sizes.  This builder follows the library's recipe (words from the BERT normaliser and
pre-tokenizer; the alphabet, then '##' continuation characters; then the most frequent adjacent pair merged, again
and again, while it occurs at least `min_frequency` times) but orders everything it emits and breaks ties by the
pair's text, so the vocabulary depends on the texts alone.  Tokenizing with it stays the library's WordPiece model.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict

PREFIX = "##"  # marks a piece that continues a word


def count_words(texts, normalizer, pre_tokenizer) -> Counter:
    """How often each pre-tokenized word occurs (the library's normaliser and pre-tokenizer are deterministic)."""
    # Pre-tokenizing costs a Python tuple per word (~1 s for the review corpus): do it once per distinct chunk
    # between spaces.  The BERT normaliser (clean_text) turns every whitespace into a plain space and drops control
    # characters, so str.split cuts only where the pre-tokenizer would cut too.
    chunks: Counter = Counter()
    for text in texts:
        chunks.update(normalizer.normalize_str(text).split())
    counts: Counter = Counter()
    for chunk, n in chunks.items():
        for word, _ in pre_tokenizer.pre_tokenize_str(chunk):
            counts[word] += n
    return counts


def build_vocab(
    word_counts: dict[str, int], vocab_size: int, special_tokens: list[str], min_frequency: int = 2
) -> list[str]:
    """The tokens in id order: special tokens, every character, every continuation character, then merges.

    As in the library, the characters are all kept even past `vocab_size`; merges stop at `vocab_size` tokens or
    when the most frequent pair occurs fewer than `min_frequency` times."""
    words = sorted(word_counts)
    counts = [word_counts[w] for w in words]
    pieces = [[w[0]] + [PREFIX + c for c in w[1:]] for w in words]
    tokens = dict.fromkeys(special_tokens)  # an ordered set
    tokens.update(dict.fromkeys(sorted({c for w in words for c in w})))
    tokens.update(dict.fromkeys(PREFIX + c for c in sorted({c for w in words for c in w[1:]})))
    for pair in _merges(pieces, counts, min_frequency):
        if len(tokens) >= vocab_size:
            break
        tokens.setdefault(_joined(*pair))  # two merges may spell one token: it keeps its first id
    return list(tokens)


def _joined(left: str, right: str) -> str:
    return left + right[len(PREFIX) :]  # the right piece always continues a word


def _merges(pieces: list[list[str]], counts: list[int], min_frequency: int):
    """Yield the pairs to merge, most frequent first, ties to the smallest (left, right) text; `pieces` is
    updated in place as each is applied (lazily: the caller stops asking once the vocabulary is full)."""
    pair_counts: dict[tuple[str, str], int] = defaultdict(int)
    where: dict[tuple[str, str], set[int]] = defaultdict(set)  # pair -> words that may hold it
    for i, word in enumerate(pieces):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += counts[i]
            where[pair].add(i)
    heap = [(-n, *pair) for pair, n in pair_counts.items()]
    heapq.heapify(heap)
    while heap:
        negative, left, right = heapq.heappop(heap)
        pair = (left, right)
        if pair_counts.get(pair) != -negative:
            continue  # a stale entry: the pair's count changed since it was pushed
        if -negative < min_frequency:
            return
        yield pair
        changed = _apply(pair, pieces, counts, pair_counts, where)
        for other in changed:  # the heap orders by (count, text): push order does not matter
            if pair_counts[other] > 0:
                heapq.heappush(heap, (-pair_counts[other], *other))
            else:
                del pair_counts[other]


def _apply(pair, pieces, counts, pair_counts, where) -> set:
    """Merge `pair` in every word that holds it; update the pair counts; return the pairs whose count changed."""
    merged_token = _joined(*pair)
    changed = set()
    for i in where.pop(pair):
        old = pieces[i]
        new = _merge_word(old, pair, merged_token)
        if len(new) == len(old):
            continue
        for p in zip(old, old[1:]):
            pair_counts[p] -= counts[i]
            changed.add(p)
        for p in zip(new, new[1:]):
            pair_counts[p] += counts[i]
            where[p].add(i)
            changed.add(p)
        pieces[i] = new
    return changed


def _merge_word(word: list[str], pair, merged_token: str) -> list[str]:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(merged_token)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out
