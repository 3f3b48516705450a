"""``hybridgpu images STACK [--json]`` and the chart image data it reads (issue 27, section 3).

* ``hybridgpu/stack/data/chart_images.yaml`` must equal what :func:`derive` reads from the pinned
  charts' ``values.yaml`` under ``../shared/upstream/cloud/<chart>-<version>/`` (each with its
  ``SOURCE.txt``: repository, tag, commit), so the data cannot drift from the charts. Regenerate with
  ``python -m tests.cli.test_images > hybridgpu/stack/data/chart_images.yaml``.
* Image value shapes, as the charts' templates read them (the values files themselves): NVIDIA
  GPU Operator v26.7.0 ``<component>.{repository,image,version}`` (NVIDIA/gpu-operator 10ee5b36
  ``deployments/gpu-operator/values.yaml``); Kueue v0.19.2, csi-driver-nfs v4.13.4, Karpenter 1.14.1
  ``image.{repository,tag[,digest]}``; OpenCost 2.5.17 ``image.{registry,repository,tag}``;
  csi-driver-nfs's sidecars ``/sig-storage/...`` under ``image.baseRepo``.
* Chart ``appVersion`` (the tag of an image whose values leave it empty): OpenCost 2.5.17 app
  1.120.1 (hybridgpu.render.charts); GPU Operator and Network Operator tag the chart and the app
  alike (``appVersion: "v22.9.0"`` for chart v22.9.0, NVIDIA/gpu-operator 05b3e1ed
  ``deployments/gpu-operator/Chart.yaml``; ``appVersion: v25.1.0-rc.1`` for 25.1.0-rc.1,
  Mellanox/network-operator 015800a1 ``deployment/network-operator/Chart.yaml``), assumed for the
  pinned versions (not read at their tags).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hybridgpu.cli import app
from hybridgpu.inventory import load_inventory
from hybridgpu.render.charts import helm_merge
from hybridgpu.stack.images import CHART_IMAGES_FILE, list_images
from tests.helpers import ROOT
from tests.helpers.inventory_cases import runner

UPSTREAM = ROOT.parent / "shared" / "upstream" / "cloud"
DATA = ROOT / "hybridgpu" / "stack" / CHART_IMAGES_FILE

#: chart@version -> (directory under UPSTREAM, appVersion or None, subchart -> its condition, extra enable flags).
CHARTS: dict[str, tuple[str, str | None, dict[str, str], dict[str, str]]] = {
    "gpu-operator@v26.7.0": ("gpu-operator-v26.7.0", "v26.7.0", {"node-feature-discovery": "nfd.enabled"}, {}),
    "network-operator@26.4.1": (
        "network-operator-26.4.1",
        "v26.4.1",
        {
            "node-feature-discovery": "nfd.enabled",
            "maintenance-operator-chart": "maintenanceOperator.enabled",
            "sriov-network-operator": "sriovNetworkOperator.enabled",
        },
        {},
    ),
    "kueue@0.19.2": ("kueue-0.19.2", None, {}, {"kueueViz": "enableKueueViz"}),
    "opencost@2.5.17": ("opencost-2.5.17", "1.120.1", {}, {}),
    "csi-driver-nfs@4.13.4": ("csi-driver-nfs-4.13.4", None, {}, {}),
    "karpenter@1.14.1": ("karpenter-1.14.1", None, {}, {}),
    "karpenter-crd@1.14.1": ("karpenter-crd-1.14.1", None, {}, {}),
    "nvidia-device-plugin@0.20.0": ("nvidia-device-plugin-0.20.0", None, {}, {}),
    "aws-efa-k8s-device-plugin@v0.5.30": ("aws-efa-k8s-device-plugin-v0.5.30", None, {}, {}),
    "aws-fsx-csi-driver@1.17.0": ("aws-fsx-csi-driver-1.17.0", None, {}, {}),
    "prometheus-operator-crds@31.0.1": ("prometheus-operator-crds-31.0.1", None, {}, {}),
}
_FIELDS = ("registry", "repository", "image", "tag", "version", "digest")
#: Charts whose source values.yaml at the pinned tag names images the published chart does not: the source names the
#: previous release (Karpenter v1.14.1: controller tag 1.13.0) or a staging registry and branch tag (Kueue v0.19.2:
#: us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:release-0.19); their release processes rewrite the values.
SOURCE_VALUES_DIFFER = {
    "karpenter@1.14.1": "images from the chart source's values.yaml at v1.14.1 (controller tag 1.13.0); the published chart's may differ: compare `helm show values`",
    "kueue@0.19.2": "images from the chart source's values.yaml (a staging registry, branch tag); the published chart's may differ: compare `helm show values`",
}


def _walk(node: Any, path: list[str], enabled: list[str]):
    """(path, image fields, enable flags) of every image mapping under ``node``."""
    if not isinstance(node, dict):
        return
    here = enabled + ([".".join([*path, "enabled"])] if isinstance(node.get("enabled"), bool) and path else [])
    if "repository" in node and any(k in node for k in ("tag", "version", "image")):
        yield path, {k: node[k] for k in _FIELDS if k in node and node[k] is not None}, here
        return
    for key, value in node.items():
        yield from _walk(value, [*path, str(key)], here)


def _set(tree: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


def _lookup(tree: Any, path: str) -> Any:
    for part in path.split("."):
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree


def derive() -> dict[str, Any]:
    """The chart image data from the upstream values files (what chart_images.yaml must hold)."""
    out: dict[str, Any] = {}
    for key, (directory, app_version, subcharts, extra) in CHARTS.items():
        base = UPSTREAM / directory
        # A CRD-only chart (prometheus-operator-crds) is stored without values.yaml: it runs no image.
        values = yaml.safe_load((base / "values.yaml").read_text()) or {} if (base / "values.yaml").is_file() else {}
        for sub in subcharts:
            sub_values = base / "charts" / sub / "values.yaml"
            if sub_values.is_file():
                values = {**values, sub: helm_merge(yaml.safe_load(sub_values.read_text()) or {}, values.get(sub) or {})}
        source = dict(line.split(": ", 1) for line in (base / "SOURCE.txt").read_text().splitlines() if ": " in line)
        images, defaults = [], {}
        for path, fields, enabled in _walk(values, [], []):
            dotted = ".".join(path)
            flags = list(enabled)
            flags += [cond for sub, cond in subcharts.items() if dotted.startswith(sub + ".")]
            flags += [flag for prefix, flag in extra.items() if dotted.startswith(prefix + ".") or dotted == prefix]
            entry: dict[str, Any] = {"path": dotted, **fields}
            entry.update({"subchart": sub for sub in subcharts if dotted.startswith(sub + ".")})  # the parent's appVersion is not its
            if str(fields.get("repository", "")).startswith("/"):
                parent = ".".join(path[:-1])
                if isinstance(_lookup(values, f"{parent}.baseRepo" if parent else "baseRepo"), str):
                    entry["baseRepo"] = _lookup(values, f"{parent}.baseRepo" if parent else "baseRepo")
                    entry["baseRepoPath"] = f"{parent}.baseRepo" if parent else "baseRepo"
            if flags:
                entry["enabledBy"] = sorted(set(flags))
                for flag in flags:
                    default = _lookup(values, flag)
                    if isinstance(default, bool):
                        _set(defaults, flag, default)
            images.append(entry)
        chart: dict[str, Any] = {"source": f"{source.get('repo')} {source.get('chart_path', '')} @ {source.get('commit', '')[:12]} ({source.get('tag', '')})".replace("  ", " ")}
        if app_version:
            chart["appVersion"] = app_version
        chart["defaults"] = defaults
        if key in SOURCE_VALUES_DIFFER:
            chart["note"] = SOURCE_VALUES_DIFFER[key]
        chart["images"] = images
        out[key] = chart
    return out


HEADER = """\
# Images of the pinned Helm charts: per <chart>@<version>, each image value of the chart's values.yaml (path,
# fields as the chart writes them), the flags that enable it (enabledBy; their defaults under `defaults`), and
# the chart's appVersion where an image of the chart itself (not of a `subchart`) leaves its tag empty. Read by hybridgpu.stack.images (`hybridgpu images`).
# Generated from the charts' values.yaml by `python -m tests.cli.test_images`; tests/cli/test_images.py fails on
# any difference. Do not edit by hand.
"""


def render() -> str:
    """The data file's text."""
    return HEADER + yaml.safe_dump({"charts": derive()}, sort_keys=True, default_flow_style=False, width=200)


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream is not beside the checkout")
def test_chart_image_data_matches_the_pinned_charts():
    assert DATA.read_text() == render(), "regenerate: python -m tests.cli.test_images > hybridgpu/stack/data/chart_images.yaml"


GPU_OPERATOR = {
    "name": "gpu-operator",
    "chart": "gpu-operator",
    "version": "v26.7.0",
    "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
    "values": {"driver": {"enabled": False}, "toolkit": {"enabled": False}, "nfd": {"enabled": False}},
}


def test_gpu_operator_images_follow_our_values():
    """Expected before running: our values turn the driver, toolkit and NFD off; the operator's own image takes the appVersion."""
    listing = list_images([GPU_OPERATOR], None)
    assert listing.charts == ("https://helm.ngc.nvidia.com/nvidia/gpu-operator:v26.7.0",)
    assert "nvcr.io/nvidia/gpu-operator:v26.7.0" in listing.images  # operator, validator: appVersion
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" in listing.images
    assert "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless" in listing.images
    assert not [i for i in listing.images if "/driver:" in i or "container-toolkit" in i or "node-feature-discovery" in i]
    assert "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4" not in listing.images  # gds.enabled defaults to false
    assert listing.packages == ()
    overridden = list_images([{**GPU_OPERATOR, "values": {"devicePlugin": {"version": "v0.20.1"}}}], None)
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.20.1" in overridden.images


def test_unknown_chart_and_moving_tags_are_said():
    listing = list_images(
        [
            {"name": "x", "chart": "oci://example.com/charts/x", "version": "1.0.0"},
            {"name": "kueue", "chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": "0.19.2"},
        ],
        None,
    )
    assert "oci://example.com/charts/x:1.0.0" in listing.charts
    assert any(u.startswith("images of x@1.0.0: chart not in") for u in listing.unpinned)
    assert any("kueue@0.19.2 controllerManager.manager.image" in u and "tag release-0.19 moves" in u for u in listing.unpinned)


@pytest.fixture(scope="module")
def onprem(tmp_path_factory) -> tuple[str, str]:
    """(text, JSON) of `hybridgpu images onprem` (one preview each)."""
    text = runner.invoke(app, ["images", "onprem"])
    assert text.exit_code == 0, text.output
    as_json = runner.invoke(app, ["images", "onprem", "--json"])
    assert as_json.exit_code == 0, as_json.output
    return text.output, as_json.output


def test_images_of_the_onprem_stack(onprem, monkeypatch):
    text, as_json = onprem
    data = json.loads(as_json)
    inventory = load_inventory(ROOT / "stacks" / "inventory" / "onprem-site-a.yaml")
    version = inventory.site.cluster.kubernetes_version
    assert f"kubeadm={version}-*" in data["packages"] and f"nvidia-container-toolkit={inventory.site.cluster.nvidia_container_toolkit_version}" in data["packages"]
    assert "https://helm.ngc.nvidia.com/nvidia/gpu-operator:v26.7.0" in data["charts"]
    assert "oci://registry.k8s.io/kueue/charts/kueue:0.19.2" in data["charts"]
    assert any(u.startswith("containerd:") for u in data["unpinned"])
    lines = text.splitlines()
    assert lines[0] == "# charts" and lines == ["# charts", *data["charts"], "# images", *data["images"], "# packages", *data["packages"]] + [
        f"# unpinned: {u}" for u in data["unpinned"]
    ]
    assert data["images"] == sorted(set(data["images"]))


def test_images_refuses_an_unknown_stack():
    result = runner.invoke(app, ["images", "no-such-stack"])
    assert result.exit_code == 2 and "Traceback" not in result.output


if __name__ == "__main__":
    sys.stdout.write(render())
