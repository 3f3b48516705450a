"""Harbor as the site's pull-through cache, rendered (pure): chart values, the proxy-cache setup script, the hosts' mirrors.

Chart: goharbor/harbor-helm **v1.19.1** (commit ae011519, 2026-05-12; Harbor v2.15.1), repository
``https://helm.goharbor.io``. Facts read 2026-11-27 (``values.yaml``, ``templates/``):

* ``existingSecretAdminPassword`` / ``existingSecretAdminPasswordKey`` name a Secret holding the admin
  password, ``existingSecretSecretKey`` one holding the 16-character encryption key under ``secretKey``:
  neither value then appears in the release's values. ``database.internal.password`` has no
  existing-secret form (``templates/database/database-secret.yaml`` renders it): the component passes
  it as a Pulumi secret value, never in rendered files.
* ``persistence.persistentVolumeClaim.{registry,jobservice.jobLog,database,redis,trivy}`` each take
  ``storageClass``, ``accessMode``, ``size``; ``persistence.resourcePolicy: keep`` leaves the claims
  after an uninstall.
* every component (``nginx``, ``portal``, ``core``, ``jobservice``, ``registry``, ``trivy``,
  ``database.internal``, ``redis.internal``, ``exporter``) takes ``nodeSelector``, ``tolerations`` and
  ``affinity``; the defaults are empty (:mod:`hybridgpu.render.charts`).
* ``templates/core/core-cm.yaml`` sets ``PERMITTED_REGISTRY_TYPES_FOR_PROXY_CACHE`` to ``docker-hub,
  harbor,azure-acr,ali-acr,aws-ecr,google-gcr,docker-registry,github-ghcr,jfrog-artifactory``: no
  ``quay`` (Harbor's own ``make/photon/prepare`` template differs), so quay.io is proxied as a
  ``docker-registry`` endpoint (:data:`UPSTREAMS`).
* the core Service is ``<fullname>-core`` on port 80 while ``internalTLS.enabled`` is false.
* ``expose.tls.certSource: auto`` makes the chart call ``genCA "harbor-ca" 365`` in ``templates/nginx/secret.yaml``
  (and the ingress secret) at every render, without a ``lookup`` of the existing Secret: every upgrade
  issues a new CA, valid 365 days. Hosts that trust that CA for their mirrors lose it at the next
  ``pulumi up`` that changes the release, so a site's own certificate (``certSource: secret``) is
  required when the hosts' mirrors point at Harbor (:mod:`hybridgpu.stack.platform_services`).

Harbor's API (goharbor/harbor v2.15.1, 335c05f2, ``api/v2.0/swagger.yaml``): ``GET /registries?q=name=<n>``
lists endpoints (``id``, ``name``, ``type``, ``url``, ``insecure``, ``credential``); ``POST /registries``
creates one (201, 409 on a duplicate name; 400 "the registry is unhealthy" when Harbor cannot reach the upstream:
``src/controller/registry/controller.go`` ``validate`` pings it, and refuses names over 64 characters); ``HEAD /projects?project_name=<n>`` answers 200 when the
project exists, 404 otherwise; ``POST /projects`` with ``project_name``, ``registry_id`` (the endpoint:
this makes a proxy cache project, system admins only, ``src/server/v2.0/handler/project.go``) and
``metadata.public``. The core image runs ``curl`` in its health check (``make/photon/core/Dockerfile``),
so the setup Job runs in that image (already pulled for Harbor) and uses only ``sh`` built-ins and ``curl``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hybridgpu.config.harbor import HarborConfig, HarborProxy
from hybridgpu.render.charts import controller_tolerations

__all__ = [
    "HARBOR_CHART",
    "HARBOR_CHART_VERSION",
    "HARBOR_REPO",
    "PROXY_CACHE_TYPES",
    "UPSTREAMS",
    "Upstream",
    "harbor_mirrors",
    "harbor_values",
    "proxy_cache_script",
]

HARBOR_CHART = "harbor"
HARBOR_CHART_VERSION = "1.19.1"
HARBOR_REPO = "https://helm.goharbor.io"
#: Harbor's version in the pinned chart (its images' tag).
HARBOR_APP_VERSION = "v2.15.1"
#: Helm release name and ``fullnameOverride``: every object is ``harbor-<component>``.
HARBOR_RELEASE = "harbor"
#: The core image the setup Job runs (the chart's ``core.image``).
CORE_IMAGE = f"docker.io/goharbor/harbor-core:{HARBOR_APP_VERSION}"
#: Secrets the component creates in the namespace (from Pulumi secrets) and the keys the chart reads.
ADMIN_SECRET, ADMIN_KEY = "harbor-admin", "HARBOR_ADMIN_PASSWORD"
SECRET_KEY_SECRET = "harbor-secret-key"
#: The ``kubernetes.io/tls`` Secret of the site's certificate (``tlsCertificate``/``tlsKey``), ``expose.tls.secret.secretName``.
TLS_SECRET = "harbor-tls"
#: The registry types chart v1.19.1 permits for proxy cache projects (``templates/core/core-cm.yaml``).
PROXY_CACHE_TYPES = ("docker-hub", "harbor", "azure-acr", "ali-acr", "aws-ecr", "google-gcr", "docker-registry", "github-ghcr", "jfrog-artifactory")
#: Components whose pods the chart creates, each with its values block.
COMPONENTS = ("nginx", "portal", "core", "jobservice", "registry", "trivy", "database.internal", "redis.internal", "exporter")


@dataclass(frozen=True)
class Upstream:
    """A Harbor registry endpoint for one public registry: Harbor's provider type and the URL it calls."""

    type: str
    url: str


#: The endpoint of each registry Harbor can proxy (types from goharbor/harbor ``src/pkg/reg/model/registry.go``;
#: Docker Hub's adapter talks to hub.docker.com, ``src/pkg/reg/adapter/dockerhub/consts.go``).
UPSTREAMS: dict[str, Upstream] = {
    "registry.k8s.io": Upstream("docker-registry", "https://registry.k8s.io"),
    "nvcr.io": Upstream("docker-registry", "https://nvcr.io"),
    "docker.io": Upstream("docker-hub", "https://hub.docker.com"),
    "quay.io": Upstream("docker-registry", "https://quay.io"),
    "ghcr.io": Upstream("github-ghcr", "https://ghcr.io"),
}


def endpoint_name(proxy: HarborProxy) -> str:
    """The Harbor registry endpoint's name for ``proxy``: ``proxy-<project>``."""
    return f"proxy-{proxy.project_name}"


def harbor_values(config: HarborConfig, storage_class: str) -> dict[str, Any]:
    """The chart's values for ``config``, every volume on ``storage_class`` (the site's NFS storage); no secret in them.

    Raises:
        ValueError: ``config`` has no hostname (the config check refuses that before).
    """
    if config.hostname is None:
        raise ValueError("harbor_values: hostname is required")
    tls: dict[str, Any] = {"enabled": True, "certSource": "secret", "secret": {"secretName": TLS_SECRET}} if config.tls_certificate else {
        "enabled": True,
        "certSource": "auto",
        "auto": {"commonName": config.hostname},
    }
    expose: dict[str, Any] = {"type": config.expose, "tls": tls}
    if config.expose == "nodePort":
        expose["nodePort"] = {"ports": {"https": {"nodePort": config.node_port}}}
    elif config.expose == "ingress":
        expose["ingress"] = {"hosts": {"core": config.hostname}}

    def claim(size: str, mode: str = "ReadWriteOnce") -> dict[str, Any]:
        return {"storageClass": storage_class, "accessMode": mode, "size": size}

    values: dict[str, Any] = {
        "fullnameOverride": HARBOR_RELEASE,
        "expose": expose,
        "externalURL": config.external_url,
        "existingSecretAdminPassword": ADMIN_SECRET,
        "existingSecretAdminPasswordKey": ADMIN_KEY,
        "existingSecretSecretKey": SECRET_KEY_SECRET,
        "persistence": {
            "enabled": True,
            "resourcePolicy": "keep",
            "persistentVolumeClaim": {
                "registry": claim(f"{config.registry_size_gib}Gi", "ReadWriteMany"),
                "jobservice": {"jobLog": claim("1Gi")},
                "database": claim("10Gi"),
                "redis": claim("1Gi"),
                "trivy": claim("5Gi"),
            },
            "imageChartStorage": {"type": "filesystem"},
        },
        "trivy": {"enabled": config.trivy},
    }
    for component in COMPONENTS:
        node: dict[str, Any] = values
        for part in component.split("."):
            node = node.setdefault(part, {})
        node["tolerations"] = controller_tolerations()
    return values


def harbor_mirrors(config: HarborConfig) -> list[dict[str, Any]]:
    """The inventory ``mirrors.registries`` entries that send each proxied registry to its Harbor project.

    Each is ``{registry, mirrors: [{url: <externalURL>/v2/<project>, overridePath: true[, ca]}]}``: containerd
    then requests ``<url>/<repository>/manifests/<ref>`` (``override_path``, containerd ``docs/hosts.md``),
    which is Harbor's path of the proxied repository, and falls back to the upstream when Harbor fails.
    Returns the entries in ``proxyCache`` order (plain data, in the inventory's spelling).
    """
    entries = []
    for proxy in config.proxy_cache:
        mirror: dict[str, Any] = {"url": f"{config.external_url}/v2/{proxy.project_name}", "overridePath": True}
        if config.ca_file:
            mirror["ca"] = config.ca_file
        entries.append({"registry": proxy.registry, "mirrors": [mirror]})
    return entries


def proxy_cache_script(config: HarborConfig, namespace: str) -> str:
    """A POSIX shell script that makes Harbor's proxy-cache endpoints and projects exist (idempotent; run by the setup Job).

    It reads ``HARBOR_ADMIN_PASSWORD`` and, per proxied registry with credentials, ``CRED_<n>`` (``user:token``)
    from the environment (Secrets), waits for Harbor's ``/api/v2.0/ping``, then for each registry: finds the
    endpoint by name or creates it, and creates the project unless ``HEAD /projects`` finds it. Existing
    endpoints and projects are left as they are. Exits non-zero on any other API answer, naming it.

    Args:
        config: the Harbor settings.
        namespace: the release namespace (the core Service's DNS name).
    """
    api = f"http://{HARBOR_RELEASE}-core.{namespace}.svc/api/v2.0"
    lines = [
        "#!/bin/sh",
        "# Harbor proxy-cache setup (hybridgpu): registry endpoints and proxy cache projects; safe to re-run.",
        "set -eu",
        f"API=\"${{HARBOR_API:-{api}}}\"",
        'AUTH="admin:${HARBOR_ADMIN_PASSWORD}"',
        'OUT="${OUT:-/tmp/harbor-setup.out}"',
        "i=0",
        'until curl -fsS -o /dev/null "$API/ping"; do',
        "  i=$((i + 1)); [ \"$i\" -lt 60 ] || { echo \"harbor-setup: $API/ping does not answer\" >&2; exit 1; }; sleep 5",
        "done",
        "call() {  # method path [body] -> prints the HTTP status; the body goes to $OUT",
        '  if [ $# -ge 3 ]; then',
        '    curl -sS -o "$OUT" -w "%{http_code}" -u "$AUTH" -X "$1" -H "Content-Type: application/json" --data "$3" "$API$2"',
        '  elif [ "$1" = HEAD ]; then',
        '    curl -sS -o "$OUT" -w "%{http_code}" -u "$AUTH" --head "$API$2"',
        "  else",
        '    curl -sS -o "$OUT" -w "%{http_code}" -u "$AUTH" -X "$1" "$API$2"',
        "  fi",
        "}",
        "body() { b=''; IFS= read -r b <\"$OUT\" || true; printf '%s' \"$b\"; }  # Harbor answers JSON on one line",
        "fail() { echo \"harbor-setup: $1 answered HTTP $2: $(body)\" >&2; exit 1; }",
        "registry_id() {  # name -> id of the endpoint, empty when none",
        '  s=$(call GET "/registries?q=name%3D$1"); [ "$s" = 200 ] || fail "GET /registries" "$s"',
        "  b=$(body); rest=${b#*\\\"id\\\":}; [ \"$rest\" != \"$b\" ] || return 0",
        "  rest=${rest# }; printf '%s' \"${rest%%[!0-9]*}\"",
        "}",
    ]
    for index, proxy in enumerate(config.proxy_cache):
        upstream = UPSTREAMS[proxy.registry]
        name, project = endpoint_name(proxy), proxy.project_name
        cred = ""
        if proxy.credentials:
            cred = f',"credential":{{"type":"basic","access_key":"\'"${{CRED_{index}%%:*}}"\'","access_secret":"\'"${{CRED_{index}#*:}}"\'"}}'
        body = f'\'{{"name":"{name}","type":"{upstream.type}","url":"{upstream.url}","insecure":false{cred}}}\''
        lines += [
            f"# {proxy.registry} -> project {project}",
            f"id=$(registry_id {name})",
            'if [ -z "$id" ]; then',
            f"  s=$(call POST /registries {body}); [ \"$s\" = 201 ] || fail \"POST /registries ({name})\" \"$s\"",
            f"  id=$(registry_id {name}); echo \"harbor-setup: created endpoint {name} ({upstream.url})\"",
            "fi",
            f"s=$(call HEAD '/projects?project_name={project}')",
            'if [ "$s" = 404 ]; then',
            f"  s=$(call POST /projects '{{\"project_name\":\"{project}\",\"registry_id\":'\"$id\"',\"metadata\":{{\"public\":\"true\"}}}}')",
            f"  [ \"$s\" = 201 ] || fail \"POST /projects ({project})\" \"$s\"; echo \"harbor-setup: created proxy cache project {project}\"",
            f"elif [ \"$s\" != 200 ]; then fail \"HEAD /projects ({project})\" \"$s\"; fi",
        ]
    lines.append('echo "harbor-setup: done"')
    return "\n".join(lines) + "\n"
