"""A private MariaDB for slurmdbd, on a loopback port, with its data under the testbed dir.

It starts from an empty data directory with --skip-grant-tables: no mariadb-install-db (~5 s here), no users or
passwords; safe because it listens on 127.0.0.1 only and lives for one test session.
"""

import os
import socket

from tests.harness.daemons import start_daemon
from tests.harness.shell import wait_until


def start_mariadb(bed, port):
    base = bed.path("mariadb")
    os.makedirs(os.path.join(base, "data"))
    log = os.path.join(base, "mariadbd.log")
    argv = ["mariadbd", "--no-defaults", f"--datadir={base}/data", f"--socket={base}/mysqld.sock",
            f"--pid-file={base}/mariadbd.pid", f"--log-error={log}", f"--port={port}",
            "--bind-address=127.0.0.1", "--user=root", "--skip-grant-tables", "--skip-name-resolve",
            "--skip-log-bin", "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M",
            # Durability is pointless for a throwaway test database; fsyncs are most of its start-up time.
            "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0"]
    daemon = start_daemon("mariadbd", argv, log)

    def ready():
        daemon.check_alive()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    wait_until(ready, "mariadbd to accept connections", log=log)
    return daemon
