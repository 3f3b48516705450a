"""MLflow tracking server (issue 30): settings through the CLI, the chart values against the pinned chart, what MLflow does with them.

Upstream read 2026-11-27 (stored copies): mlflow/mlflow ``charts/`` (Chart.yaml ed375243: chart 0.1.0,
appVersion 3.11.1, the one version on oci://ghcr.io/mlflow/charts/mlflow per mlflow/mlflow#25683;
values.yaml 9e068576; templates/deployment.yaml, _helpers.tpl), ``mlflow/server/security_utils.py``
(0c38f324: Host header check), ``docker/Dockerfile.full``; parliament 1.6.4 for the IAM documents.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from hybridgpu.config.mlflow import MlflowConfig, MlflowDatabase
from hybridgpu.render.charts import CHARTS, chart_placements, helm_merge
from hybridgpu.render.iam import pod_identity_trust_policy
from hybridgpu.render.mlflow import (
    MLFLOW_PORT,
    allowed_hosts,
    artifact_bucket_policy,
    artifact_bucket_settings,
    artifact_policy,
    backend_store_uri,
    mlflow_values,
    tracking_uri,
)
from hybridgpu.render.scheduling import NodeGroup, placement_problems
from hybridgpu.security.iam_lint import PolicyDocument, lint_policy
from tests.helpers import ROOT
from tests.helpers.cases import assert_fixture_counts, assert_verdict, case_ids, load_cases
from tests.platform.platform_cases import model_case_keys, leaf_paths, validate_case

CASES: list[dict[str, Any]] = load_cases("tests/fixtures/platform/mlflow/cases.yaml")
KEYS = yaml.safe_load((ROOT / "tests/fixtures/platform/mlflow/chart-keys-0.1.0.yaml").read_text())


def _config(**extra: Any) -> MlflowConfig:
    return MlflowConfig.model_validate({"enabled": True, "database": {"host": "pg.internal", "passwordSecret": "mlflow:dbPassword"}, **extra})


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_validate_verdict(scratch_project, tmp_path, case):
    assert_verdict(validate_case(scratch_project, tmp_path, case, ["mlflow:dbPassword"]), case)


def test_fixture_counts():
    assert_fixture_counts(CASES)


@pytest.mark.parametrize("side", ["eks", "onprem"])
def test_every_value_we_set_exists_in_the_pinned_chart_with_its_type(side):
    """Each leaf we render is a key of the chart's values.yaml 0.1.0 with the type of its default (free-form maps pass through)."""
    values = mlflow_values(_config(), side, bucket="b", storage_class="hybridgpu-mlflow-nfs")
    free = set(KEYS["free"])
    for path, value in leaf_paths(values, free).items():
        parent = next((f for f in free if path.startswith(f + ".")), None)
        if parent is not None:
            continue
        assert path in KEYS["keys"], f"{path} is not a values key of the pinned chart"
        assert type(value).__name__ == KEYS["keys"][path], (path, value)


def test_password_never_in_values_and_uri_survives_special_characters():
    """The chart copies ``mlflow.backendStoreUriFrom`` into the env's valueFrom (templates/deployment.yaml), so the values carry only
    the Secret's name; the URI's password is percent-encoded, which libpq and SQLAlchemy's ``make_url`` decode (RFC 3986 userinfo)."""
    password = "p@ss:w/rd%?#"
    database = MlflowDatabase.model_validate({"host": "pg.internal", "port": 6432, "database": "mlflow", "user": "mlflow", "passwordSecret": "mlflow:x"})
    uri = backend_store_uri(database, password)
    parts = urlsplit(uri)
    assert (parts.scheme, parts.hostname, parts.port, parts.path, unquote(parts.password or "")) == ("postgresql", "pg.internal", 6432, "/mlflow", password)
    assert parts.query == "sslmode=require"
    for side in ("eks", "onprem"):
        text = yaml.safe_dump(mlflow_values(_config(), side, bucket="b", storage_class="c"))
        assert "postgresql://" not in text and "backendStoreUri:" not in text
        assert mlflow_values(_config(), side, bucket="b", storage_class="c")["mlflow"]["backendStoreUriFrom"] == {
            "secretKeyRef": {"name": "mlflow-backend-store", "key": "uri"}
        }


def _mlflow_allows(patterns: list[str], host: str) -> bool:
    """mlflow/server/security_utils.py ``is_allowed_host_header``: ``*`` allows all; a pattern with ``*`` is fnmatch'ed, else compared."""
    return "*" in patterns or any(fnmatch.fnmatch(host, p) if "*" in p else host == p for p in patterns)


def _mlflow_defaults() -> list[str]:
    """mlflow/server/security_utils.py ``get_default_allowed_hosts`` (localhost variants with and without a port, private IPs)."""
    local = ["localhost", "127.0.0.1", "[::1]", "0.0.0.0"]
    return [*local, *(h.replace("[", "[[]", 1) + ":*" if h.startswith("[") else h + ":*" for h in local), "192.168.*", "10.*",
            *(f"172.{i}.*" for i in range(16, 32)), "fc00:*", "fd00:*"]


def test_in_cluster_clients_pass_mlflows_host_check():
    """A job calling the tracking URI sends ``Host: mlflow.<ns>.svc:5000``: MLflow's defaults refuse it (403), our --allowed-hosts admit it."""
    ours = allowed_hosts("mlflow")
    hosts = [urlsplit(tracking_uri("mlflow")).netloc, "mlflow.mlflow.svc.cluster.local:5000", "mlflow:5000", "mlflow.mlflow", "10.96.4.2:5000"]
    assert all(_mlflow_allows(ours, h) for h in hosts)
    assert not any(_mlflow_allows(_mlflow_defaults(), h) for h in hosts[:3])
    assert not _mlflow_allows(ours, "evil.example.com") and not _mlflow_allows(ours, "mlflow.other.svc:5000")
    options = mlflow_values(_config(), "eks", bucket="b")["server"]["value_options"]
    # _helpers.tpl mlflow.serverArgs: each value option becomes --<key with - for _>=<value>
    args = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    assert f"--port={MLFLOW_PORT}" in args and any(a.startswith("--allowed-hosts=mlflow,") for a in args)


def test_artifacts_are_served_by_the_server_from_s3_or_the_nfs_claim():
    eks = mlflow_values(_config(), "eks", bucket="gpu-prod-mlflow-x")
    assert eks["mlflow"]["artifactsDestination"] == "s3://gpu-prod-mlflow-x/artifacts" and "storage" not in eks
    assert eks["server"]["flag_options"] == ["serve_artifacts"]
    onprem = mlflow_values(_config(replicas=3), "onprem", storage_class="hybridgpu-mlflow-nfs")
    assert onprem["storage"] == {"enabled": True, "size": "100Gi", "accessMode": "ReadWriteMany", "storageClassName": "hybridgpu-mlflow-nfs", "mountPath": "/mlflow"}
    assert onprem["mlflow"]["artifactsDestination"].startswith(onprem["storage"]["mountPath"] + "/")


def test_iam_documents_pass_parliament_and_grant_only_the_prefix():
    bucket = "arn:aws:s3:::gpu-prod-mlflow-abc"
    key = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    docs = {
        "artifact_policy": artifact_policy(bucket, "artifacts"),
        "artifact_policy+kms": artifact_policy(bucket, "artifacts", key),
        "artifact_bucket_policy": artifact_bucket_policy(bucket),
        "trust": pod_identity_trust_policy(account_id="111122223333", cluster_name="gpu-prod", namespace="mlflow", service_account="mlflow"),
    }
    for name, doc in docs.items():
        report = lint_policy(PolicyDocument(f"mlflow {name}", doc))
        assert report.findings == [], (name, report.findings)
    statements = docs["artifact_policy"]["Statement"]
    assert {s["Resource"] for s in statements} == {bucket, f"{bucket}/artifacts/*"}
    assert not any("*" in a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"]))
    trust = docs["trust"]["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"} and trust["Action"] == ["sts:AssumeRole", "sts:TagSession"]


def test_bucket_settings_encrypt_block_public_access_and_expire_old_versions():
    """Every key is an argument of the installed pulumi-aws 7 types (its ``s3/_inputs.py`` TypedDicts), so the provider gets them all."""
    import pulumi_aws.s3._inputs as aws_inputs

    plain = artifact_bucket_settings(_config().artifacts)
    kms_key = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    kms = artifact_bucket_settings(_config(artifacts={"kmsKeyArn": kms_key, "noncurrentVersionDays": 90}).artifacts)
    assert plain["encryption"] == [{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}, "bucket_key_enabled": False}]
    assert kms["encryption"] == [{"apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms", "kms_master_key_id": kms_key}, "bucket_key_enabled": True}]
    assert all(plain["public_access_block"].values()) and len(plain["public_access_block"]) == 4
    assert plain["ownership"] == {"object_ownership": "BucketOwnerEnforced"} and plain["versioning"] == {"status": "Enabled"}
    (rule,) = kms["lifecycle"]
    assert rule["noncurrent_version_expiration"] == {"noncurrent_days": 90} and rule["status"] == "Enabled"
    shapes = {
        "BucketServerSideEncryptionConfigurationRuleArgsDict": kms["encryption"][0],
        "BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgsDict": kms["encryption"][0]["apply_server_side_encryption_by_default"],
        "BucketOwnershipControlsRuleArgsDict": plain["ownership"],
        "BucketVersioningVersioningConfigurationArgsDict": plain["versioning"],
        "BucketLifecycleConfigurationRuleArgsDict": rule,
        "BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgsDict": rule["noncurrent_version_expiration"],
        "BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgsDict": rule["abort_incomplete_multipart_upload"],
    }
    for typed, value in shapes.items():
        assert set(value) <= set(getattr(aws_inputs, typed).__annotations__), (typed, value)


def test_runs_on_system_nodes_not_gpu_nodes():
    """The chart's default (no tolerations) leaves the server Pending on EKS, where every node is tainted; ours tolerate the system taints only."""
    system = NodeGroup(name="system", labels={"kubernetes.io/os": ("linux",)}, taints=({"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"},), gpu=False, nodes=2)
    gpu = NodeGroup(name="gpu", labels={"kubernetes.io/os": ("linux",)}, taints=({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},), gpu=True, nodes=1)
    (ours,) = chart_placements("mlflow", mlflow_values(_config(), "eks", bucket="b"), "mlflow")
    assert placement_problems(ours, system) == [] and placement_problems(ours, gpu) != []
    (default,) = chart_placements("mlflow", helm_merge(CHARTS["mlflow"].defaults, {}), "mlflow")
    assert placement_problems(default, system) != []


MODEL_CASES: list[dict[str, Any]] = load_cases("tests/fixtures/platform/mlflow/model-cases.yaml")


@pytest.mark.parametrize("case", MODEL_CASES, ids=case_ids(MODEL_CASES))
def test_model_verdict(case):
    """Single-section rules, checked by the model as `hybridgpu validate` runs it (the CLI cases above cover the same path)."""
    keys = model_case_keys(case["platform"])
    assert keys == ([case["key"]] if case["verdict"] == "fail" else []), keys


@pytest.mark.parametrize("cluster", ["gpu-prod", "GPU_Prod.East", "a" * 100, "x"])
def test_bucket_prefix_is_a_valid_s3_prefix(cluster):
    """S3 bucket names: 3-63 lower-case letters, digits, dots, hyphens, starting with a letter or digit; pulumi-aws's
    ``bucket_prefix`` takes at most 37 characters (the provider appends a 26-character unique suffix)."""
    from hybridgpu.components.mlflow import bucket_prefix

    prefix = bucket_prefix(cluster)
    assert len(prefix) <= 37 and prefix.endswith("-mlflow-")
    assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", prefix), prefix


def test_the_stacks_scheduling_check_places_the_platform_releases():
    """``hybridgpu validate``'s scheduling check (hybridgpu/stack/scheduling.py ``cluster_workloads``) sees the MLflow
    server on the EKS cluster that gets it, and Harbor's components on-prem: a release it did not list could
    stay Pending unnoticed."""
    from hybridgpu.catalog import load_catalog
    from hybridgpu.config.platform import PlatformConfig
    from hybridgpu.stack.load import load_stack
    from hybridgpu.stack.scheduling import cluster_workloads
    from tests.platform.test_harbor import _config as harbor_config

    prod = load_stack("prod", ROOT)
    config = prod.config.model_copy(update={"platform": PlatformConfig(mlflow=_config())})
    [eks] = cluster_workloads(config, load_catalog())
    assert [w.key for w in eks.workloads if w.key == "hybridgpu:platform.mlflow"] == ["hybridgpu:platform.mlflow"]
    onprem = load_stack("onprem", ROOT)
    config = onprem.config.model_copy(update={"platform": PlatformConfig(harbor=harbor_config())})
    [site] = cluster_workloads(config, load_catalog(), inventory=onprem.inventory, onprem_plan=onprem.onprem_plan)
    assert sum(w.key == "hybridgpu:platform.harbor" for w in site.workloads) == 7
