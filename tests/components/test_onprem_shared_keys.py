"""SSH keys of on-prem hosts are shared per key reference (issue 17 speed goal), never mixed up.

The component resolves each ``ssh.keySecret`` reference once and hands the same secret Output to
every host that names it. Behaviour that must hold: each command connects with the key its own
host names (the example inventory names three: ``env``, ``file`` and ``pulumiConfig``), the key is
a secret on the wire of every command, and commands run on the first control plane (CA hash,
admin kubeconfig, join credentials, drains) use the first control plane's key.
"""

from __future__ import annotations

import pytest

from hybridgpu.stack.inventory import load_inventory_of


@pytest.fixture(scope="module")
def onprem(previews):
    return previews["onprem"]


def _expected_key(kind: str, name: str) -> str:
    # Offline, env/file references are not read (components/onprem.py ssh_private_key); a
    # pulumiConfig reference reads the stack's secure value, which the offline preview shows as
    # the placeholder of hybridgpu.stack.files.
    if kind == "pulumiConfig":
        return "[secret]"
    return f"[offline preview: {kind} {name} not read]"


def test_each_command_uses_the_key_its_host_names(onprem, root):
    inventory = load_inventory_of(onprem.config.onprem, root)
    by_hostname = {h.hostname: h for h in inventory.hosts}
    kinds = {h.ssh.key_secret.kind for h in inventory.hosts if h.state != "absent"}
    assert kinds == {"env", "file", "pulumiConfig"}  # the example names all three
    first = next(r for r in onprem.of_type("command:remote:Command") if r.name.endswith("-kubeadm-init"))
    first_key = first.inputs["connection"]["privateKey"]
    checked = 0
    for rec in onprem.of_type("command:remote:Command"):
        assert "connection" in rec.secret_paths
        key = rec.inputs["connection"]["privateKey"]
        on_host = ("-bootstrap", "-kubeadm-config", "-kubeadm-join", "-kubeadm-init", "-etcd-snapshot-timer", "-registry-auth")
        role = next((s for s in on_host if rec.name.endswith(s)), None)
        if role is None:  # runs on the first control plane
            assert key == first_key, rec.name
            continue
        host = next(h for name, h in by_hostname.items() if rec.name.endswith(f"-{name}{role}"))
        assert key == _expected_key(host.ssh.key_secret.kind, host.ssh.key_secret.name), rec.name
        assert rec.inputs["connection"]["host"] == str(host.addresses.management)
        checked += 1
    assert checked >= 3 * len([h for h in inventory.hosts if h.state != "absent"])
