"""The echo backend, a kit backend in a package of its own: its nodes run on this machine as a local cluster's do,
and it says the greeting of its cluster config's own section (`echo:`) when a run starts, and keeps it in the run's
record. Its parts are the modules kit's registry looks for: placement, backend, handle, warmup."""

HELP = "this machine, with a greeting (a test plugin)"  # what kit's help says of it
DOCTOR = "that it can say its greeting"  # what kit doctor checks on such a cluster
