"""The subprocess backend, written from scratch on kit's backend contract alone: each node of the plan is one
`bash -c <the node's command>` started with subprocess.Popen in a process group of its own on this machine (the
cluster's hosts are names; every address is this machine's). It subclasses only the contract's bases (Backend,
Placement), nothing of kit's own backends. Its parts are the modules kit's registry looks for: placement, backend."""

HELP = "each node a process group on this machine (a test plugin)"
DOCTOR = None
