"""A local registry mirror that records what containerd asks it, for the hosts.toml tests.

Used by tests/render/test_host_sandbox.py and tests/inventory/test_mirrors.py with Debian's real
containerd: ``ctr images pull --hosts-dir`` reads a hosts directory with the code the CRI plugin
uses for ``config_path`` (containerd v1.6.20 ``remotes/docker/config/hosts.go`` ``ConfigureHosts``).
Only loopback addresses are used.
"""

from __future__ import annotations

import http.server
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RecordingMirror:
    """``port``: the mirror (answers 404 to everything and records the request line in ``seen``);
    ``upstream_port``: a bound socket that never listens, so an upstream pull is refused at once."""

    port: int
    upstream_port: int
    seen: list[str] = field(default_factory=list)


@contextmanager
def recording_mirror() -> Iterator[RecordingMirror]:
    """Run a :class:`RecordingMirror` on 127.0.0.1 for the duration of the block."""
    seen: list[str] = []

    class Mirror(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.send_error(404)

        do_HEAD = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Mirror)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    try:
        yield RecordingMirror(server.server_address[1], closed.getsockname()[1], seen)
    finally:
        server.shutdown()
        server.server_close()
        closed.close()


def ctr_pull(ctr: Path, sock: Path, hosts_dir: Path, ref: str) -> subprocess.CompletedProcess[str]:
    """``ctr images pull --hosts-dir HOSTS_DIR REF`` against the daemon at ``sock`` (60 s at most)."""
    return subprocess.run(
        [str(ctr), "--address", str(sock), "images", "pull", "--hosts-dir", str(hosts_dir), ref],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
