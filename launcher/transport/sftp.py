"""Starting a host's SFTP session (kit uploads each node's files with it), and saying in a user's terms why it
did not start. A host can refuse the subsystem (hardened sshd configs drop it), and a login shell that prints
on a non-interactive login (an echo in ~/.bashrc) corrupts SFTP's first packet: sshd runs an external
sftp-server through the user's shell, which reads that rc file first. paramiko reports these as "Channel closed."
or "Garbage packet received", which name neither cause."""

REFUSED = (
    "SFTP was refused: the host's sshd offers no sftp subsystem (kit uploads each node's files over SFTP; "
    "add `Subsystem sftp internal-sftp` to its sshd_config)"
)
TEXT_FIRST = (
    "SFTP got text before its first packet: something prints on a non-interactive login, usually "
    "~/.bashrc (print only when the shell is interactive; `ssh HOST true` must print nothing)"
)
ENDED = (
    "SFTP ended before it started: the host's sftp subsystem command failed or printed a little and quit "
    "(see the host's sshd log; `Subsystem sftp internal-sftp` runs no program)"
)


class SftpUnavailable(Exception):
    """The host's SFTP session did not start; the message says why and what to change."""


def start_sftp(transport, timeout: float):
    """An SFTPClient on `transport` (an authenticated paramiko Transport), or SftpUnavailable."""
    from launcher.transport import load_paramiko

    paramiko = load_paramiko()
    chan = transport.open_session(timeout=timeout)
    try:
        chan.invoke_subsystem("sftp")
    except paramiko.SSHException:
        chan.close()
        if not transport.is_active():
            raise  # the connection itself went: not about SFTP
        raise SftpUnavailable(REFUSED) from None
    try:
        return paramiko.SFTPClient(chan)
    except paramiko.SFTPError as e:  # the first 4 bytes were no packet length: text
        chan.close()
        raise SftpUnavailable(TEXT_FIRST if "Garbage" in str(e) else f"SFTP did not start: {e}") from None
    except paramiko.SSHException as e:  # "EOF during negotiation"
        chan.close()
        if not transport.is_active():
            raise
        raise SftpUnavailable(ENDED if "EOF" in str(e) else f"SFTP did not start: {e}") from None
