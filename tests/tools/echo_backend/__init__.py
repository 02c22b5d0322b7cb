"""A fourth backend for the tests, made as a user would add one: this subpackage and one registry line. It plans
like a local cluster (its own name on every host, its own dry-run line) and runs through the local backend."""
