"""Reading the marked lines that kit's check programs print on a host (`kit-probe:python ...`)."""


def after_marker(text: str, marker: str) -> list[str]:
    """What follows `marker` on each line of `text` that holds it. The marker is looked for anywhere in a line:
    a host may print text without a newline before the program's first line (an rc file of the login shell, a
    setup line), which then starts that line."""
    return [line[line.index(marker) + len(marker) :] for line in text.splitlines() if marker in line]
