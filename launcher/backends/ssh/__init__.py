"""The SSH backend: bare hosts over paramiko, one watched channel per node."""

HELP = "bare hosts over SSH"  # what the CLI's help says of it
DOCTOR = "every host: reach, python, versions, ports"  # what kit doctor checks on such a cluster
