"""The OpenSSH client config as kit reads it, without logging in: UserKnownHostsFile with its tokens, and the
`/dev/null` that goes with StrictHostKeyChecking no (kit still checks keys, against ~/.ssh/known_hosts)."""

import getpass
import os

from launcher.transport.endpoint import resolve


def test_user_known_hosts_file_tokens_and_dev_null(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    config = tmp_path / "config"
    config.write_text("Host a\n  UserKnownHostsFile %d/.ssh/kh1 ~/kh2 /etc/%u_kh\nHost b\n  UserKnownHostsFile /dev/null\n")
    ep = resolve("a", None, {"config_file": str(config)})
    assert ep.known_hosts == (f"{tmp_path}/.ssh/kh1", f"{tmp_path}/kh2", f"/etc/{getpass.getuser()}_kh")
    assert resolve("b", None, {"config_file": str(config)}).known_hosts == (os.path.join(str(tmp_path), ".ssh",
                                                                                         "known_hosts"),)
    # The cluster's own known_hosts comes first (where an accepted key is written).
    assert resolve("a", None, {"config_file": str(config), "known_hosts": "/k"}).known_hosts[0] == "/k"
