"""``hybridgpu:onprem.gangs``: the largest jobs the on-prem site must run whole inside one topology domain (schema only).

A gang is a multi-node job whose pods all start together (a PyTorchJob/JobSet admitted by Kueue
as one workload). Declaring the largest ones lets validation check, against the inventory, that
some domain of the Kueue Topology (a block, a rack, a host) holds that many GPUs of the model; a
job annotated ``kueue.x-k8s.io/podset-required-topology: <level label>`` with more GPUs than any
domain of that level stays pending forever (Kueue's TAS finds no domain; kubernetes-sigs/kueue
v0.19.2 ``pkg/cache/scheduler/tas_flavor_snapshot.go``). The check reads the inventory too, so it
lives in :mod:`hybridgpu.stack.topology`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from hybridgpu.config.base import Dns1123Name, Model

__all__ = ["GangRequirement", "TopologyLevelName"]

#: A level of the on-prem Kueue Topology, by the inventory field it comes from (``host``: kubernetes.io/hostname).
TopologyLevelName = Literal["block", "rack", "host"]


class GangRequirement(Model):
    """One ``hybridgpu:onprem.gangs[]`` entry: a job size that must fit in one domain of a topology level."""

    name: Dns1123Name = Field(description="Name of the workload class, e.g. `llm-pretrain-2x8`. Required.")
    gpus: int = Field(strict=True, ge=1, description="GPUs of the whole gang (nodes x GPUs per node), e.g. `16`. Required.")
    topology: TopologyLevelName = Field(
        description="The level the gang requires (`kueue.x-k8s.io/podset-required-topology`): `block`, `rack` or `host`. Required."
    )
    gpu_model: Annotated[str, StringConstraints(min_length=1)] | None = Field(
        default=None, description="GPU catalog key of the flavor it runs on, e.g. `H100-80GB`. Default: any model (each domain counts one model)."
    )
