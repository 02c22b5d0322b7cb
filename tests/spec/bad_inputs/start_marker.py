"""The entrypoint of every bad-input job: if kit ever starts it, the marker file appears."""
open("STARTED", "w").write("started\n")
