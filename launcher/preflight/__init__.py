"""Checks a node's side can run before anything starts: the entrypoint is there as the node sees it, the master
port is free. Shell text and pure readers, so each backend runs them where its nodes are."""
