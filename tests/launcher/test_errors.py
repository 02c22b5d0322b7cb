from launcher.errors import per_line, render


def test_a_per_host_error_keeps_one_line_per_host_and_each_stays_one_line():
    e = per_line(["host n1: python 'a\nb' not usable", "host n2: python missing"])
    assert render(e) == "host n1: python 'a\\nb' not usable\nkit: error: host n2: python missing"


def test_a_single_error_quoting_a_newline_is_one_line():
    assert render(ValueError("no_such.py\nx\x1b[31m")) == "no_such.py\\nx\\x1b[31m"
