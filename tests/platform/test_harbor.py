"""Harbor as the site's pull-through cache (issue 27): settings through the CLI, the chart values against the pinned chart,
the proxy-cache setup against Harbor's API, the hosts' containerd mirrors, and one offline preview of the releases.

Upstream read 2026-11-27: goharbor/harbor-helm v1.19.1 (ae011519: ``values.yaml``, ``templates/core/core-cm.yaml``
``PERMITTED_REGISTRY_TYPES_FOR_PROXY_CACHE``, ``templates/_helpers.tpl``); goharbor/harbor v2.15.1 (335c05f2:
``api/v2.0/swagger.yaml`` ``/registries``, ``/projects`` HEAD and POST with ``registry_id``; ``src/pkg/project/manager.go``
project names; ``src/server/v2.0/handler/project.go``: only system admins create proxy cache projects); containerd
``docs/hosts.md`` (``override_path``).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from hybridgpu.config.harbor import HarborConfig
from hybridgpu.inventory.mirrors import Mirrors
from hybridgpu.render.charts import CHARTS, chart_placements, helm_merge
from hybridgpu.render.containerd import registry_hosts_toml
from hybridgpu.render.harbor import PROXY_CACHE_TYPES, UPSTREAMS, harbor_mirrors, harbor_values, proxy_cache_script
from hybridgpu.render.scheduling import NodeGroup, placement_problems
from tests.helpers import ROOT
from tests.helpers.cases import assert_fixture_counts, assert_verdict, case_ids, edited_project, load_cases, runner
from tests.platform.platform_cases import model_case_keys, SECRET, leaf_paths, validate_case

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/platform/harbor/cases.yaml")
KEYS = yaml.safe_load((ROOT / "tests/fixtures/platform/harbor/chart-keys-1.19.1.yaml").read_text())
#: goharbor/harbor src/pkg/project/manager.go validProjectName.
PROJECT_NAME = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")


def _config(**extra: Any) -> HarborConfig:
    return HarborConfig.model_validate({"enabled": True, "hostname": "harbor.site-a.internal", "adminPasswordSecret": "harbor:adminPassword", **extra})


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, tmp_path, case):
    assert_verdict(validate_case(scratch_project, tmp_path, case, ["harbor:adminPassword"]), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)


@pytest.mark.parametrize("extra", [{}, {"expose": "ingress", "tlsCertificate": "harbor:tlsCert", "tlsKey": "harbor:tlsKey"}, {"expose": "loadBalancer", "trivy": True}])
def test_every_value_we_set_exists_in_the_pinned_chart_with_its_type(extra):
    values = harbor_values(_config(**extra), "hybridgpu-harbor-nfs")
    free = set(KEYS["free"])
    for path, value in leaf_paths(values, free).items():
        if path in KEYS["template_keys"]:
            continue
        assert path in KEYS["keys"], f"{path} is not a values key of harbor-helm 1.19.1"
        assert type(value).__name__ == KEYS["keys"][path], (path, value)
    # No secret in the rendered values: the chart reads the admin password and the encryption key from Secrets.
    assert "harborAdminPassword" not in values and "secretKey" not in values and "password" not in values.get("database", {}).get("internal", {})
    assert values["existingSecretAdminPassword"] and values["existingSecretSecretKey"]
    claims = values["persistence"]["persistentVolumeClaim"]
    assert {c.get("storageClass") for c in (claims["registry"], claims["database"], claims["redis"], claims["trivy"], claims["jobservice"]["jobLog"])} == {"hybridgpu-harbor-nfs"}


def test_upstream_endpoints_use_types_the_chart_permits_for_proxy_cache():
    """chart v1.19.1 core-cm permits no `quay` type (Harbor's own prepare template does): quay.io goes as docker-registry."""
    assert {u.type for u in UPSTREAMS.values()} <= set(PROXY_CACHE_TYPES)
    assert UPSTREAMS["quay.io"].type == "docker-registry" and UPSTREAMS["docker.io"].url == "https://hub.docker.com"
    assert all(PROJECT_NAME.match(p.project_name) for p in _config().proxy_cache)


class FakeHarbor(BaseHTTPRequestHandler):
    """Harbor v2.15.1's API as the setup script uses it (swagger.yaml): basic auth, registries, HEAD/POST projects."""

    state: dict[str, Any]

    def _send(self, code: int, body: Any = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _authorized(self) -> bool:
        expected = "Basic " + base64.b64encode(f"admin:{self.state['password']}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self._send(401, {"errors": [{"code": "UNAUTHORIZED"}]})
            return False
        return True

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/api/v2.0/ping":
            return self._send(200, "Pong")
        if not self._authorized():
            return None
        if url.path == "/api/v2.0/registries":
            (query,) = parse_qs(url.query)["q"]
            key, _, name = query.partition("=")
            assert key == "name", query
            return self._send(200, [r for r in self.state["registries"] if r["name"] == name])
        return self._send(404)

    def do_HEAD(self) -> None:
        url = urlsplit(self.path)
        if not self._authorized():
            return None
        (name,) = parse_qs(url.query)["project_name"]
        return self._send(200 if name in self.state["projects"] else 404)

    def do_POST(self) -> None:
        if not self._authorized():
            return None
        if self.state.get("fail_posts"):
            return self._send(500, {"errors": [{"code": "INTERNAL"}]})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.state["posts"].append((self.path, body))
        if self.path == "/api/v2.0/registries":
            assert set(body) <= {"name", "type", "url", "insecure", "credential", "description"}, body
            if body["type"] not in PROXY_CACHE_TYPES or not body["url"].startswith("https://") or len(body["name"]) > 64:
                return self._send(400)
            if body["url"] in self.state.get("unreachable", ()):  # controller.validate pings the upstream
                return self._send(400, {"errors": [{"code": "BAD_REQUEST", "message": "the registry is unhealthy"}]})
            if any(r["name"] == body["name"] for r in self.state["registries"]):
                return self._send(409)
            self.state["registries"].append({"id": len(self.state["registries"]) + 1, "creation_time": "t", **body})
            return self._send(201)
        if self.path == "/api/v2.0/projects":
            ids = {r["id"] for r in self.state["registries"]}
            if not PROJECT_NAME.match(body["project_name"]) or body.get("registry_id") not in ids or body["metadata"] != {"public": "true"}:
                return self._send(400)
            if body["project_name"] in self.state["projects"]:
                return self._send(409)
            self.state["projects"][body["project_name"]] = body["registry_id"]
            return self._send(201)
        return self._send(404)


@pytest.fixture
def harbor_api():
    state: dict[str, Any] = {"password": "s3cr3t 'quoted'", "registries": [], "projects": {}, "posts": []}
    handler = type("Handler", (FakeHarbor,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/v2.0", state
    server.shutdown()


def _run(script: str, api: str, state: dict[str, Any], tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": "/usr/bin:/bin", "HARBOR_API": api, "HARBOR_ADMIN_PASSWORD": state["password"], "OUT": str(tmp_path / "out"), **env}
    return subprocess.run(["sh", "-c", script], env=environ, capture_output=True, text=True, timeout=60)


def test_setup_creates_each_proxy_cache_once_and_reruns_idempotently(harbor_api, tmp_path):
    api, state = harbor_api
    config = _config(proxyCache=[{"registry": "registry.k8s.io"}, {"registry": "nvcr.io", "credentials": "harbor:ngc"}, {"registry": "quay.io"}])
    script = proxy_cache_script(config, "harbor")
    # The Job runs it with the core image's /bin/sh: POSIX sh, every shellcheck style check clean.
    lint = subprocess.run(["shellcheck", "--shell=sh", "--severity=style", "-"], input=script, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    first = _run(script, api, state, tmp_path, CRED_1="$oauthtoken:nvapi-123")
    assert first.returncode == 0, first.stderr
    assert state["projects"] == {"k8s": 1, "nvcr": 2, "quay": 3}
    registries = {r["name"]: r for r in state["registries"]}
    assert registries["proxy-nvcr"]["credential"] == {"type": "basic", "access_key": "$oauthtoken", "access_secret": "nvapi-123"}
    assert registries["proxy-quay"]["type"] == "docker-registry" and registries["proxy-k8s"]["url"] == "https://registry.k8s.io"
    posts = len(state["posts"])
    again = _run(script, api, state, tmp_path, CRED_1="$oauthtoken:nvapi-123")
    assert again.returncode == 0, again.stderr
    assert len(state["posts"]) == posts and "created" not in again.stdout
    # An endpoint left from a failed run is reused, not created twice (409 otherwise).
    state["projects"].pop("quay")
    third = _run(script, api, state, tmp_path, CRED_1="$oauthtoken:nvapi-123")
    assert third.returncode == 0 and state["projects"]["quay"] == 3, third.stderr


def test_setup_fails_loudly_on_an_api_error(harbor_api, tmp_path):
    api, state = harbor_api
    state["fail_posts"] = True
    done = _run(proxy_cache_script(_config(), "harbor"), api, state, tmp_path)
    assert done.returncode != 0 and "POST /registries (proxy-k8s) answered HTTP 500" in done.stderr
    state["fail_posts"] = False
    state["unreachable"] = {"https://nvcr.io"}
    offline = _run(proxy_cache_script(_config(), "harbor"), api, state, tmp_path)
    assert offline.returncode != 0 and "POST /registries (proxy-nvcr) answered HTTP 400" in offline.stderr and "unhealthy" in offline.stderr
    wrong = _run(proxy_cache_script(_config(), "harbor"), api, {**state, "password": "nope"}, tmp_path)
    assert wrong.returncode != 0 and "HTTP 401" in wrong.stderr


def test_derived_mirrors_are_valid_inventory_entries_and_hosts_toml_points_at_the_projects():
    """containerd with ``override_path = true`` sends ``<url>/<name>/manifests/<ref>`` (docs/hosts.md), i.e. Harbor's
    ``/v2/<project>/<name>/manifests/<ref>``: the proxy cache project of that registry."""
    config = _config(caFile="/etc/ssl/certs/site-a-ca.pem")
    mirrors = Mirrors.model_validate({"registries": harbor_mirrors(config)})
    assert [m.registry for m in mirrors.registries] == list(UPSTREAMS)
    toml = registry_hosts_toml(mirrors.registries[0])
    assert '[host."https://harbor.site-a.internal:30003/v2/k8s"]' in toml and "override_path = true" in toml
    assert 'server = "https://registry.k8s.io"' in toml and 'ca = "/etc/ssl/certs/site-a-ca.pem"' in toml
    docker = next(m for m in mirrors.registries if m.registry == "docker.io")
    assert docker.mirrors[0].url.endswith("/v2/dockerhub") and docker.effective_server() == "https://registry-1.docker.io"


def test_harbor_pods_run_on_the_control_plane_or_system_nodes_only():
    control = NodeGroup(name="cp", labels={"kubernetes.io/os": ("linux",)}, taints=({"key": "node-role.kubernetes.io/control-plane", "value": "", "effect": "NoSchedule"},), gpu=False, nodes=3)
    gpu = NodeGroup(name="gpu", labels={"kubernetes.io/os": ("linux",)}, taints=({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},), gpu=True, nodes=4)
    ours = chart_placements("harbor", harbor_values(_config(), "sc"), "harbor")
    assert len(ours) == 7 and all(placement_problems(p, control) == [] and placement_problems(p, gpu) != [] for p in ours)
    defaults = chart_placements("harbor", helm_merge(CHARTS["harbor"].defaults, {}), "harbor")
    assert all(placement_problems(p, control) != [] for p in defaults)


def test_offline_preview_builds_both_releases_without_secrets_in_the_manifests(scratch_project, tmp_path):
    """The one mocks preview of these tests: the on-prem stack with MLflow and Harbor."""

    def edit(config: dict[str, Any]) -> None:
        config["hybridgpu:platform"] = {
            "mlflow": {"enabled": True, "database": {"host": "pg.site-a.internal", "passwordSecret": "mlflow:dbPassword"}},
            "harbor": {"enabled": True, "hostname": "harbor.site-a.internal", "adminPasswordSecret": "harbor:adminPassword"},
        }
        config["mlflow:dbPassword"] = SECRET
        config["harbor:adminPassword"] = SECRET

    root = edited_project(scratch_project, "onprem", edit)
    out = tmp_path / "out"
    result = runner.invoke(__import__("hybridgpu.cli", fromlist=["app"]).app, ["preview", "onprem", "--root", str(root), "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    manifests = out / "onprem" / "manifests"
    names = {p.name for p in manifests.iterdir()}
    assert {"storageclass-hybridgpu-harbor-nfs.yaml", "storageclass-hybridgpu-mlflow-nfs.yaml", "secret-mlflow-backend-store.yaml", "secret-harbor-admin.yaml"} <= names
    job = yaml.safe_load(next(manifests.glob("job-harbor-proxy-cache-setup-*.yaml")).read_text())
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "docker.io/goharbor/harbor-core:v2.15.1" and container["command"][:2] == ["/bin/sh", "-c"]
    assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in job["spec"]["template"]["spec"]["tolerations"]
    storage = yaml.safe_load((manifests / "storageclass-hybridgpu-mlflow-nfs.yaml").read_text())
    assert storage["provisioner"] == "nfs.csi.k8s.io" and storage["parameters"]["share"] == "/exports/datasets"
    text = "\n".join(p.read_text() for p in (out / "onprem").rglob("*.yaml"))
    assert "postgresql://" not in text and "placeholder" not in text


MODEL_CASES: list[dict[str, Any]] = load_cases("tests/fixtures/platform/harbor/model-cases.yaml")


@pytest.mark.parametrize("case", MODEL_CASES, ids=case_ids(MODEL_CASES))
def test_model_verdict(case):
    """Single-section rules, checked by the model as `hybridgpu validate` runs it (the CLI cases above cover the same path)."""
    keys = model_case_keys(case["platform"])
    assert keys == ([case["key"]] if case["verdict"] == "fail" else []), keys


def test_the_mirrors_docs_show_are_the_ones_derived_from_the_settings():
    """docs/onprem.md's Harbor example is what ``harbor_mirrors`` derives for the documented settings (defaults, caFile)."""
    text = (ROOT / "docs/onprem.md").read_text()
    section = text[text.index("### Harbor as a pull-through cache") :]
    section = section[: section.index("### What to mirror")]
    block = section[section.index("  ```yaml\n  mirrors:") + len("  ```yaml\n") :]
    block = block[: block.index("  ```")]
    documented = yaml.safe_load("\n".join(line[2:] for line in block.splitlines()))
    assert documented["mirrors"]["registries"] == harbor_mirrors(_config(caFile="/etc/ssl/certs/site-a-ca.pem"))


# ---------------------------------------------------------------------------------------------- `hybridgpu images` data

PLATFORM_IMAGES = ROOT / "hybridgpu/stack/data/chart_images_platform.yaml"
HARBOR_HELM_MIRROR = Path("/work/.mirror/goharbor+harbor-helm/repo")
#: Harbor's image values (path, flag that enables it) in chart v1.19.1; nginx exists unless expose.type is ingress.
_HARBOR_IMAGES = (
    ("nginx.image", None), ("portal.image", None), ("core.image", None), ("jobservice.image", None),
    ("registry.registry.image", None), ("registry.controller.image", None), ("trivy.image", "trivy.enabled"),
    ("database.internal.image", None), ("redis.internal.image", None), ("exporter.image", "metrics.enabled"),
)


def platform_chart_images(harbor_values_yaml: str) -> dict[str, Any]:
    """The ``chart_images_platform.yaml`` document: Harbor's images from its values.yaml at the pinned tag, MLflow's from its
    recorded values (``image.repository``; the tag is the one our values pin, ``v<appVersion>-full``)."""
    from hybridgpu.render.harbor import HARBOR_CHART_VERSION
    from hybridgpu.render.mlflow import MLFLOW_APP_VERSION, MLFLOW_CHART_VERSION

    upstream = yaml.safe_load(harbor_values_yaml)
    images = []
    for path, flag in _HARBOR_IMAGES:
        node: Any = upstream
        for part in path.split("."):
            node = node[part]
        images.append({**({"enabledBy": [flag]} if flag else {}), "path": path, "repository": node["repository"], "tag": node["tag"]})
    return {
        "charts": {
            f"harbor@{HARBOR_CHART_VERSION}": {
                "defaults": {"trivy": {"enabled": upstream["trivy"]["enabled"]}, "metrics": {"enabled": upstream["metrics"]["enabled"]}},
                "images": images,
                "source": "goharbor/harbor-helm values.yaml @ ae011519ef17 (v1.19.1, 2026-05-12)",
            },
            f"mlflow@{MLFLOW_CHART_VERSION}": {
                "appVersion": MLFLOW_APP_VERSION,
                "defaults": {},
                "images": [{"path": "image", "repository": "ghcr.io/mlflow/mlflow", "tag": ""}],
                "source": "mlflow/mlflow charts/values.yaml @ 9e068576c466 (chart 0.1.0; the tag is ours: v<appVersion>-full, _helpers.tpl mlflow.image)",
            },
        }
    }


def _platform_images_text() -> str:
    values = subprocess.run(["git", "-C", str(HARBOR_HELM_MIRROR), "show", "v1.19.1:values.yaml"], capture_output=True, text=True, check=True).stdout
    header = (
        "# Images of the pinned platform charts (Harbor, MLflow), in the format of chart_images.yaml. Harbor's from its values.yaml at\n"
        "# the pinned tag, MLflow's from its recorded values. Generated by `python -m tests.platform.test_harbor`;\n"
        "# tests/platform/test_harbor.py fails on any difference when the harbor-helm mirror is present. Do not edit by hand.\n"
    )
    return header + yaml.safe_dump(platform_chart_images(values), sort_keys=True)


@pytest.mark.skipif(not HARBOR_HELM_MIRROR.exists(), reason="no local mirror of goharbor/harbor-helm")
def test_platform_chart_images_match_the_pinned_charts():
    assert PLATFORM_IMAGES.read_text() == _platform_images_text(), "run `python -m tests.platform.test_harbor`"


def test_images_lists_harbor_and_mlflow_images_as_the_stack_pins_them():
    """``hybridgpu images`` of an on-prem stack with both releases: the images a disconnected site must pre-load for Harbor itself."""
    from hybridgpu.render.mlflow import mlflow_values
    from hybridgpu.stack.images import list_images

    releases = [
        {"chart": "harbor", "version": "1.19.1", "repositoryOpts": {"repo": "https://helm.goharbor.io"}, "values": harbor_values(_config(), "sc")},
        {"chart": "oci://ghcr.io/mlflow/charts/mlflow", "version": "0.1.0",
         "values": mlflow_values(__import__("hybridgpu.config.mlflow", fromlist=["MlflowConfig"]).MlflowConfig.model_validate(
             {"enabled": True, "database": {"host": "pg", "passwordSecret": "mlflow:x"}}), "onprem", storage_class="sc")},
    ]
    listing = list_images(releases, None)
    assert "docker.io/goharbor/harbor-core:v2.15.1" in listing.images and "ghcr.io/mlflow/mlflow:v3.11.1-full" in listing.images
    assert not any("trivy" in i or "exporter" in i for i in listing.images)  # off in our values
    assert not [u for u in listing.unpinned if "harbor" in u or "mlflow" in u]


if __name__ == "__main__":
    PLATFORM_IMAGES.write_text(_platform_images_text())
