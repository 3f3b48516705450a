"""Checks of a stack that read more than one section or another file (pure, no Pulumi).

The pydantic models check shapes and ranges, and each section's own rules live with its model
(:func:`hybridgpu.config.nvidia.nvidia_issues`). The checks here need the whole stack: the
cloud section with ``aws:region`` and ``hybridgpu:environment``, the NVIDIA section with the
NodePools, the on-prem inventory files, the cost report, the burst plan and the stacks it names.
Each returns :class:`~hybridgpu.errors.Issue` records with the file, the key path and the
fix, so that every problem is reported before any Pulumi resource is registered.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybridgpu.burst.plan import BurstPlan
from hybridgpu.catalog import Catalog, load_catalog
from hybridgpu.config.keys import PROJECT
from hybridgpu.config.models import (
    RECOMMENDED_SPOT_INSTANCE_TYPES,
    CapacityType,
    CloudConfig,
    Environment,
    StackConfig,
)
from hybridgpu.config.nvidia import NvidiaConfig, nvidia_issues
from hybridgpu.economics.report import StackCostReport
from hybridgpu.errors import Issue, suggest
from hybridgpu.inventory import Inventory, InventoryError
from hybridgpu.k8s import RESERVED_TAG_PREFIXES
from hybridgpu.onprem import OnPremPlan, deployment_issues
from hybridgpu.render.karpenter import min_values, resolve_instance_types
from hybridgpu.render.network import plan_subnets
from hybridgpu.stack.burst import burst_issues
from hybridgpu.stack.teams import teams_issues
from hybridgpu.stack.economics import economics_issues
from hybridgpu.stack.inventory import load_onprem_inventory
from hybridgpu.config.cloud_checks import access_entry_issues, aws_name_issues
from hybridgpu.stack.efa import efa_issues
from hybridgpu.stack.capacity_blocks import capacity_block_issues
from hybridgpu.stack.static_capacity import static_capacity_issues
from hybridgpu.stack.scheduling import scheduling_issues
from hybridgpu.stack.platform_services import platform_service_issues
from hybridgpu.stack.jupyterhub import jupyterhub_issues
from hybridgpu.stack.topology import gang_issues
from hybridgpu.stack.storage import cloud_storage_issues, namespace_issues

CLOUD = "hybridgpu:cloud"


@dataclass(frozen=True)
class StackCheck:
    """What checking a stack found, and what the checks derived on the way (so nothing is derived twice).

    Attributes:
        issues: every problem, in config order; empty when the stack is sound.
        burst_plan: the derived burst plan when the stack has ``hybridgpu:burst`` and it checked out.
        cost_report: the stack's cost report (default utilizations) when it has
            ``hybridgpu:economics`` and pricing checked out.
        onprem_plan: the rendered on-prem plan (:func:`hybridgpu.onprem.plan_onprem`) when the
            stack has ``hybridgpu:onprem`` and its inventory rendered; the program deploys it.
    """

    issues: list[Issue]
    burst_plan: BurstPlan | None = None
    cost_report: StackCostReport | None = None
    onprem_plan: OnPremPlan | None = None


def check_stack(
    config: StackConfig,
    file: str,
    catalog: Catalog | None = None,
    *,
    root: Path | None = None,
    config_values: Mapping[str, Any] | None = None,
) -> StackCheck:
    """Every cross-section problem of ``config``, and the burst plan, cost report and on-prem plan derived on the way.

    Args:
        config: a schema-valid stack configuration.
        file: the stack file to name in issues.
        catalog: instance catalog (default: the packaged one).
        root: project root that relative inventory and plan paths start from (default: the working directory).
        config_values: every ``namespace:key`` of the stack (as :func:`~hybridgpu.stack.load.validate_stack`
            gets them), to check that the inventory's ``keySecret.pulumiConfig`` keys are set; None skips that check.

    Returns:
        A :class:`StackCheck`. The economics and burst checks run only when everything before
        them is sound (they follow references the earlier checks vouch for).
    """
    issues: list[Issue] = []
    missing = [k for k in config.required_tag_keys if not str(config.tags.get(k) or "").strip()]  # whitespace is not a value
    if missing:
        issues.append(
            Issue(
                file,
                "hybridgpu:tags",
                f"required cost tag(s) missing, empty or whitespace-only: {', '.join(missing)}",
                "add them under `hybridgpu:tags` (they reach every AWS resource and every GPU instance)",
            )
        )
    catalog = catalog or load_catalog()
    if config.cloud is not None:
        if config.region is None:
            issues.append(Issue(file, "aws:region", "the cloud section needs an AWS region", "set `aws:region`, e.g. `us-west-2`"))
        issues += _cloud_issues(config, config.cloud, file, catalog)
        issues += aws_name_issues(config.cloud, file)
        issues += access_entry_issues(config.cloud, file)
        issues += static_capacity_issues(config.cloud, file, catalog)
        issues += cloud_storage_issues(config, file, catalog)
    onprem_plan = None
    if config.onprem is not None:
        found, onprem_plan = onprem_issues(config, file, catalog, root=root, config_values=config_values)
        issues += found
    if config.nvidia is not None:
        pools = {p.name for p in config.cloud.node_pools} if config.cloud else set()
        nvidia_problems = nvidia_issues(config.nvidia, file, node_pool_names=pools)
        issues += nvidia_problems
        # The cross checks follow the section's references, so they need them to be sound.
        if config.cloud is not None and not nvidia_problems:
            issues += _nvidia_cloud_issues(config.nvidia, config.cloud, file, catalog)
    report = None
    if config.economics is not None and not issues:
        found, report = economics_issues(config, file, root=root)
        issues += found
    plan = None
    if config.burst is not None and not issues:
        found, plan = burst_issues(config, file, root=root, catalog=catalog)
        issues += found
    if config.teams is not None and not issues:
        # The teams' queues replace the plan's ClusterQueues on the admission cluster and the EKS worker.
        found, plan = teams_issues(config, file, plan, root=root or Path.cwd())
        issues += found
    if not issues:
        # Every pod the program installs must fit a node it creates (the Helm releases wait for them).
        inventory = load_onprem_inventory(config, root) if config.onprem is not None else None
        issues += namespace_issues(config, file, plan, inventory)
        issues += scheduling_issues(config, file, catalog, inventory=inventory, burst_plan=plan, onprem_plan=onprem_plan)
        if not issues:  # notebooks: teams, Kueue's pod integration, profiles, hub placement (issue 30)
            issues += jupyterhub_issues(
                config, file, catalog, root=root or Path.cwd(), plan=plan, inventory=inventory, onprem_plan=onprem_plan, config_values=config_values
            )
        # MLflow and Harbor: where they run, their secrets, storage, the hosts' mirrors, their pods' placement (issues 30, 27)
        issues += platform_service_issues(config, file, catalog, inventory=inventory, onprem_plan=onprem_plan, config_values=config_values)
    return StackCheck(issues, plan, report, onprem_plan)


def semantic_issues(config: StackConfig, file: str, catalog: Catalog | None = None, *, root: Path | None = None) -> list[Issue]:
    """The issues of :func:`check_stack` alone (same arguments); empty when the configuration is sound."""
    return check_stack(config, file, catalog, root=root).issues


def onprem_issues(
    config: StackConfig, file: str, catalog: Catalog, *, root: Path | None = None, config_values: Mapping[str, Any] | None = None
) -> tuple[list[Issue], OnPremPlan | None]:
    """Problems of the on-prem section, and the on-prem plan rendered while checking it.

    Inventory issues keep their inventory file and name the host and field in the key path
    (``<host>.<field>``); then what the program relies on (:func:`hybridgpu.onprem.deployment_issues`:
    only the Cilium CNI is deployed, the plan renders); the stack-level rules are: every
    ``keySecret.pulumiConfig`` key is set in the stack (:func:`ssh_key_issues`), MIG layouts need
    the GPU Operator, and the pod/service CIDRs and host networks must not overlap a new cloud
    VPC of the same stack.

    Returns:
        ``(issues, plan)``: every problem (the inventory's own issues, plus rules that need the
        stack), and the rendered plan (None when the inventory is invalid or did not render), which
        the program deploys instead of rendering it again.
    """
    try:
        inventory = load_onprem_inventory(config, root)
    except InventoryError as exc:
        base = root or Path.cwd()
        return [
            # A path that does not exist is the stack file's mistake: name the stack file (found by fuzzing).
            Issue(file, "hybridgpu:onprem.inventory", f"{issue.file}: {issue.message}", issue.fix)
            if not (base / issue.file).exists()
            else _in_stack(issue)
            for issue in exc.issues
        ], None
    assert config.onprem is not None
    plan, deployment = deployment_issues(inventory, nvidia_toolkit=config.onprem.nvidia_toolkit)
    issues = [_in_stack(issue) for issue in deployment]
    issues += ssh_key_issues(config_values, inventory, file)
    issues += gang_issues(config, inventory, file)
    cluster = inventory.site.cluster
    mig_hosts = [h.hostname for h in inventory.hosts if h.state != "absent" and h.gpu is not None and h.gpu.mig_layouts]
    if mig_hosts:
        nvidia = config.nvidia
        if nvidia is None or nvidia.install != "gpu-operator" or nvidia.mig_strategy == "none":
            issues.append(
                Issue(
                    file,
                    "hybridgpu:nvidia",
                    f"hosts {', '.join(mig_hosts)} have MIG layouts, which only the GPU Operator's mig-manager applies",
                    "add `hybridgpu:nvidia` with `install: gpu-operator` and `migStrategy: mixed` (or `single`)",
                )
            )
    remediation = inventory.site.remediation
    if remediation is not None and remediation.detector == "nvsentinel" and (config.nvidia is None or config.nvidia.install != "gpu-operator"):
        # NVSentinel reads the GPU Operator's standalone DCGM service (hybridgpu.render.gpu_health).
        issues.append(
            Issue(
                file,
                "hybridgpu:nvidia",
                f"the inventory's `remediation.detector: nvsentinel` ({inventory.site_file}) reads DCGM from the GPU Operator, which this stack does not install",
                "set `hybridgpu:nvidia.install: gpu-operator`, or `remediation.detector: none` in the inventory",
            )
        )
    if config.cloud is not None and config.cloud.network.new is not None:
        vpc = ipaddress.ip_network(config.cloud.network.new.cidr)
        ranges = [("cluster.podSubnet", cluster.pod_subnet), ("cluster.serviceSubnet", cluster.service_subnet)]
        ranges += [(f"networks.{n.name}", n.cidr) for n in inventory.site.networks]
        for key, net in ranges:
            if net.version == vpc.version and net.overlaps(vpc):
                issues.append(
                    Issue(
                        inventory.site_file,
                        key,
                        f"{net} overlaps the stack's cloud VPC {vpc}, so routes between the sites would be ambiguous",
                        "pick non-overlapping ranges for the on-prem networks or the VPC (`hybridgpu:cloud.network.new.cidr`)",
                    )
                )
    return issues, plan


def _in_stack(issue: Issue) -> Issue:
    """An inventory issue as a stack issue: its inventory file, and ``<host>.<field>`` as the key path."""
    key = ".".join(p for p in (issue.host, issue.field) if p) or "hybridgpu:onprem.inventory"
    return Issue(issue.file, key, issue.message, issue.fix)


def ssh_key_issues(config_values: Mapping[str, Any] | None, inventory: Inventory, file: str) -> list[Issue]:
    """Every ``ssh.keySecret.pulumiConfig`` key of a host the program connects to is set in the stack.

    The program reads the key with ``pulumi.Config(namespace).require_secret(key)``
    (:func:`hybridgpu.components.onprem.ssh_private_key`), which raises for a missing key:
    a traceback in ``hybridgpu preview`` and a failed ``pulumi up``. ``ns:key`` is looked up as
    written; a key without a namespace is the project's (``hybridgpu:``), as Pulumi reads it, and is
    refused: the stack validation allows only hybridgpu's own keys there.
    ``env`` and ``file`` references are read on the machine running Pulumi, not here. Hosts in
    state ``absent`` are not connected to and are skipped.

    Args:
        config_values: the stack's ``namespace:key`` values; None skips the check.
        inventory: the stack's validated inventory.
        file: the stack file (named in the fix).

    Returns:
        One issue per distinct missing key, on the first host that names it, listing the others.
    """
    if config_values is None:
        return []
    missing: dict[str, list[str]] = {}
    reserved: dict[str, list[str]] = {}
    for host in inventory.hosts:
        ref = host.ssh.key_secret
        if host.state == "absent" or ref.pulumi_config is None:
            continue
        key = ref.pulumi_config if ":" in ref.pulumi_config else f"{PROJECT}:{ref.pulumi_config}"
        if key.startswith(f"{PROJECT}:"):
            reserved.setdefault(key, []).append(host.hostname)
        elif key not in config_values:
            missing.setdefault(key, []).append(host.hostname)
    issues = []
    for key, hosts in reserved.items():
        # validate_stack refuses every `hybridgpu:` key it does not know, so such a secret can never be set.
        issues.append(
            Issue(
                inventory.file_of(hosts[0]),
                f"{hosts[0]}.ssh.keySecret.pulumiConfig",
                f"SSH key secret {key!r} is in the `{PROJECT}:` namespace (a key without a namespace lands there), which holds "
                f"hybridgpu's own settings only: {file} cannot set it",
                "use a namespace of your own, e.g. `pulumiConfig: onprem:sshKey`, and `pulumi config set --secret onprem:sshKey < ~/.ssh/<key>`",
            )
        )
    for key, hosts in missing.items():
        namespace, _, name = key.partition(":")
        more = f" (also {', '.join(hosts[1:6])}{' ...' if len(hosts) > 6 else ''})" if len(hosts) > 1 else ""
        issues.append(
            Issue(
                inventory.file_of(hosts[0]),
                f"{hosts[0]}.ssh.keySecret.pulumiConfig",
                f"SSH key secret {key!r} is not set in {file}{more}; the program reads it (pulumi.Config.require_secret) and would stop there",
                f"run `pulumi config set --secret {namespace}:{name} < ~/.ssh/<key>` for this stack "
                f"(it adds `{key}: {{secure: ...}}` to {file}), or point `keySecret` at {{env: VAR}} or {{file: path}}",
            )
        )
    return issues


def _nvidia_cloud_issues(nvidia: NvidiaConfig, cloud: CloudConfig, file: str, catalog: Catalog) -> list[Issue]:
    """Rules that need both the NVIDIA section and the EKS NodePools."""
    issues: list[Issue] = []
    if cloud.karpenter.node_repair.enabled and nvidia.toolkit == "operator":
        # The agent's DCGM pod runs without a runtime class (the managed add-on's configuration
        # cannot set one: eks-node-monitoring-agent v1.7.0 configuration schema); with the GPU
        # Operator's toolkit the NVIDIA runtime is not containerd's default, so that pod sees no GPU,
        # reports the node healthy, and a failed GPU is never repaired (aws/eks-node-monitoring-agent#241).
        issues.append(
            Issue(
                file,
                "hybridgpu:cloud.karpenter.nodeRepair.enabled",
                "node repair reads GPU health from the node monitoring agent's DCGM, which sees no GPU when the GPU Operator "
                "installs the container toolkit (`hybridgpu:nvidia.toolkit: operator`): failed GPUs would never be repaired",
                "keep the EKS AMI's toolkit (`hybridgpu:nvidia.toolkit: preinstalled`, the default), or turn node repair off",
            )
        )
    pools = {p.name: p for p in cloud.node_pools}
    classes = {c.name: c for c in cloud.node_classes}
    for pool_name, settings in nvidia.node_pools.items():
        key = f"hybridgpu:nvidia.nodePools.{pool_name}"
        pool = pools[pool_name]
        node_class = classes.get(pool.node_class)
        if node_class is not None and node_class.ami_family == "bottlerocket" and nvidia.install == "gpu-operator":
            issues.append(
                Issue(
                    file,
                    key,
                    f"NodePool {pool_name!r} uses Bottlerocket node class {node_class.name!r}, whose NVIDIA variant runs its own device plugin and conflicts with the GPU Operator's",
                    "use an al2023 node class for pools the NVIDIA layer configures",
                )
            )
        if settings.mig_config:
            layout = nvidia.layout(settings.mig_config)
            resolved = resolve_instance_types(pool, catalog)
            if nvidia.mig_strategy == "mixed" and not cloud.karpenter.node_overlay:
                issues.append(
                    Issue(
                        file,
                        f"{key}.migConfig",
                        f"under the mixed strategy, nodes of {pool_name!r} offer nvidia.com/mig-* resources that Karpenter cannot see, "
                        "so it would never launch a node for a pod that asks for them",
                        "set `hybridgpu:cloud.karpenter.nodeOverlay: true` (NodeOverlays advertise the MIG capacity)",
                    )
                )
            if nvidia.mig_strategy == "single" and layout is not None:
                for t in resolved:
                    covered: set[int] = set()
                    for gpus, enabled, _ in layout.groups():
                        if enabled:
                            covered |= set(range(t.gpu_count)) if gpus is None else {g for g in gpus if g < t.gpu_count}
                    if covered != set(range(t.gpu_count)):
                        issues.append(
                            Issue(
                                file,
                                f"{key}.migConfig",
                                f"the single strategy needs MIG on every GPU of a node, but layout {settings.mig_config!r} leaves GPUs "
                                f"{sorted(set(range(t.gpu_count)) - covered)} of {t.name} without MIG",
                                "give the layout every GPU index of the instance type (or `layout:` for all GPUs), or use the mixed strategy",
                            )
                        )
                        break
            wrong = sorted({t.name for t in resolved if layout is not None and t.gpu_model != layout.gpu_model})
            if wrong and layout is not None:
                issues.append(
                    Issue(
                        file,
                        f"{key}.migConfig",
                        f"layout {settings.mig_config!r} is for {layout.gpu_model}, but NodePool {pool_name!r} may launch {', '.join(wrong)} with other GPUs",
                        f"restrict the pool to {layout.gpu_model} instance types or use a layout for their GPU model",
                    )
                )
    return issues


def _cloud_issues(config: StackConfig, cloud: CloudConfig, file: str, catalog: Catalog) -> list[Issue]:
    issues: list[Issue] = []
    net = cloud.network
    if (net.new is None) == (net.existing is None):
        issues.append(
            Issue(file, f"{CLOUD}.network", "give exactly one of `new` or `existing`", "keep `new:` to build a VPC, or `existing:` to use yours")
        )
    if net.new is not None and config.region:
        vpc = ipaddress.IPv4Network(net.new.cidr)
        for i, zone in enumerate(net.new.availability_zones):
            if not (zone.startswith(config.region) and len(zone) == len(config.region) + 1):
                issues.append(
                    Issue(file, f"{CLOUD}.network.new.availabilityZones[{i}]", f"{zone!r} is not a zone of {config.region}", f"use zones like {config.region}a")
                )
        if len(set(net.new.availability_zones)) != len(net.new.availability_zones):
            issues.append(Issue(file, f"{CLOUD}.network.new.availabilityZones", "zones repeat", "list each zone once"))
        try:
            plan_subnets(
                str(vpc),
                list(net.new.availability_zones),
                private_prefix=net.new.private_subnet_prefix,
                public_prefix=net.new.public_subnet_prefix,
                cluster_name=cloud.cluster.name,
            )
        except ValueError as exc:
            issues.append(
                Issue(file, f"{CLOUD}.network.new.privateSubnetPrefix", str(exc), "use a larger VPC CIDR, fewer zones or longer subnet prefixes")
            )
    sng = cloud.system_node_group
    if not sng.min_size <= sng.desired_size <= sng.max_size:
        issues.append(
            Issue(file, f"{CLOUD}.systemNodeGroup", f"need minSize <= desiredSize <= maxSize, got {sng.min_size}/{sng.desired_size}/{sng.max_size}", "reorder the sizes")
        )

    class_index: dict[str, Any] = {}
    for i, nc in enumerate(cloud.node_classes):
        key = f"{CLOUD}.nodeClasses[{i}]"
        if nc.name in class_index:
            issues.append(Issue(file, f"{key}.name", f"node class name {nc.name!r} repeats", "give every node class its own name"))
        class_index.setdefault(nc.name, nc)
        if config.environment is Environment.production and nc.ami_version == "latest":
            issues.append(
                Issue(
                    file,
                    f"{key}.amiAlias",
                    f"{nc.ami_alias!r} floats to every new AMI in a production stack (upstream warns against @latest in production)",
                    "pin a release, e.g. `al2023@v20261112`, and roll AMIs forward deliberately",
                )
            )
        for tag in nc.tags:
            if tag.startswith(RESERVED_TAG_PREFIXES):
                issues.append(Issue(file, f"{key}.tags.{tag}", "Karpenter reserves this tag key", "remove it; Karpenter sets it itself"))

    pool_names: set[str] = set()
    families = sorted(catalog.families())
    gpu_names = sorted({m.karpenter_gpu_name for m in catalog.gpu_models if m.karpenter_gpu_name})
    type_names = sorted(t.name for t in catalog.instance_types)

    for i, pool in enumerate(cloud.node_pools):
        key = f"{CLOUD}.nodePools[{i}]"
        if pool.name in pool_names:
            issues.append(Issue(file, f"{key}.name", f"NodePool name {pool.name!r} repeats", "give every NodePool its own name"))
        pool_names.add(pool.name)
        node_class = class_index.get(pool.node_class)
        if node_class is None:
            issues.append(
                Issue(
                    file,
                    f"{key}.nodeClass",
                    f"no node class named {pool.node_class!r}{suggest(pool.node_class, list(class_index))}",
                    f"use one of: {', '.join(class_index) or '(none defined)'}, or add it under nodeClasses",
                )
            )
        bad_ref = False
        for j, name in enumerate(pool.instance_types):
            refused = catalog.unsupported_family(name) if name not in type_names else None
            if refused is not None:
                bad_ref = True
                issues.append(Issue(file, f"{key}.instanceTypes[{j}]", f"instance type {name!r} cannot be provisioned: {refused.consequence}", refused.instead))
            elif name not in type_names:
                bad_ref = True
                issues.append(
                    Issue(
                        file,
                        f"{key}.instanceTypes[{j}]",
                        f"instance type {name!r} is not in the GPU catalog{suggest(name, type_names)}",
                        "use a catalog GPU instance type (`hybridgpu catalog` lists them) or add it to hybridgpu/catalog/data/instance_types.yaml",
                    )
                )
        for j, fam in enumerate(pool.instance_families):
            refused = catalog.unsupported_family(fam) if fam not in families else None
            if refused is not None:
                bad_ref = True
                issues.append(Issue(file, f"{key}.instanceFamilies[{j}]", f"instance family {fam!r} cannot be provisioned: {refused.consequence}", refused.instead))
            elif fam not in families:
                bad_ref = True
                issues.append(
                    Issue(file, f"{key}.instanceFamilies[{j}]", f"instance family {fam!r} is not in the GPU catalog{suggest(fam, families)}", f"use one of: {', '.join(families)}")
                )
        for j, gname in enumerate(pool.gpu_names):
            if gname not in gpu_names:
                bad_ref = True
                issues.append(Issue(file, f"{key}.gpuNames[{j}]", f"unknown Karpenter GPU name {gname!r}{suggest(gname, gpu_names)}", f"use one of: {', '.join(gpu_names)}"))
        if not (pool.instance_types or pool.instance_families or pool.gpu_names):
            issues.append(
                Issue(file, key, "the pool names no instance types, families or GPU names, so it could pick any GPU instance", "set `instanceFamilies`, `instanceTypes` or `gpuNames`")
            )
            continue
        if pool.gpu_limit is None:
            issues.append(
                Issue(
                    file,
                    f"{key}.gpuLimit",
                    "a GPU NodePool without a GPU limit can scale without bound",
                    "set `gpuLimit` to the most GPUs this pool may run at once (e.g. 8)",
                )
            )
        if bad_ref:
            continue
        resolved = resolve_instance_types(pool, catalog)
        if not resolved:
            issues.append(Issue(file, key, "no catalog instance type matches the pool's families/types/GPU filters", "widen `instanceFamilies`, `gpuNames` or `gpuCounts`"))
            continue
        if pool.gpu_limit is not None and pool.gpu_limit > 0:
            fewest = min(t.gpu_count for t in resolved)
            if pool.gpu_limit < fewest:
                issues.append(
                    Issue(
                        file,
                        f"{key}.gpuLimit",
                        f"limit {pool.gpu_limit} is below the smallest instance's {fewest} GPUs, so the pool can never launch a node",
                        f"raise `gpuLimit` to at least {fewest} or allow smaller instance types",
                    )
                )
        if CapacityType.spot in pool.capacity_types and len(resolved) < RECOMMENDED_SPOT_INSTANCE_TYPES and not pool.narrow_spot_reason:
            issues.append(
                Issue(
                    file,
                    f"{key}.instanceTypes" if pool.instance_types else f"{key}.instanceFamilies",
                    f"spot pool may pick only {len(resolved)} instance type(s) ({', '.join(t.name for t in resolved)}); "
                    f"spot needs at least {RECOMMENDED_SPOT_INSTANCE_TYPES} to be fulfilled reliably",
                    "add families or sizes, or set `narrowSpotReason` to say why a narrow spot pool is acceptable",
                )
            )
        mv = min_values(pool, resolved)
        if mv is not None and mv > len(resolved):
            issues.append(
                Issue(
                    file,
                    f"{key}.minInstanceTypes",
                    f"minValues {mv} exceeds the {len(resolved)} instance types the pool may pick, so Karpenter could never launch",
                    f"lower it to at most {len(resolved)} or allow more instance types",
                )
            )
        if node_class is not None:
            if CapacityType.reserved in pool.capacity_types and not (pool.capacity_blocks or node_class.capacity_reservation_ids or node_class.capacity_reservation_tags):
                issues.append(
                    Issue(
                        file,
                        f"{key}.capacityTypes",
                        f"capacity type `reserved` needs capacity reservations, but node class {node_class.name!r} selects none",
                        f"add `capacityReservationIds` (cr-...) to node class {node_class.name!r} or drop `reserved`",
                    )
                )
        for j, budget in enumerate(pool.disruption.budgets):
            if (budget.schedule is None) != (budget.duration is None):
                issues.append(
                    Issue(file, f"{key}.disruption.budgets[{j}]", "`schedule` and `duration` go together", "set both or neither")
                )
    issues += efa_issues(cloud, file, catalog)
    issues += capacity_block_issues(cloud, file, catalog)
    return issues
