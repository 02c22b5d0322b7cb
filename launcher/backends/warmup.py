"""A backend's warm-up: work begun while kit plans a real run (`kit submit`'s start-up fast path,
commands/fastpath.py), so that the run starts sooner; an SSH cluster's hosts are logged in to meanwhile. Light:
it runs before kit has loaded its schemas, and it must leave nothing behind that the run does not claim."""


class WarmUp:
    """The contract, and its defaults: nothing to warm up. kit asks wants(); after a yes it forks its planner,
    then calls start(), meanwhile() while the planner works, and close() in the end, whatever happened."""

    def wants(self, request, cluster: dict) -> bool:
        """Whether to warm up for this submission (a core/request.Request); `cluster` is the cluster file's data as
        plain YAML, unvalidated. No threads, no connections yet: kit forks its planner after a yes."""
        return False

    def start(self) -> None:
        """Begin, in the background."""

    def meanwhile(self) -> None:
        """While the planner works: load what the run will need."""

    def close(self) -> None:
        """End what the run did not claim (it failed to plan, turned out to be a sweep, was interrupted)."""


def read_yaml(path: str):
    """A YAML file's data, unvalidated, read with libyaml where PyYAML has it (1 ms less per file on the way to
    the hosts)."""
    import yaml

    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
