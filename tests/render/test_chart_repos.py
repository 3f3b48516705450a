"""Helm releases take their charts from the site's chart mirrors (``mirrors.charts``).

* :func:`hybridgpu.render.chart_repos.chart_source`, pure: an OCI or HTTP upstream mapped to an OCI or HTTP mirror
  in the two forms pulumi-kubernetes' Release reads (pulumi/pulumi-kubernetes ``provider/pkg/provider/helm_release.go``
  at 94977969, 2026-07-01: ``resolveChartName`` takes an ``oci://`` chart as the whole reference with no repository
  URL; an HTTP repository is ``repositoryOpts.repo`` plus the chart's name, looked up in its ``index.yaml``).
* The on-prem program under Pulumi's mocks (one run of the example stack, its inventory given a mirror for every
  repository the stack's releases name): every ``kubernetes:helm.sh/v3:Release`` points at its mirror with the same
  chart name and version, whichever component registers it, and the mirror login is a secret input only.
"""

from __future__ import annotations

import pytest
import yaml

from hybridgpu.inventory.mirrors import Mirrors
from hybridgpu.render.chart_repos import chart_source, split_chart, upstream_release
from hybridgpu.shell.crds import HELM_RELEASE
from hybridgpu.shell.preview import run_preview
from hybridgpu.stack.images import list_images

MIRRORS = Mirrors.model_validate(
    {
        "charts": [
            {"repository": "oci://registry.k8s.io/kueue/charts", "mirror": "oci://harbor.lab.internal/charts/kueue"},
            {"repository": "https://helm.ngc.nvidia.com/nvidia/", "mirror": "https://charts.lab.internal/nvidia"},
            {"repository": "https://helm.cilium.io", "mirror": "oci://harbor.lab.internal/charts/cilium/"},
            {"repository": "oci://public.ecr.aws/karpenter", "mirror": "https://charts.lab.internal/karpenter"},
        ]
    }
)


@pytest.mark.parametrize(
    ("repo", "chart", "expected"),
    [
        # OCI upstream, OCI mirror: the whole reference moves, the chart name stays.
        (None, "oci://registry.k8s.io/kueue/charts/kueue", ("oci://harbor.lab.internal/charts/kueue/kueue", None)),
        # HTTP upstream (trailing slash in the inventory), HTTP mirror.
        ("https://helm.ngc.nvidia.com/nvidia", "gpu-operator", ("gpu-operator", "https://charts.lab.internal/nvidia")),
        # HTTP upstream, OCI mirror (a trailing slash on the mirror is not doubled).
        ("https://helm.cilium.io/", "cilium", ("oci://harbor.lab.internal/charts/cilium/cilium", None)),
        # OCI upstream, HTTP mirror.
        (None, "oci://public.ecr.aws/karpenter/karpenter", ("karpenter", "https://charts.lab.internal/karpenter")),
        # No mirror for the repository: unchanged.
        ("https://kubernetes-sigs.github.io/jobset", "jobset", ("jobset", "https://kubernetes-sigs.github.io/jobset")),
        (None, "oci://ghcr.io/nvidia/nvsentinel", ("oci://ghcr.io/nvidia/nvsentinel", None)),
    ],
)
def test_chart_source_maps_each_form(repo, chart, expected):
    source = chart_source(repo, chart, MIRRORS)
    assert (source.chart, source.repo) == expected
    assert (source.mirror is None) == (expected == (chart, repo))
    assert chart_source(repo, chart, None) == chart_source(repo, chart, Mirrors()) == type(source)(chart=chart, repo=repo)


def test_upstream_release_undoes_the_mapping_for_hybridgpu_images():
    """``hybridgpu images`` lists what to copy into the mirrors: the upstream of a release moved to a mirror."""
    for repo, chart in [
        (None, "oci://registry.k8s.io/kueue/charts/kueue"),
        ("https://helm.ngc.nvidia.com/nvidia", "gpu-operator"),
        ("https://helm.cilium.io", "cilium"),
        (None, "oci://public.ecr.aws/karpenter/karpenter"),
        ("https://kubernetes-sigs.github.io/jobset", "jobset"),
    ]:
        source = chart_source(repo, chart, MIRRORS)
        moved = {"chart": source.chart, "version": "1.0.0", **({"repositoryOpts": {"repo": source.repo, "username": "u"}} if source.repo else {})}
        back = upstream_release(moved, MIRRORS)
        upstream, name = split_chart(back.get("repositoryOpts", {}).get("repo"), back["chart"])
        assert (upstream.rstrip("/"), name) == (split_chart(repo, chart)[0].rstrip("/"), split_chart(repo, chart)[1])
        assert back["version"] == "1.0.0"
        assert ("username" not in str(back)) if source.mirror else back == moved


@pytest.mark.parametrize(("repo", "chart"), [(None, "gpu-operator"), (None, "oci://"), (None, "oci:///x"), ("", "local/chart")])
def test_a_chart_without_a_repository_is_refused(repo, chart):
    with pytest.raises(ValueError, match="oci://|repository"):
        split_chart(repo, chart)


def test_split_chart_of_an_oci_reference():
    assert split_chart(None, "oci://registry.k8s.io/kueue/charts/kueue") == ("oci://registry.k8s.io/kueue/charts", "kueue")
    assert split_chart("https://helm.cilium.io", "cilium") == ("https://helm.cilium.io", "cilium")


def _releases(result) -> list[tuple[str | None, str, str]]:
    return sorted(
        ((r.inputs.get("repositoryOpts", {}).get("repo"), r.inputs["chart"], r.inputs.get("version", "")) for r in result.of_type(HELM_RELEASE)),
        key=lambda r: (r[0] or "", r[1], r[2]),
    )


def test_every_release_of_the_onprem_stack_takes_its_mirror(previews, scratch_project, root, tmp_path, monkeypatch):
    """The example on-prem stack's releases (whatever component registers them: Cilium, the NVIDIA layer, Kueue,
    storage, OpenCost, the platform releases ...) under a site whose ``mirrors.charts`` mirrors each repository
    they name, half to OCI and half to HTTP mirrors: each release keeps its chart name and version, and takes the
    mirror's location; the login is a secret input of the release and never a plain value."""
    before = _releases(previews["onprem"])
    assert len(before) >= 4
    repositories = sorted({split_chart(repo, chart)[0] for repo, chart, _ in before})
    charts = [
        {
            "repository": repo,
            "mirror": f"oci://harbor.lab.internal/m{i}" if i % 2 == 0 else f"https://charts.lab.internal/m{i}",
            "credentials": {"env": "LAB_CHARTS"},
        }
        for i, repo in enumerate(repositories)
    ]
    docs = list(yaml.safe_load_all((root / "stacks/inventory/onprem-site-a.yaml").read_text()))
    site = next(d for d in docs if d["kind"] == "Site")
    site["mirrors"] = {"charts": charts}
    inventory = tmp_path / "site.yaml"
    inventory.write_text(yaml.safe_dump_all(docs, sort_keys=False))

    def edit(config):  # the burst plan and showback read other stacks and files; the releases they add are not needed here
        config["hybridgpu:onprem"]["inventory"] = [str(inventory)]
        config["hybridgpu:onprem"].pop("gangs", None)
        config.pop("hybridgpu:burst", None)
        config.pop("hybridgpu:economics", None)
        config["hybridgpu:onprem"].setdefault("storage", {})["namespaces"] = ["training"]

    monkeypatch.setenv("LAB_CHARTS", "robot:chart-secret-value")
    result = run_preview("onprem", scratch_project(stacks=["onprem"], stack_edits={"onprem": edit}))
    after = result.of_type(HELM_RELEASE)
    assert len(after) >= 4
    mirror_of = {c["repository"]: c["mirror"] for c in charts}
    moved = []
    for rec in after:
        repo, chart = rec.inputs.get("repositoryOpts", {}).get("repo"), rec.inputs["chart"]
        name = chart.rsplit("/", 1)[-1]
        if chart.startswith("oci://"):
            assert repo is None and chart.startswith("oci://harbor.lab.internal/m"), rec.name
            assert chart == f"{chart.rsplit('/', 1)[0]}/{name}"
        else:
            assert repo is not None and repo.startswith("https://charts.lab.internal/m"), rec.name
        # Offline (run_preview), env references are not read: the placeholder travels where the login would.
        assert rec.inputs["repositoryOpts"]["username"] == "offline-preview"
        assert rec.inputs["repositoryOpts"]["password"] == "[env LAB_CHARTS not read]"
        assert {"repositoryOpts.username", "repositoryOpts.password"} <= set(rec.secret_paths), rec.name
        moved.append((name, rec.inputs.get("version", "")))
    assert set(moved) <= {(chart.rsplit("/", 1)[-1], version) for _, chart, version in before}  # same charts, same versions
    assert set(mirror_of.values()) >= {(repo or chart.rsplit("/", 1)[0]) for repo, chart, _ in _releases(result)}
    assert "chart-secret-value" not in str(result.outputs)
    # `hybridgpu images` still lists the upstream charts (what to copy into the mirrors).
    mirrors = Mirrors.model_validate({"charts": charts})
    listed = list_images([upstream_release(r.inputs, mirrors) for r in after], None).charts
    assert set(listed) <= set(list_images([r.inputs for r in previews["onprem"].of_type(HELM_RELEASE)], None).charts)
