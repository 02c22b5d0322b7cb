"""A host that accepts the TCP connection and drops it before SSH's banner (a firewall, an overloaded sshd): one
line from kit, exit 2, and no paramiko traceback above it."""

import os
import socket
import subprocess
import sys
import threading

import pytest


@pytest.mark.slow
def test_a_host_dropping_the_connection_is_one_line_without_tracebacks(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def drop():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.close()
    threading.Thread(target=drop, daemon=True).start()
    (tmp_path / "c.yaml").write_text(f"name: c\nbackend: ssh\nhosts: [{{name: h1, address: 127.0.0.1}}]\n"
                                     f"ssh: {{port: {port}, connect_timeout: 5}}\n")
    (tmp_path / "hello.py").write_text("print(1)\n")
    try:
        r = subprocess.run([sys.executable, "-m", "launcher", "submit", "hello.py", "--cluster", "c.yaml"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "KIT_HOME": str(tmp_path / "home")})
    finally:
        listener.close()
    assert r.returncode == 2
    assert r.stderr.startswith("kit: error: host h1 (") and r.stderr.count("\n") == 1, r.stderr
