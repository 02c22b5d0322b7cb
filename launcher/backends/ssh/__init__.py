"""The SSH backend: bare hosts over paramiko, one watched channel per node."""
