"""Everything a stack installs, pinned: the list a mirroring tool takes for a site without internet (pure).

:func:`list_images` takes the stack's Helm releases (as the offline preview records them:
``name``, ``chart``, ``version``, ``repositoryOpts.repo``, ``values``) and its on-prem inventory, and
returns an :class:`ImagesListing`:

* charts: ``<repository>/<chart>:<version>`` per release (an OCI chart as its ``oci://`` reference);
* images: for each release whose chart@version is in ``data/chart_images.yaml``, every image the
  chart's values name (the chart's defaults at that version with our values merged over them the
  way Helm does, :func:`hybridgpu.render.charts.helm_merge`), skipping a component our values or
  the defaults disable; a tag the values leave empty is the chart's ``appVersion`` where it is known;
* packages: on-prem, the apt packages bootstrap installs (``kubelet``/``kubeadm``/``kubectl`` at
  ``cluster.kubernetesVersion``, the NVIDIA container toolkit at ``cluster.nvidiaContainerToolkitVersion``) and those
  the upgrades ``pulumi up`` runs install (:func:`upgrade_packages`): ``kubeadm``/``kubelet``/``kubectl`` at each step of
  ``upgrades.kubernetes`` (``via`` and ``to``), and for ``upgrades.nvidia`` the driver package at its version, on
  NVSwitch hosts the fabric manager package at the driver's version, the toolkit packages at ``toolkitVersion``, so a
  disconnected site mirrors them before the upgrade starts.

What is not pinned is said, never hidden: :attr:`ImagesListing.unpinned` (a chart missing from the
data file, an image without a tag or with a moving one such as ``latest``, the Debian revision of
the Kubernetes packages, containerd from the distribution). The same input gives the same bytes.

``data/chart_images.yaml`` is derived from the pinned charts' ``values.yaml`` (tests/cli/test_images.py
re-derives it from the stored upstream files and fails on any difference).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

from hybridgpu.inventory.models import Inventory
from hybridgpu.inventory.upgrade import UpgradePlanError, parse_version, plan_nvidia_upgrade, plan_upgrade
from hybridgpu.render.charts import helm_merge
from hybridgpu.render.upgrade import NVIDIA_TOOLKIT_PACKAGES

__all__ = ["CHART_IMAGES_FILE", "FRAMEWORK_CHART_IMAGES_FILE", "ImagesListing", "chart_images", "list_images", "upgrade_packages"]

#: The per-chart image data, package data beside this module.
CHART_IMAGES_FILE = "data/chart_images.yaml"
#: The same for the job-framework charts (JobSet, Kubeflow Trainer, KubeRay: :mod:`hybridgpu.burst.frameworks`),
#: derived from their values.yaml at the pinned tags by ``python -m tests.burst.test_frameworks``.
FRAMEWORK_CHART_IMAGES_FILE = "data/chart_images_frameworks.yaml"
#: The same for the platform charts Harbor and MLflow (:mod:`hybridgpu.render.harbor`, :mod:`hybridgpu.render.mlflow`),
#: written by ``python -m tests.platform.test_harbor``.
PLATFORM_CHART_IMAGES_FILE = "data/chart_images_platform.yaml"
#: Tags that move: an image so tagged is listed as unpinned.
_MOVING_TAG = re.compile(r"^(latest|main|master|stable|edge|nightly|release-[0-9.]+)$")


@cache
def chart_images() -> Mapping[str, Any]:
    """``data/chart_images.yaml`` and ``data/chart_images_frameworks.yaml``: ``charts`` keyed ``<chart>@<version>`` (see the files' headers)."""
    charts: dict[str, Any] = {}
    for name in (CHART_IMAGES_FILE, FRAMEWORK_CHART_IMAGES_FILE, PLATFORM_CHART_IMAGES_FILE):
        text = resources.files("hybridgpu.stack").joinpath(name).read_text(encoding="utf-8")
        charts.update(yaml.safe_load(text)["charts"])
    return charts


@dataclass(frozen=True)
class ImagesListing:
    """What a stack installs.

    Attributes:
        charts: ``<repository>/<chart>:<version>`` per Helm release, sorted.
        images: image references (``registry/repository:tag[@digest]``), sorted, unique.
        packages: apt ``name=version`` of the on-prem hosts, sorted.
        unpinned: one line per thing that is not pinned or could not be listed, sorted.
    """

    charts: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    unpinned: tuple[str, ...] = field(default=())

    def text(self) -> str:
        """One reference per line under ``# charts``, ``# images``, ``# packages`` headers, then ``# unpinned: ...`` lines."""
        lines = ["# charts"] + list(self.charts) + ["# images"] + list(self.images) + ["# packages"] + list(self.packages)
        lines += [f"# unpinned: {item}" for item in self.unpinned]
        return "\n".join(lines) + "\n"

    def json(self) -> str:
        """The listing as JSON (keys ``charts``, ``images``, ``packages``, ``unpinned``), sorted keys, a final newline."""
        data = {"charts": list(self.charts), "images": list(self.images), "packages": list(self.packages), "unpinned": list(self.unpinned)}
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _get(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _chart_reference(release: Mapping[str, Any]) -> tuple[str, str, str]:
    """(reference, chart name, version) of a release record."""
    chart = str(release.get("chart", ""))
    version = str(release.get("version") or "")
    repo = (release.get("repositoryOpts") or {}).get("repo")
    name = chart.rsplit("/", 1)[-1]
    base = chart if chart.startswith("oci://") or not repo else f"{str(repo).rstrip('/')}/{chart}"
    return f"{base}:{version}" if version else base, name, version


def _image(entry: Mapping[str, Any], values: Mapping[str, Any], app_version: str | None) -> tuple[str | None, str | None]:
    """(reference or None, why it is unpinned or None) of one image entry of the data file under ``values``."""
    fields = {k: entry[k] for k in ("registry", "repository", "image", "tag", "version", "digest", "baseRepo") if k in entry}
    ours = _get(values, entry["path"])
    if isinstance(ours, Mapping):
        fields.update({k: v for k, v in ours.items() if k in fields or k in ("registry", "tag", "version", "digest")})
    if "baseRepoPath" in entry and isinstance(_get(values, entry["baseRepoPath"]), str):
        fields["baseRepo"] = _get(values, entry["baseRepoPath"])
    repository = str(fields.get("repository") or "")
    if not repository:
        return None, "no repository in the chart's values (set it in our values to use this component)"
    if repository.startswith("/") and fields.get("baseRepo"):
        repository = str(fields["baseRepo"]).rstrip("/") + repository
    if fields.get("registry"):
        repository = f"{fields['registry']}/{repository}"
    if fields.get("image"):
        repository = f"{repository}/{fields['image']}"
    tag = str(fields.get("version") or fields.get("tag") or "")
    note = None
    if not tag and app_version:
        tag = app_version
    if not tag:
        return repository, "no tag in the chart's values and no known appVersion"
    digest = fields.get("digest")
    reference = f"{repository}:{tag}" + (f"@{digest}" if digest and "@" not in tag else "")
    if _MOVING_TAG.match(tag.split("@", 1)[0]):
        note = f"tag {tag.split('@', 1)[0]} moves (as the chart's source values.yaml names it)"
    return reference, note


def _enabled(entry: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    for path in entry.get("enabledBy", ()):
        if _get(values, path) is False:
            return False
    return True


#: The Kubernetes packages bootstrap and the upgrade install and hold, in the order they are listed.
_KUBERNETES_PACKAGES = ("kubeadm", "kubectl", "kubelet")


def upgrade_packages(inventory: Inventory, *, host_driver: bool = True) -> tuple[set[str], set[str]]:
    """The apt packages the upgrades of ``inventory`` install, as ``name=version`` (apt's syntax; ``-*`` where the scripts
    let apt pick the Debian revision), and what of them is not pinned.

    * ``upgrades.kubernetes`` (when ``to`` is not ``cluster.kubernetesVersion``): ``kubeadm``, ``kubelet`` and ``kubectl``
      at every step :func:`~hybridgpu.inventory.upgrade.plan_upgrade` makes (``via``, then ``to``), as
      :func:`hybridgpu.render.upgrade.node_kubeadm_script` and ``node_kubelet_script`` install them (``<version>-*``).
    * ``upgrades.nvidia`` (only with ``host_driver``: the hosts carry their own driver, ``hybridgpu:onprem``
      ``nvidiaToolkit``): the driver package at its version, the fabric manager package at ``<driver version>-*`` when a
      GPU worker that is not ``absent`` is an NVSwitch system, and the four toolkit packages at ``toolkitVersion``, as
      :func:`hybridgpu.render.upgrade.nvidia_install_script` installs them.

    Args:
        inventory: a validated inventory.
        host_driver: False when the GPU Operator installs the driver (``upgrades.nvidia`` does not run on the hosts).

    Returns:
        ``(packages, unpinned)``; both empty without upgrades.
    """
    packages: set[str] = set()
    unpinned: set[str] = set()
    cluster = inventory.site.cluster
    policy = inventory.site.upgrades
    wanted = policy.kubernetes if policy is not None else None
    if wanted is not None:
        try:
            moves = parse_version(wanted.to) != parse_version(cluster.kubernetes_version, "cluster.kubernetesVersion")
        except UpgradePlanError:
            moves = False  # validation reports it
        plan = plan_upgrade(inventory, wanted.to, via=wanted.via, workers_last=wanted.workers_last) if moves else None
        if plan is not None and not plan.ok:
            unpinned.add(f"upgrades.kubernetes to {wanted.to}: its checks fail ({', '.join(c.name for c in plan.failures)}); its packages are not listed")
        for step in plan.steps if plan is not None and plan.ok else ():
            packages.update(f"{pkg}={step.version}-*" for pkg in _KUBERNETES_PACKAGES)
            unpinned.add(f"kubeadm/kubelet/kubectl {step.version} (upgrades.kubernetes): Debian revision (`-*`) is whatever pkgs.k8s.io (or the mirror) holds")
    nvidia = plan_nvidia_upgrade(inventory) if host_driver else None
    if nvidia is not None:
        driver = nvidia.policy.driver
        if driver is not None:
            packages.add(f"{driver.package}={driver.version}")
            fabric = driver.fabric_manager_package
            if any(node.fabric_manager for batch in nvidia.batches for node in batch):
                if fabric is None:
                    unpinned.add(f"upgrades.nvidia: no fabric manager package known for {driver.package} (inventory validate names the NVSwitch hosts)")
                else:
                    packages.add(f"{fabric}={driver.upstream}-*")
                    unpinned.add(f"{fabric} {driver.upstream} (upgrades.nvidia, NVSwitch hosts): Debian revision (`-*`) is whatever the repository holds")
        if nvidia.policy.toolkit_version is not None:
            packages.update(f"{pkg}={nvidia.policy.toolkit_version}" for pkg in NVIDIA_TOOLKIT_PACKAGES)
    return packages, unpinned


def list_images(
    releases: Sequence[Mapping[str, Any]], inventory: Inventory | None, *, data: Mapping[str, Any] | None = None, host_driver: bool = True
) -> ImagesListing:
    """The charts, images and packages a stack installs.

    Args:
        releases: the stack's Helm release records (preview ``helm_releases`` inputs, with ``repositoryOpts``).
        inventory: the stack's on-prem inventory, or None (no packages then).
        data: chart image data (default: :func:`chart_images`).
        host_driver: the GPU workers carry their own driver and the stack installs the container toolkit on them
            (``hybridgpu:onprem`` ``nvidiaToolkit``); False: no toolkit packages, and ``upgrades.nvidia`` does not run.

    Returns:
        An :class:`ImagesListing`; anything not pinned is in ``unpinned``.
    """
    data = chart_images() if data is None else data
    charts: set[str] = set()
    images: set[str] = set()
    unpinned: set[str] = set()
    for release in releases:
        reference, name, version = _chart_reference(release)
        charts.add(reference)
        if not version:
            unpinned.add(f"chart {reference}: no version")
        known = data.get(f"{name}@{version}")
        if known is None:
            unpinned.add(f"images of {name}@{version or '?'}: chart not in hybridgpu/stack/{CHART_IMAGES_FILE}")
            continue
        if known.get("note"):
            unpinned.add(f"{name}@{version}: {known['note']}")
        values = helm_merge(known.get("defaults", {}), release.get("values") or {})
        for entry in known["images"]:
            if not _enabled(entry, values):
                continue
            image, why = _image(entry, values, None if "subchart" in entry else known.get("appVersion"))
            if image is not None and ":" in image.rsplit("/", 1)[-1]:
                images.add(image)
            if why is not None:
                unpinned.add(f"{name}@{version} {entry['path']}: {image or '-'}: {why}")
    packages: set[str] = set()
    if inventory is not None:
        cluster = inventory.site.cluster
        for pkg in _KUBERNETES_PACKAGES:
            packages.add(f"{pkg}={cluster.kubernetes_version}-*")
        unpinned.add(f"kubeadm/kubelet/kubectl {cluster.kubernetes_version}: Debian revision (`-*`) is whatever pkgs.k8s.io (or the mirror) holds")
        unpinned.add("containerd: the distribution's package when none is installed (not pinned by hybridgpu)")
        if inventory.gpu_workers and host_driver:
            version = cluster.nvidia_container_toolkit_version
            packages.update(f"{pkg}={version}" for pkg in NVIDIA_TOOLKIT_PACKAGES)
        more, notes = upgrade_packages(inventory, host_driver=host_driver)
        packages |= more
        unpinned |= notes
    return ImagesListing(tuple(sorted(charts)), tuple(sorted(images)), tuple(sorted(packages)), tuple(sorted(unpinned)))
