"""How commands and files reach a host. `ssh.connect_all(targets, options)` opens one paramiko connection per
host, in parallel, with host keys checked; a `Connection` then runs commands, uploads files and opens the long
watched session a node runs in. paramiko is imported only here, and only when a remote backend needs it."""
