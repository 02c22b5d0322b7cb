"""Backends deliver a LaunchPlan; they never re-derive any part of it. The contract is backends/base.py, the
name -> package table backends/registry.py; each backend is a subpackage (local/, ssh/, slurm/) holding its
placement (planning), backend (delivery, state, cancel), checks and doctor. Kept light: the planner imports the
registry through here."""
