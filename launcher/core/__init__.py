"""The core both faces call (the CLI in cli.py + commands/, the Python API in api.py): load -> plan -> launch ->
follow, and a run's state and description read from its record."""
