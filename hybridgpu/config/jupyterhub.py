"""Typed JupyterHub settings (``hybridgpu:platform`` ``jupyterhub``): notebooks with GPU access (issue 30).

JupyterHub is the zero-to-jupyterhub chart (:mod:`hybridgpu.render.jupyterhub`) with:

* sign-in through the site's OAuth 2.0 / OpenID Connect provider (``auth``: JupyterHub's
  ``generic-oauth`` authenticator, OAuthenticator ``GenericOAuthenticator``); the client secret is
  a Pulumi secret named by its config key, never a value in the stack file. There is no open
  mode: a hub without ``auth``, or with JupyterHub's ``dummy`` / ``null`` authenticators, is refused;
* one spawn profile per team and per kind of GPU the stack offers (whole GPUs by model, MIG
  slices, time-sliced shares), each spawning into the team's namespace with the team's Kueue
  LocalQueue label and cost labels, offered only to the team's identity-provider groups
  (docs/notebooks.md);
* the idle culler (``idleTimeoutSeconds``) and a spawn timeout long enough for Kueue admission,
  a node launch and the image pull (``startTimeoutSeconds``).

Single-section checks live here (pydantic validators); the checks that read the teams file, the
burst plan, the NVIDIA and cloud sections or the inventory are in :mod:`hybridgpu.stack.jupyterhub`.
Nothing here imports Pulumi.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, StringConstraints, field_validator, model_validator

from hybridgpu.config.base import Dns1123Name, Model
from hybridgpu.config.mlflow import PulumiSecretKey, check_secret_key
from hybridgpu.errors import FieldError

__all__ = ["JupyterHubAuth", "JupyterHubConfig", "NotebookImage", "REFUSED_AUTHENTICATORS", "SUPPORTED_AUTHENTICATORS"]

#: Authenticators hybridgpu renders, by JupyterHub entry-point name -> the OAuthenticator class whose
#: ``hub.config`` section carries the settings (jupyterhub/oauthenticator 17.4.0 ``pyproject.toml``
#: ``[project.entry-points."jupyterhub.authenticators"]``, the version in the z2jh 4.4.0 hub image's
#: ``images/hub/requirements.txt``; read 2026-11-27).
SUPPORTED_AUTHENTICATORS = {"generic-oauth": "GenericOAuthenticator"}
#: Authenticators that let anyone in, or that are not the site's identity provider, with why they are refused.
REFUSED_AUTHENTICATORS = {
    "dummy": "accepts any username (and any password unless one shared password is set): an open hub",
    "dummyauthenticator": "accepts any username: an open hub",
    "null": "signs nobody in and leaves the hub to other services: no team can be mapped",
    "nullauthenticator": "signs nobody in and leaves the hub to other services: no team can be mapped",
    "shared-password": "one password for everyone: no identity, so no team and no group",
    "native": "keeps its own user database, outside the site's identity provider: no groups, so no team",
    "pam": "the hub container's local users: no groups from the identity provider, so no team",
}
_CALLBACK_PATH = "/hub/oauth_callback"


def _https(value: str, what: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.netloc or " " in value:
        raise ValueError(f"{what} {value!r} is not an https:// URL (tokens and the client secret would cross the network in clear text)")
    return value


class JupyterHubAuth(Model):
    """Sign-in through the site's OAuth 2.0 / OpenID Connect provider (OAuthenticator ``GenericOAuthenticator``).

    Upstream (jupyterhub/oauthenticator 17.4.0, commit cf70f251, 2026-03-26, ``oauthenticator/oauth2.py``,
    read 2026-11-27): ``allowed_groups`` / ``admin_groups`` take effect only with ``manage_groups: true``,
    and the groups come from ``auth_state_groups_key`` (``oauth_user.<claim>``: the userinfo response is
    kept under ``oauth_user``); with no allow rule nobody may sign in (``allow_all`` is false).
    """

    authenticator: str = Field(
        default="generic-oauth",
        description=(
            "JupyterHub authenticator (`JupyterHub.authenticator_class`): `generic-oauth` (any OpenID Connect or OAuth 2.0 "
            "provider: Keycloak, Okta, Microsoft Entra ID, Dex, Cognito ...). `dummy`, `null`, `shared-password`, `native` "
            "and `pam` are refused. Default: `generic-oauth`."
        ),
    )
    client_id: Annotated[str, StringConstraints(min_length=1, max_length=255)] = Field(
        description="OAuth client ID registered with the provider for this hub. Required."
    )
    client_secret_pulumi_config: PulumiSecretKey = Field(
        description=(
            "Pulumi config key holding the OAuth client secret, set with `pulumi config set --secret <key> <secret>` "
            "(e.g. `jupyterhub:clientSecret`); the secret reaches the release as a Pulumi secret. Required."
        )
    )
    authorize_url: str = Field(description="The provider's authorization endpoint (https). Required.")
    token_url: str = Field(description="The provider's token endpoint (https). Required.")
    userdata_url: str = Field(description="The provider's userinfo endpoint (https). Required.")
    oauth_callback_url: str = Field(
        description="This hub's callback URL as registered with the provider: `https://<hub host>/hub/oauth_callback`. Required."
    )
    scope: list[Annotated[str, StringConstraints(pattern=r"^[!#-\[\]-~]+$")]] = Field(
        default_factory=lambda: ["openid", "profile", "email", "groups"],
        min_length=1,
        description="OAuth scopes requested; the groups claim must be in the userinfo response. Default: `[openid, profile, email, groups]`.",
    )
    username_claim: Annotated[str, StringConstraints(min_length=1, max_length=128)] = Field(
        default="preferred_username", description="Userinfo claim that becomes the JupyterHub username. Default: `preferred_username`."
    )
    groups_claim: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_:/-]+(\.[A-Za-z0-9_:/-]+)*$")] = Field(
        default="groups",
        description=(
            "Userinfo claim listing the user's groups (dotted for nested claims); matched against each team's `groups` in the "
            "teams file. Default: `groups`."
        ),
    )
    admin_groups: list[Annotated[str, StringConstraints(min_length=1, max_length=255)]] = Field(
        default_factory=list, description="Identity-provider groups whose members are hub admins. Default: none."
    )

    @field_validator("authenticator")
    @classmethod
    def _known_authenticator(cls, value: str) -> str:
        name = value.strip().lower()
        if name in REFUSED_AUTHENTICATORS or name.endswith(("dummyauthenticator", "nullauthenticator")):
            why = REFUSED_AUTHENTICATORS.get(name, "lets anyone in or nobody")
            raise FieldError(
                "",
                f"authenticator {value!r} {why}; hybridgpu never installs an open hub",
                "use `authenticator: generic-oauth` with your identity provider's client (docs/notebooks.md, Sign-in)",
            )
        if value not in SUPPORTED_AUTHENTICATORS:
            raise FieldError(
                "",
                f"authenticator {value!r} is not one hybridgpu renders (supported: {', '.join(SUPPORTED_AUTHENTICATORS)})",
                "use `authenticator: generic-oauth`: every OpenID Connect provider works through it (docs/notebooks.md, Sign-in)",
            )
        return value

    @field_validator("client_secret_pulumi_config")
    @classmethod
    def _secret_key(cls, value: str) -> str:
        return check_secret_key(value, "jupyterhub:clientSecret")

    @field_validator("authorize_url", "token_url", "userdata_url")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        return _https(value, "endpoint")

    @field_validator("oauth_callback_url")
    @classmethod
    def _callback(cls, value: str) -> str:
        _https(value, "callback URL")
        if urlsplit(value).path.rstrip("/") != _CALLBACK_PATH:
            raise ValueError(f"callback URL {value!r} must end in {_CALLBACK_PATH} (where JupyterHub receives the provider's redirect)")
        return value


class NotebookImage(Model):
    """The notebook server image (``singleuser.image``): needs CUDA libraries for the GPU profiles."""

    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+([._/:-][a-z0-9]+)*$", max_length=255)] = Field(
        description="Image repository, e.g. `quay.io/jupyter/pytorch-notebook`. Required."
    )
    tag: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")] = Field(
        description="Image tag, pinned (not `latest`): every notebook of a team then runs the same software. Required."
    )

    @field_validator("tag")
    @classmethod
    def _pinned(cls, value: str) -> str:
        if value == "latest" or value.endswith("-latest"):
            raise ValueError(f"tag {value!r} moves: two users of one team would get different software and a node's cached image goes stale")
        return value


class JupyterHubConfig(Model):
    """JupyterHub (zero-to-jupyterhub chart) on this stack's cluster: GPU notebooks that count against the teams' Kueue quotas."""

    enabled: bool = Field(default=False, description="Install JupyterHub. Default: false.")
    namespace: Dns1123Name = Field(default="jupyterhub", description="Namespace of the hub, proxy and user scheduler. Default: `jupyterhub`.")
    auth: JupyterHubAuth | None = Field(
        default=None, description="Sign-in through the site's OAuth / OpenID Connect provider. Required when `enabled` (there is no open hub)."
    )
    image: NotebookImage | None = Field(default=None, description="Notebook server image, with CUDA libraries. Required when `enabled`.")
    cpu_guarantee: float = Field(default=2.0, gt=0, le=256, description="CPU cores guaranteed to each notebook (`singleuser.cpu.guarantee`). Default: 2.")
    memory_guarantee_gib: int = Field(
        default=16, ge=1, le=4096, description="Memory guaranteed to each notebook, in GiB (`singleuser.memory.guarantee`). Default: 16."
    )
    idle_timeout_seconds: int = Field(
        default=3600,
        ge=600,
        le=604800,
        description=(
            "Idle time after which the culler stops a notebook and frees its GPU (`cull.timeout`), in seconds, 600 to 604800 (7 days). "
            "Default: 3600."
        ),
    )
    cull_every_seconds: int = Field(
        default=300, ge=60, le=3600, description="How often the culler looks for idle notebooks (`cull.every`), in seconds. Default: 300."
    )
    start_timeout_seconds: int = Field(
        default=1200,
        ge=300,
        le=7200,
        description=(
            "How long a spawn may take before JupyterHub gives up and deletes the pod (`singleuser.startTimeout`), in seconds: it covers "
            "the wait for Kueue admission (the pod is scheduling-gated while the team's quota is used), a GPU node launch and the "
            "image pull. Default: 1200."
        ),
    )
    proxy_service_type: Literal["ClusterIP", "LoadBalancer", "NodePort"] = Field(
        default="ClusterIP",
        description=(
            "Service type of the hub's public proxy (`proxy.service.type`); `ClusterIP` leaves exposure to your ingress or gateway "
            "(the chart's default would be a public load balancer). Default: `ClusterIP`."
        ),
    )

    @model_validator(mode="after")
    def _complete_when_enabled(self) -> JupyterHubConfig:
        if not self.enabled:
            return self
        if self.auth is None:
            raise FieldError(
                "auth",
                "JupyterHub is enabled without `auth`: hybridgpu never installs an open hub",
                "add `auth` with your OpenID Connect provider (`clientId`, `clientSecretPulumiConfig`, `authorizeUrl`, `tokenUrl`, "
                "`userdataUrl`, `oauthCallbackUrl`; docs/notebooks.md, Sign-in)",
            )
        if self.image is None:
            raise FieldError(
                "image",
                "JupyterHub is enabled without `image`: the chart's sample image has no CUDA libraries, so a GPU profile would start a notebook that cannot use its GPU",
                "add `image: {name: quay.io/jupyter/pytorch-notebook, tag: <a pinned CUDA tag>}` (or your site's image)",
            )
        if self.cull_every_seconds > self.idle_timeout_seconds:
            raise FieldError(
                "cullEverySeconds",
                f"the culler looks every {self.cull_every_seconds} s, more than the idle timeout of {self.idle_timeout_seconds} s: idle GPUs stay held up to twice as long",
                f"set `cullEverySeconds` to at most {self.idle_timeout_seconds // 2}",
            )
        return self


def memory_guarantee(gib: int) -> str:
    """KubeSpawner's spelling of ``gib`` GiB: ``"<n>G"`` (JupyterHub's ``ByteSpecification`` reads ``G`` as 1024**3 bytes)."""
    return f"{gib}G"

