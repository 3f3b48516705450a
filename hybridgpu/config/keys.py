"""The Pulumi config keys of a stack file and the :class:`~hybridgpu.config.models.StackConfig`
fields they fill (pure, no I/O).

Keys are namespaced as the Pulumi CLI writes them: ``aws:region`` and ``hybridgpu:<section>``.
Structured keys hold a mapping or list (the Pulumi runtime hands them to the program as JSON
strings); ``Pulumi.yaml`` declares them as typed project config.
"""

from __future__ import annotations

PROJECT = "hybridgpu"


#: Pulumi config key -> StackConfig field alias.
KEY_TO_FIELD = {
    "aws:region": "region",
    f"{PROJECT}:environment": "environment",
    f"{PROJECT}:tags": "tags",
    f"{PROJECT}:requiredTagKeys": "requiredTagKeys",
    f"{PROJECT}:cloud": "cloud",
    f"{PROJECT}:onprem": "onprem",
    f"{PROJECT}:nvidia": "nvidia",
    f"{PROJECT}:burst": "burst",
    f"{PROJECT}:teams": "teams",
    f"{PROJECT}:economics": "economics",
    f"{PROJECT}:platform": "platform",
}
FIELD_TO_KEY = {alias: key for key, alias in KEY_TO_FIELD.items()}


#: Keys of Pulumi.yaml's typed project config (also declared there).
STRUCTURED_KEYS = {f"{PROJECT}:tags", f"{PROJECT}:cloud", f"{PROJECT}:requiredTagKeys", f"{PROJECT}:nvidia", f"{PROJECT}:onprem", f"{PROJECT}:burst", f"{PROJECT}:economics", f"{PROJECT}:teams", f"{PROJECT}:platform"}
