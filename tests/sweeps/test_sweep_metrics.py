"""sweep.metric against a trial's metrics file: the keys that lead to numbers, dotted as the metric writes them,
and the one line that names them when the metric is not one of them."""

from launcher.sweeps.metrics import lookup, metric_problem, number_keys

WHERE = "trial 0's metrics.json (outputs/s-t0/metrics.json)"
DATA = {"final": {"loss": 0.25, "accuracy": 0.9}, "epoch": 3, "evals": [{"accuracy": 0.5}, {"accuracy": 0.7}],
        "losses": [1.0, 0.5], "name": "bert", "done": True, "empty": [], "nested": {"deeper": {"f1": 0.1}}}


def test_number_keys_are_dotted_paths_that_lookup_reads():
    keys = number_keys(DATA)
    assert keys == ["final.loss", "final.accuracy", "epoch", "evals.-1.accuracy", "losses.-1", "nested.deeper.f1"]
    assert all(lookup(DATA, k) is not None for k in keys)   # strings, booleans and empty lists are no metric


def test_a_metric_that_leads_to_a_number_has_no_problem():
    assert metric_problem(DATA, "final.loss", WHERE) is None
    assert metric_problem(DATA, "evals.0.accuracy", WHERE) is None


def test_a_leaf_name_suggests_the_one_key_that_ends_in_it():
    assert metric_problem(DATA, "loss", WHERE) == (
        "sweep.metric loss names no number in trial 0's metrics.json (outputs/s-t0/metrics.json), which has "
        "final.loss, final.accuracy, epoch, evals.-1.accuracy, losses.-1, nested.deeper.f1 (did you mean final.loss?)")


def test_a_misspelling_suggests_the_nearest_key_and_an_ambiguous_leaf_none():
    assert metric_problem(DATA, "final.los", WHERE).endswith("(did you mean final.loss?)")
    assert metric_problem(DATA, "f1", WHERE).endswith("(did you mean nested.deeper.f1?)")
    # Two keys end in accuracy, none is near enough to pick: no guess.
    assert metric_problem(DATA, "accuracy", WHERE).endswith("nested.deeper.f1")
    # A mapping is not a number.
    assert "names no number" in metric_problem(DATA, "final", WHERE)


def test_no_metrics_file_or_no_numbers_at_all_is_said():
    assert metric_problem(None, "loss", WHERE).startswith(f"{WHERE} is missing or not JSON, so no trial can be "
                                                          f"scored by sweep.metric loss")
    assert metric_problem({"name": "x"}, "loss", WHERE) == f"sweep.metric loss names no number in {WHERE}, which " \
                                                           f"holds none at all"


def test_a_long_list_of_keys_is_cut():
    line = metric_problem({f"k{i}": i for i in range(30)}, "loss", WHERE)
    assert "k19 (and 10 more)" in line and "k20" not in line
