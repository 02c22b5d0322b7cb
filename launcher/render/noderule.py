"""What the nodes of a plan have in common, found in the plan itself: node 0's text as a template whose only holes
are the values that depend on the node (<i> its index, <host> its host, <gpus> its GPU slice), and the nodes whose
text is exactly that template filled with their own values. Every other node is irregular (printed in full)."""

import re
from dataclasses import dataclass
from typing import Optional, Union

# The holes, in the order a line is searched; each has a word boundary so that `0` in `10.0.0.11:30432` or in
# `gpu000` is not taken for node 0's index by accident (a wrong guess only makes nodes irregular, never wrong).
HOLES = ("host", "gpus", "i")
_EDGE = {"i": r"\d", "gpus": r"[\d,]", "host": r"[\w.-]"}
_SEARCH_LIMIT = 20000  # steps of the search for one line's holes; past it the line stays literal

Part = Union[str, "Hole"]


@dataclass(frozen=True)
class Hole:
    name: str


Line = tuple  # literal strings and Holes, in order


def fill(line: Line, values: dict[str, str]) -> str:
    return "".join(values[p.name] if isinstance(p, Hole) else p for p in line)


def shown(line: Line) -> str:
    return "".join(f"<{p.name}>" if isinstance(p, Hole) else p for p in line)


def _spans(line: str, values: dict[str, str]) -> list[tuple[int, int, str]]:
    """Where node 0's value of each hole occurs in its line, at word boundaries."""
    spans = []
    for name in HOLES:
        value = values.get(name)
        if not value:
            continue
        edge = _EDGE[name]
        for m in re.finditer(rf"(?<!{edge}){re.escape(value)}(?!{edge})", line):
            spans.append((m.start(), m.end(), name))
    return sorted(spans)


def _fit(line0: str, other: str, values0: dict[str, str], values: dict[str, str]) -> Optional[Line]:
    """The template of node 0's line that, filled with the other node's values, gives the other node's line."""
    spans = _spans(line0, values0)
    steps = [0]

    def search(k: int, pos: int, out: int, parts: list) -> Optional[list]:
        steps[0] += 1
        if steps[0] > _SEARCH_LIMIT:
            return None
        if k == len(spans):
            tail = line0[pos:]
            return parts + [tail] if other[out:] == tail else None
        start, end, name = spans[k]
        if start >= pos:
            head = line0[pos:start] + values[name]
            if other.startswith(head, out):
                found = search(k + 1, end, out + len(head), parts + [line0[pos:start], Hole(name)])
                if found is not None:
                    return found
        return search(k + 1, pos, out, parts)

    found = search(0, 0, 0, [])
    return None if found is None else tuple(p for p in found if p != "")


def template(
    block0: list[str], other: list[str], values0: dict[str, str], values: dict[str, str]
) -> Optional[list[Line]]:
    """Node 0's block as a template, its holes placed where `other` (a witness node's block) differs."""
    if len(block0) != len(other):
        return None
    varying = {k: v for k, v in values0.items() if values.get(k) != v}
    lines: list[Line] = []
    for a, b in zip(block0, other):
        fitted = (a,) if a == b else _fit(a, b, varying, values)
        if fitted is None:
            return None
        lines.append(fitted)
    return lines


@dataclass(frozen=True)
class Rule:
    lines: list  # the template, one Line per line of node 0's block
    regular: tuple  # ranks (besides 0) whose blocks are the template filled with their values
    irregular: tuple  # ranks whose blocks are not: printed in full

    def varying(self) -> list[int]:
        """Indexes of the template's lines that have holes."""
        return [k for k, line in enumerate(self.lines) if any(isinstance(p, Hole) for p in line)]


def _matches(lines: list[Line], block0: list[str], block: list[str], values: dict[str, str]) -> bool:
    """The block is the template filled with its node's values (lines without holes: node 0's, compared as is)."""
    if len(block) != len(lines):
        return False
    return all(
        got == (line[0] if len(line) == 1 and isinstance(line[0], str) else fill(line, values))
        for line, got in zip(lines, block)
    )


def derive(blocks: list[list[str]], values: list[dict[str, str]]) -> Rule:
    """The rule that covers the most nodes: node 0's block with holes placed against a witness node (node 1, or
    node 2 or the last when node 1 is itself irregular), checked against every node."""
    others = range(1, len(blocks))
    best = Rule([(line,) for line in blocks[0]], (), tuple(others))
    if any(f"<{name}>" in line for line in blocks[0] for name in HOLES):
        return best  # node 0's own text has a hole's spelling: a template would be ambiguous to read
    for witness in dict.fromkeys(w for w in (1, 2, len(blocks) - 1) if 0 < w < len(blocks)):
        lines = template(blocks[0], blocks[witness], values[0], values[witness])
        if lines is None:
            continue
        regular = tuple(r for r in others if _matches(lines, blocks[0], blocks[r], values[r]))
        if len(regular) > len(best.regular):
            best = Rule(lines, regular, tuple(r for r in others if r not in regular))
        if not best.irregular:
            break
    return best


def ranges(numbers) -> str:
    """1-3, 5, 7-9."""
    out: list[str] = []
    run: list[int] = []
    for n in numbers:
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [n]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def hostlist(names) -> list[str]:
    """Host names in their order, consecutive numbered names folded (gpu[0001-0512], n[8-12]); order kept."""
    runs: list[list] = []  # [prefix, width (0: no leading zeros), first, last] or [name]
    for name in names:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if m is None:
            runs.append([name])
            continue
        prefix, digits = m.group(1), m.group(2)
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        last = runs[-1] if runs else None
        if (
            last is not None
            and len(last) == 4
            and last[0] == prefix
            and int(digits) == last[3] + 1
            and f"{int(digits):0{last[1]}d}" == digits
        ):
            last[3] += 1
            continue
        runs.append([prefix, width, int(digits), int(digits)])
    words = []
    for run in runs:
        if len(run) == 1:
            words.append(run[0])
            continue
        prefix, width, first, last = run
        words.append(f"{prefix}{first:0{width}d}" if first == last else f"{prefix}[{first:0{width}d}-{last:0{width}d}]")
    return words
