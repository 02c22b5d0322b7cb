"""What kit learns about runs and hosts: environment drift, the goodput report, host health, stragglers."""
