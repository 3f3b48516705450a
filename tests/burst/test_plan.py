"""The burst plan: loading, the one derivation of every quota, and its errors (pure, no Pulumi)."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from hybridgpu.burst.models import BurstPlanFile
from hybridgpu.burst.plan import BurstPlanError, read_plan_file
from hybridgpu.k8s import GPU_RESOURCE
from hybridgpu.stack.burst import load_burst_plan
from hybridgpu.catalog import load_catalog
from hybridgpu.stack.load import load_stack_config
from hybridgpu.errors import StackConfigError
from tests.helpers import ROOT, import_fresh
from tests.helpers.scratch import PLAN, example_plan


@pytest.fixture(scope="module")
def plan():
    return load_burst_plan(PLAN, ROOT)


def test_example_quotas_come_from_the_inventory_and_the_ceilings(plan):
    # Inventory: dgx-h100-01..03 active (3 x 8 H100), dgx-h100-04 absent; a100-01 active with
    # 8 GPUs x 2 x 3g.40gb; a100-02 cordoned (not schedulable).
    assert dict(plan.onprem.gpus) == {"H100-80GB": 24}
    assert {m: dict(r) for m, r in plan.onprem.mig.items()} == {"A100-80GB": {"nvidia.com/mig-3g.40gb": 16}}
    assert plan.cloud["spot"].gpus == 64 and plan.cloud["spot"].ceiling_from == "gpuCeiling"
    # 90,000 USD / (6.88 USD/GPU-hour x 730 h) = 17.9 -> 17 -> 16 (whole p5.48xlarge), not below the 16 ceiling.
    assert plan.cloud["on-demand"].gpus == 16
    assert plan.cloud["on-demand"].usd_per_gpu_hour == pytest.approx(55.04 / 8)
    assert plan.nodepool_limits() == {"h100-spot": 64, "h100-on-demand": 16}
    roles = {s: c.role for s, c in plan.clusters.items()}
    assert roles == {"hybrid": "manager", "onprem": "onprem-worker", "prod": "cloud-worker"}
    assert plan.clusters["onprem"].quota_totals() == {GPU_RESOURCE: 24, "nvidia.com/mig-3g.40gb": 16}
    assert plan.clusters["prod"].quota_totals() == {GPU_RESOURCE: 80, "nvidia.com/mig-3g.40gb": 0}
    # Per class on-prem + its own ceiling (spot 24 + 64, on-demand 24 + 16, on-prem only 24): the
    # manager's gate per class, not a sum of the workers (issue 15, point 3).
    assert plan.clusters["hybrid"].quota_totals() == {GPU_RESOURCE: 88 + 40 + 24, "nvidia.com/mig-3g.40gb": 3 * 16}


def test_flavors_carry_the_gpu_labels_of_each_side(plan):
    catalog = load_catalog()
    onprem = {f.name: f for f in plan.clusters["onprem"].flavors}
    assert onprem["onprem-h100-80gb"].node_labels == {"nvidia.com/gpu.product": catalog.gpu_model("H100-80GB").product_label}
    assert onprem["onprem-a100-80gb-mig"].node_labels["nvidia.com/mig.strategy"] == "mixed"
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in onprem["onprem-h100-80gb"].tolerations
    eks = {f.name: f for f in plan.clusters["prod"].flavors}
    assert eks["eks-spot"].node_labels == {"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "h100-spot"}
    # The on-demand pool has one GPU name (p5.48xlarge: h100); the spot pool spans h100 and h200.
    assert eks["eks-on-demand"].node_labels["karpenter.k8s.aws/instance-gpu-name"] == "h100"
    assert [f.name for f in plan.clusters["hybrid"].flavors] == [
        "multikueue-onprem-h100-80gb",
        "multikueue-eks-spot",
        "multikueue-onprem-a100-80gb-mig",
        "multikueue-eks-on-demand",
    ]
    assert all(not f.node_labels and not f.tolerations for f in plan.clusters["hybrid"].flavors)


def test_local_queues_are_mirrored_where_the_queue_may_run(plan):
    def names(stack):
        return {(lq.namespace, lq.name) for lq in plan.clusters[stack].local_queues}

    everything = {("ml-research", "training"), ("ml-research", "batch-eval"), ("ml-platform", "restricted")}
    assert names("hybrid") == everything == names("onprem")
    assert names("prod") == everything - {("ml-platform", "restricted")}  # burst: none stays on-prem
    eks_cq = {lq.name: lq.cluster_queue for lq in plan.clusters["prod"].local_queues}
    assert eks_cq == {"training": "hybridgpu-eks-spot", "batch-eval": "hybridgpu-eks-on-demand"}
    mk = plan.clusters["hybrid"].multikueue
    assert mk.dispatcher == "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    assert mk.configs == {"hybridgpu-spillover": ("onprem", "eks"), "hybridgpu-onprem-only": ("onprem",)}
    assert {w.stack_reference for w in mk.workers} == {"acme/hybridgpu/onprem", "acme/hybridgpu/prod"}


def test_manager_classes_share_nothing_and_mirror_the_worker_flavors(plan):
    """Issue 15, point 3: a class owns on-prem + its own ceiling, in flavors no larger than one worker's."""
    cqs = {cq.name: cq for cq in plan.clusters["hybrid"].cluster_queues}

    def flavors(name):
        return {fq.flavor: dict(fq.nominal) for g in cqs[name].groups for fq in g.flavors}

    assert flavors("hybridgpu-spot") == {
        "multikueue-onprem-h100-80gb": {GPU_RESOURCE: 24},
        "multikueue-eks-spot": {GPU_RESOURCE: 64},
        "multikueue-onprem-a100-80gb-mig": {"nvidia.com/mig-3g.40gb": 16},
    }
    assert flavors("hybridgpu-on-demand")["multikueue-eks-on-demand"] == {GPU_RESOURCE: 16}
    assert "multikueue-eks-spot" not in flavors("hybridgpu-on-demand")
    assert set(flavors("hybridgpu-onprem-only")) == {"multikueue-onprem-h100-80gb", "multikueue-onprem-a100-80gb-mig"}
    assert {cq.cohort for cq in cqs.values()} == {None}
    assert all(not fq.borrowing_limit and not fq.lending_limit for cq in cqs.values() for g in cq.groups for fq in g.flavors)
    # A 32-GPU on-demand job fits no flavor (24 on-prem, 16 on-demand): Kueue leaves it pending
    # with ExceedsMaxQuota and it reserves nothing; under the old cohort it reserved 32 of 40.
    assert max(q.get(GPU_RESOURCE, 0) for q in flavors("hybridgpu-on-demand").values()) == 24


def test_split_queues_make_onprem_the_manager(scratch_project):
    data = example_plan()
    data["topology"] = "split-queues"
    del data["manager"]["stack"]
    root = scratch_project(plan=data)
    plan = load_burst_plan(PLAN, root)
    assert {s: c.role for s, c in plan.clusters.items()} == {"onprem": "onprem-manager", "prod": "cloud-worker"}
    onprem = plan.clusters["onprem"]
    assert onprem.multikueue.configs == {"hybridgpu-eks": ("eks",)}
    assert onprem.multikueue.dispatcher.endswith("all-at-once")
    lqs = {(lq.namespace, lq.name): lq.cluster_queue for lq in onprem.local_queues}
    assert lqs[("ml-research", "training")] == "hybridgpu-onprem"
    assert lqs[("ml-research", "training-burst")] == "hybridgpu-burst-spot"
    assert ("ml-platform", "restricted-burst") not in lqs
    assert {lq.name for lq in plan.clusters["prod"].local_queues} == {"training-burst", "batch-eval-burst"}
    assert onprem.quota_totals(burst_only=True) == {GPU_RESOURCE: 80}
    assert plan.clusters["prod"].quota_totals() == {GPU_RESOURCE: 80, "nvidia.com/mig-3g.40gb": 0}


def test_budget_ceiling_is_rounded_to_whole_instances(scratch_project):
    data = example_plan()
    # 50,000 USD / (6.88 x 730) = 9.96 GPUs -> 9 -> 8 (one p5.48xlarge), below the 16 ceiling.
    data["cloud"]["onDemand"]["monthlyBudgetUsd"] = 50000
    root = scratch_project(plan=data)
    plan = load_burst_plan(PLAN, root)
    assert plan.cloud["on-demand"].gpus == 8 and plan.cloud["on-demand"].ceiling_from == "monthlyBudgetUsd"
    # ... and the prod stack, whose h100-on-demand still says 16, is now refused with the fix.
    with pytest.raises(StackConfigError) as err:
        load_stack_config("prod", root)
    issue = next(i for i in err.value.issues if "gpuLimit" in i.key)
    assert issue.key == "hybridgpu:cloud.nodePools[2].gpuLimit"
    assert "derives 8 GPUs" in issue.message and "cloud.onDemand.monthlyBudgetUsd" in issue.message
    assert "`gpuLimit: 8`" in issue.fix


def test_the_example_stacks_validate():
    for stack in ("hybrid", "onprem", "prod"):
        config, _ = load_stack_config(stack, ROOT)
        assert config.burst is not None and config.burst.plan == PLAN


@pytest.mark.parametrize(
    "change,field,words",
    [
        (lambda d: d["cloud"]["spot"].update(nodePool="h100-nope"), "nodePool", "no NodePool 'h100-nope'"),
        (lambda d: d["cloud"]["spot"].update(nodePool="h100-on-demand"), "nodePool", "does not launch spot"),
        (lambda d: d["cloud"].pop("onDemand"), "burst", "bursts to on-demand but `cloud.onDemand` is not configured"),
        (lambda d: d.update(queues=[q for q in d["queues"] if q["burst"] != "spot"]), None, "no queue bursts to spot"),
    ],
)
def test_derivation_errors_name_file_field_and_fix(scratch_project, change, field, words):
    data = example_plan()
    change(data)
    root = scratch_project(plan=data)
    with pytest.raises(BurstPlanError) as err:
        load_burst_plan(PLAN, root)
    issue = next(i for i in err.value.issues if words in i.message)
    assert issue.file == PLAN and issue.field == field


@pytest.mark.parametrize(
    "change,where,words",
    [
        (lambda d: d["cloud"]["spot"].update(gpuCelling=3), "cloud.spot.gpuCelling", "did you mean `gpuCeiling`"),
        (lambda d: d.update(topology="mesh"), "topology", "spillover"),
        (lambda d: d["manager"].update(stack="onprem"), None, "cannot be its own worker"),
        (lambda d: d["cloud"]["spot"].pop("gpuCeiling"), "cloud.spot", "give `gpuCeiling`, `monthlyBudgetUsd` or both"),
        (lambda d: d["queues"].append(dict(d["queues"][0])), "queues", "listed twice"),
        (lambda d: d["cloud"]["spot"].pop("priceSource"), "cloud.spot", "needs `priceSource`"),
    ],
)
def test_plan_file_schema_errors(tmp_path, change, where, words):
    data = example_plan()
    change(data)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(BurstPlanError) as err:
        read_plan_file(path, "plan.yaml")
    issue = next(i for i in err.value.issues if words in i.message)
    assert issue.file == "plan.yaml"
    if where is not None:
        assert issue.field == where


def test_duplicate_keys_and_missing_files_are_errors(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text("topology: spillover\ntopology: split-queues\n")
    with pytest.raises(BurstPlanError, match="plan.yaml"):
        read_plan_file(path, "plan.yaml")
    with pytest.raises(BurstPlanError, match="no such burst plan file"):
        read_plan_file(tmp_path / "missing.yaml", "missing.yaml")


def test_a_stack_outside_the_plan_is_refused(scratch_project):
    root = scratch_project(plan=example_plan(), stacks=["dev"], stack_edits={"dev": lambda config: config.update({"hybridgpu:burst": {"plan": PLAN}})})
    with pytest.raises(StackConfigError) as err:
        load_stack_config("dev", root)
    assert err.value.keys == ["hybridgpu:burst.plan"]
    assert "takes no part" in str(err.value)


def test_plan_models_are_frozen_and_strict():
    data = example_plan()
    model = BurstPlanFile.model_validate(data)
    with pytest.raises(ValidationError, match="frozen"):
        model.topology = "split-queues"  # type: ignore[misc]
    assert model.manager_stack == "hybrid"


def test_burst_core_imports_no_pulumi():
    proc = import_fresh(
        "hybridgpu.burst.plan", "hybridgpu.burst.kueue", "hybridgpu.burst.schema", "hybridgpu.burst.simulate", "hybridgpu.burst.trace", "hybridgpu.cli.burst"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_committed_plan_reference_matches_generated_and_every_field_is_documented():
    from hybridgpu.burst.docs import REGENERATE, burst_plan_reference_markdown
    from hybridgpu.docs_gen import field_doc_problems

    committed = (ROOT / "docs" / "burst-plan-reference.md").read_text()
    assert committed == burst_plan_reference_markdown(), f"docs/burst-plan-reference.md is stale; run `{REGENERATE}`"
    assert field_doc_problems(BurstPlanFile) == []
    for key in ("`cloud.spot.monthlyBudgetUsd`", "`queues[].burst`", "`simulation.karpenterLaunchSeconds`"):
        assert key in committed
