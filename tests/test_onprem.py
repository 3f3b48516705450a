"""The pure on-prem plan: order, lifecycle, join endpoint, MIG configs."""

from __future__ import annotations

from pathlib import Path

import yaml

from hybridgpu.inventory import load_inventory
from hybridgpu.onprem import plan_onprem
from tests.helpers import ROOT

SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"


def _edit(tmp_path: Path, edit) -> Path:
    docs = list(yaml.safe_load_all(SAMPLE.read_text()))
    edit(docs)
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def _hosts(docs):
    return next(d for d in docs if d["kind"] == "HostList")["hosts"]


def test_sample_plan_order_and_lifecycle():
    plan = plan_onprem(load_inventory(SAMPLE))
    stages = [(s.hostname, s.stage) for s in plan.steps]
    assert stages[0] == ("cp-01", "init")
    assert [h for h, st in stages if st == "join-control-plane"] == ["cp-02", "cp-03"]
    assert stages.index(("cp-03", "join-control-plane")) < min(i for i, (_, st) in enumerate(stages) if st == "join-worker")
    assert plan.skipped == ("dgx-h100-04",)
    assert [s.hostname for s in plan.steps if s.drain] == ["a100-02"]
    assert plan.gpus == {"H100-80GB": 24, "A100-80GB": 16}  # the absent host's GPUs are not counted


def test_init_runs_on_the_first_active_control_plane(tmp_path):
    def cordon_cp01(docs):
        next(h for h in _hosts(docs) if h["hostname"] == "cp-01")["state"] = "cordoned"

    plan = plan_onprem(load_inventory(_edit(tmp_path, cordon_cp01)))
    assert plan.first.hostname == "cp-02"
    cp01 = next(s for s in plan.steps if s.hostname == "cp-01")
    assert cp01.stage == "join-control-plane" and cp01.drain


def test_single_control_plane_without_endpoint_joins_its_address(tmp_path):
    def single(docs):
        hosts = _hosts(docs)
        hosts[:] = [h for h in hosts if h["hostname"] not in ("cp-02", "cp-03")]
        site = next(d for d in docs if d["kind"] == "Site")
        site["cluster"].pop("controlPlaneEndpoint", None)

    plan = plan_onprem(load_inventory(_edit(tmp_path, single)))
    worker = next(s for s in plan.steps if s.stage == "join-worker")
    join = next(d for d in yaml.safe_load_all(worker.kubeadm_config) if d["kind"] == "JoinConfiguration")
    assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "10.20.0.11:6443"


def test_each_distinct_mig_layout_is_one_named_config():
    plan = plan_onprem(load_inventory(SAMPLE))
    names = [layout.name for layout in plan.mig_layouts]
    assert len(names) == len(set(names)) == 2
    assert {s.mig_config for s in plan.steps if s.mig_config} == set(names)
    for step in plan.steps:
        if step.mig_config:
            assert f"nvidia.com/mig.config={step.mig_config}" in step.kubeadm_config


def test_worker_templates_render_exactly_what_per_host_rendering_does():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import inventory_bench

    from hybridgpu.inventory import inventory_from_documents

    for inventory in (load_inventory(SAMPLE), inventory_from_documents([("gen.yaml", inventory_bench.generate(60))])):
        fast = plan_onprem(inventory)
        slow = plan_onprem(inventory, use_templates=False)
        assert fast == slow
        assert len({s.kubeadm_config for s in fast.steps}) == len(fast.steps)  # every host its own config


def _kubelet_config(step) -> dict:
    return next(d for d in yaml.safe_load_all(step.kubeadm_config) if d["kind"] == "KubeletConfiguration")


def test_kubelet_serving_certificates_are_an_inventory_setting_off_by_default(tmp_path):
    """Issue 17: nothing approves kubelet-serving CSRs in a kubeadm cluster, so the default is off."""
    plan = plan_onprem(load_inventory(SAMPLE))
    assert _kubelet_config(plan.first)["serverTLSBootstrap"] is False

    def turn_on(docs):
        next(d for d in docs if d["kind"] == "Site")["cluster"]["kubeletServerTlsBootstrap"] = True

    on = plan_onprem(load_inventory(_edit(tmp_path, turn_on)))
    assert _kubelet_config(on.first)["serverTLSBootstrap"] is True


def test_run_scripts_never_treat_kubelet_conf_as_done():
    """Issue 17: the scripts check the API server, the Node and kubeadm-config (sandboxed in tests/render/test_host_sandbox.py)."""
    for step in plan_onprem(load_inventory(SAMPLE)).steps:
        assert "already belongs to a cluster" not in step.kubeadm_run
        assert "get --raw=/readyz" in step.kubeadm_run and "configmap kubeadm-config" in step.kubeadm_run
        credentials = "/etc/kubernetes/admin.conf" if step.role == "control-plane" else "/etc/kubernetes/kubelet.conf"
        assert f"readonly CHECK_KUBECONFIG={credentials}" in step.kubeadm_run
