"""Registry mirror logins (``mirrors.registries[].credentials``) reach the hosts the way containerd reads them, as secrets.

containerd's ``hosts.toml`` takes no credentials (containerd ``docs/hosts.md`` at v1.7.34 and 301026e5: "you can
still specify your credentials via CRI config"); the CRI plugin authenticates a pull with
``Registry.Configs[<host the request goes to>].Auth`` when the kubelet passed none (``image_pull.go``: the
``credentials`` closure and ``ParseAuth``, ``internal/cri/server/images`` at 301026e5, ``pkg/cri/server`` at v1.7.34).
The kubelet's own credentials (image pull secrets, credential providers) are keyed by the image's registry and
carry its ``ServerAddress``, which ``ParseAuth`` refuses for a mirror on another host, so the login must be in
containerd's config, per mirror host. Checked here:

* fixtures tests/fixtures/mirror_credentials/{pass,fail} through ``inventory validate``/``render`` in-process
  (one host with two different logins is refused: containerd keeps one per host);
* the file ``pulumi up`` writes (:func:`registry_auth_fragment`) is TOML whose tables, with the installed major's
  plugin put in, hold each login (escaped), and the bootstrap merges it into config.toml (mode 0600), restarting
  containerd when it changes; Debian's containerd 1.6.20 loads the result and reports the auth (when available);
* under Pulumi's mocks, the login reaches only the secret stdin of each host's ``registry-auth`` command (nothing
  logged, its printed digest secret, ``delete`` removes the file), and the bootstrap re-runs on that digest;
  no other input and no stack output holds the value.
"""

from __future__ import annotations

import os
import subprocess
import tomllib

import pytest

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.inventory.mirrors import registry_logins
from hybridgpu.onprem import plan_onprem
from hybridgpu.render.bootstrap import (
    CRI_REGISTRY_PLACEHOLDER,
    REGISTRY_AUTH_DELETE,
    REGISTRY_AUTH_PATH,
    REGISTRY_AUTH_WRITE,
    bootstrap_script,
    registry_auth_fragment,
)
from tests.helpers import ROOT
from tests.helpers.inventory_cases import cases, refusal_tests, relative, runner
from tests.helpers.sandbox import CLUSTER, CPU, VERSION_2X, VERSION_DEBIAN, Sandbox

FIXTURES = ROOT / "tests/fixtures/mirror_credentials"
PASS, FAIL = cases(FIXTURES)
PASSWORD = 'p"a\\ss$w0rd:ü'  # quotes, a backslash, a dollar, a colon and non-ASCII: all must survive


test_there_are_at_least_ten_of_each, test_must_fail = refusal_tests(PASS, FAIL)


@pytest.mark.parametrize("fixture", PASS, ids=lambda p: p.stem)
def test_must_pass(fixture, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["inventory", "validate", relative(fixture)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("fixture", "hosts"),
    [
        ("one-host-same-login", ["harbor.lab.internal"]),
        ("one-host-one-anonymous", ["harbor.lab.internal"]),
        ("same-host-other-port", ["harbor.lab.internal", "harbor.lab.internal:8443"]),
        ("ipv4-mirror", ["10.50.0.5:5000"]),
        ("no-login", []),
    ],
)
def test_one_login_per_mirror_host(fixture, hosts):
    logins = registry_logins(load_inventory(FIXTURES / "pass" / f"{fixture}.yaml").site.mirrors)
    assert [login.host for login in logins] == hosts


@pytest.mark.parametrize(("plugin", "major"), [('"io.containerd.grpc.v1.cri"', 1), ('"io.containerd.cri.v1.images"', 2)])
def test_fragment_is_toml_with_each_login_under_the_majors_plugin(plugin, major):
    text = registry_auth_fragment([("harbor.lab.internal:8443", f"robot$proxy:{PASSWORD}"), ("hub.lab.internal", "just-a-token")])
    assert text == registry_auth_fragment([("hub.lab.internal", "just-a-token"), ("harbor.lab.internal:8443", f"robot$proxy:{PASSWORD}")])
    configs = tomllib.loads(text.replace(CRI_REGISTRY_PLACEHOLDER, f"plugins.{plugin}.registry"))["plugins"][plugin.strip('"')]["registry"]["configs"]
    assert configs["harbor.lab.internal:8443"]["auth"] == {"username": "robot$proxy", "password": PASSWORD}
    assert configs["hub.lab.internal"]["auth"] == {"identitytoken": "just-a-token"}
    assert registry_auth_fragment([]) == ""


def _bootstrap_with_logins() -> str:
    mirrors = load_inventory(FIXTURES / "pass/two-hosts-two-logins.yaml").site.mirrors
    return bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False, mirrors=mirrors)


@pytest.mark.parametrize(("version", "plugin"), [(VERSION_DEBIAN, "io.containerd.grpc.v1.cri"), (VERSION_2X, "io.containerd.cri.v1.images")], ids=["1.x", "2.x"])
def test_bootstrap_merges_the_logins_into_the_config_and_restarts_on_a_change(tmp_path, version, plugin):
    box = Sandbox(tmp_path, containerd_version=version)
    script = _bootstrap_with_logins()
    auth = box.file(REGISTRY_AUTH_PATH)
    auth.parent.mkdir(parents=True)
    auth.write_text(registry_auth_fragment([("harbor.lab.internal", f"robot:{PASSWORD}")]))
    first = box.run(script)
    assert first.returncode == 0, first.stderr
    config = box.file("/etc/containerd/config.toml")
    loaded = tomllib.loads(config.read_text())
    assert loaded["plugins"][plugin]["registry"]["configs"]["harbor.lab.internal"]["auth"]["password"] == PASSWORD
    assert loaded["plugins"][plugin]["registry"]["config_path"].endswith("/etc/containerd/certs.d")  # mirrors: still hosts.toml
    assert oct(config.stat().st_mode & 0o777) == "0o600"
    assert PASSWORD not in first.stdout + first.stderr
    # Rotated on the Pulumi side: the file changes, the re-run rewrites the config and restarts containerd.
    auth.write_text(registry_auth_fragment([("harbor.lab.internal", "robot:rotated")]))
    second = box.run(script)
    assert second.returncode == 0 and "systemctl restart containerd" in box.calls
    assert "rotated" in config.read_text() and PASSWORD not in config.read_text()
    third = box.run(script)
    assert third.returncode == 0 and "systemctl restart containerd" not in box.calls


def test_without_the_file_the_config_is_what_it_was(tmp_path):
    box = Sandbox(tmp_path)
    assert box.run(_bootstrap_with_logins()).returncode == 0
    with_logins = box.file("/etc/containerd/config.toml")
    other = Sandbox(tmp_path / "plain")
    assert other.run(bootstrap_script(CLUSTER, CPU, nvidia_toolkit=False)).returncode == 0
    plain = other.file("/etc/containerd/config.toml").read_text().replace(str(other.root), "")
    assert with_logins.read_text().replace(str(box.root), "") == plain
    assert oct(with_logins.stat().st_mode & 0o777) == "0o644"


def test_debians_containerd_loads_the_config_with_the_login(debian_containerd, tmp_path):
    """containerd 1.6.20 (Debian 12's package) reads the merged config: ``config dump`` shows the auth under the CRI
    registry, next to ``config_path`` (no "mirrors cannot be set" refusal: only mirrors conflict with config_path)."""
    _, binary, _ = debian_containerd
    if binary is None:
        pytest.skip("the packaged containerd binary does not run here")
    box = Sandbox(tmp_path / "box")
    auth = box.file(REGISTRY_AUTH_PATH)
    auth.parent.mkdir(parents=True)
    auth.write_text(registry_auth_fragment([("harbor.lab.internal", f"robot:{PASSWORD}")]))
    assert box.run(_bootstrap_with_logins()).returncode == 0
    out = subprocess.run(
        [str(binary), "--config", str(box.file("/etc/containerd/config.toml")), "config", "dump"], capture_output=True, text=True, check=True, timeout=30
    )
    registry = tomllib.loads(out.stdout)["plugins"]["io.containerd.grpc.v1.cri"]["registry"]
    assert registry["configs"]["harbor.lab.internal"]["auth"]["username"] == "robot"
    assert registry["configs"]["harbor.lab.internal"]["auth"]["password"] == PASSWORD


# --------------------------------------------------------------------------- under Pulumi's mocks


def test_logins_travel_only_as_secrets(monkeypatch):
    from hybridgpu.components.onprem import OFFLINE_ENV, OnPremCluster, OnPremClusterArgs
    from hybridgpu.shell.preview import run_preview

    plan = plan_onprem(load_inventory(FIXTURES / "pass/two-hosts-two-logins.yaml"))
    monkeypatch.setenv("LAB_SSH_KEY", "not a key")
    monkeypatch.setenv("LAB_HARBOR", f"robot:{PASSWORD}")
    monkeypatch.setenv("LAB_HUB", "hub-token-value")

    def program() -> None:
        os.environ.pop(OFFLINE_ENV, None)  # read the env references as `pulumi up` does
        OnPremCluster("lab", OnPremClusterArgs(plan=plan))

    result = run_preview("onprem", ROOT, program=program)
    commands = {r.name: r for r in result.of_type("command:remote:Command")}
    expected = registry_auth_fragment([("harbor.lab.internal", f"robot:{PASSWORD}"), ("hub-cache.lab.internal", "hub-token-value")])
    for host in ("cp-01", "gpu-01"):
        auth, bootstrap = commands[f"lab-{host}-registry-auth"], commands[f"lab-{host}-bootstrap"]
        assert auth.inputs["stdin"] == expected and "stdin" in auth.secret_paths
        assert auth.inputs["create"] == REGISTRY_AUTH_WRITE and auth.inputs["delete"] == REGISTRY_AUTH_DELETE
        assert auth.inputs["logging"] == "none" and {"stdout", "stderr"} <= set(auth.additional_secret_outputs)
        assert auth.urn in bootstrap.dependencies and "triggers" in bootstrap.secret_paths
    for rec in result.records:
        plain = {k: v for k, v in rec.inputs.items() if not any(p == k or p.startswith(f"{k}.") for p in rec.secret_paths)}
        assert "hub-token-value" not in str(plain) and "w0rd" not in str(plain), rec.name
    assert "hub-token-value" not in str(result.outputs) and "w0rd" not in str(result.outputs)
