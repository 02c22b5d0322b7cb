"""kit: turn a job spec and a cluster config into a launch plan, then deliver it."""

__version__ = "0.1.0"
