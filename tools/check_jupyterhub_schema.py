"""Validate the JupyterHub values hybridgpu renders against the chart's own ``values.schema.yaml``.

The schema is upstream code and is not kept in this repository; point the script at a checkout of
jupyterhub/zero-to-jupyterhub-k8s (any directory holding ``jupyterhub/values.yaml`` and
``jupyterhub/values.schema.yaml`` of the pinned tag, e.g. ``git worktree add /tmp/z2jh 4.4.0``)::

    .venv/bin/python tools/check_jupyterhub_schema.py /tmp/z2jh

Renders the values for a two-team profile list (whole GPUs and a MIG slice), merges them over the
chart's defaults as Helm does (:func:`hybridgpu.render.charts.helm_merge`) and validates the result
with ``jsonschema`` (Draft 7, the schema's dialect); Helm validates the merged values the same way
before it renders a template. Exit 0 with ``0 schema errors``, 1 with every error listed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jsonschema
import yaml

from hybridgpu.config.jupyterhub import JupyterHubConfig
from hybridgpu.render.charts import helm_merge
from hybridgpu.render.jupyterhub import GpuOffering, NotebookProfile, jupyterhub_values, value_paths, VALUE_KEYS


def main(checkout: Path) -> int:
    schema = yaml.safe_load((checkout / "jupyterhub" / "values.schema.yaml").read_text())
    defaults = yaml.safe_load((checkout / "jupyterhub" / "values.yaml").read_text())
    config = JupyterHubConfig.model_validate(
        {
            "enabled": True,
            "auth": {
                "clientId": "hub",
                "clientSecretPulumiConfig": "jupyterhub:clientSecret",
                "authorizeUrl": "https://sso.example.com/auth",
                "tokenUrl": "https://sso.example.com/token",
                "userdataUrl": "https://sso.example.com/userinfo",
                "oauthCallbackUrl": "https://hub.example.com/hub/oauth_callback",
                "adminGroups": ["admins"],
            },
            "image": {"name": "quay.io/jupyter/pytorch-notebook", "tag": "cuda12-python-3.12"},
        }
    )
    gpu = GpuOffering("gpu", "nvidia.com/gpu", "H100-80GB", "NodePool a", "a-h100", "a whole GPU", {"karpenter.sh/nodepool": "a"},
                      ({"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}]},),
                      ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},))
    mig = GpuOffering("mig", "nvidia.com/mig-3g.40gb", "A100-80GB", "on-prem", "mig", "MIG 3g.40gb", {"hybridgpu.io/gpu-model": "A100-80GB"})
    profiles = [NotebookProfile("t1", ("g1",), "t1", "q", {"team": "t1"}, gpu), NotebookProfile("t2", ("g2",), "t2", "q", {"team": "t2"}, mig)]
    values = jupyterhub_values(config, profiles, client_secret="x")
    unknown = sorted(p for p in VALUE_KEYS if p.split(".")[0] not in defaults)
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(helm_merge(defaults, values)))
    for error in errors:
        print(f"{'.'.join(str(p) for p in error.path)}: {error.message}")
    missing = [p for p in sorted(value_paths(values)) if _get(defaults, p) is _MISSING]
    for path in [*unknown, *missing]:
        print(f"{path}: not in the chart's values.yaml")
    print(f"{len(errors)} schema errors, {len(missing) + len(unknown)} keys missing from values.yaml")
    return 1 if errors or missing or unknown else 0


_MISSING = object()


def _get(values: dict, path: str) -> object:
    node: object = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
