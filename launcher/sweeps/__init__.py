"""Hyperparameter sweeps: a sweep is a set of ordinary kit runs, one per trial (run id `<sweep>-t<N>`)."""
