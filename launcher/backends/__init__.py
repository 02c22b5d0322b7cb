"""Backends deliver a LaunchPlan; they never re-derive any part of it. The contract is backends/base.py (with handle.py,
what a backend keeps in a run's record, declared beside its placement, and warmup.py, its start-up work); registry.py
finds the backends through the `kit.backends` entry points. kit's own are subpackages (local/, ssh/, slurm/) holding
their placement (planning), backend (delivery, state, cancel), config sections, handle, checks and doctor. Kept
light: the planner imports the registry through here."""
