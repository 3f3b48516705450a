"""What every hybridgpu component shares: its type token and old-token alias, its dependencies, its input sections.

* Type tokens are ``hybridgpu:index:<Class>``: the one module Pulumi's component provider
  accepts (``ComponentProvider.validate_resource_type``), the same token from Python, TypeScript
  and YAML. Each component carries an alias of the token it had before (``hybridgpu:cloud:EksCluster``
  ...), so a deployed stack keeps its resources; children inherit the parent's aliases
  (docs/components.md, "Tokens and aliases").
* Ordering goes through ``opts.depends_on``: a component takes it off its own options and hands it
  to the children that must wait (which ones is in each component's docstring), so its other
  children do not wait for it.
* Input sections arrive as the validated model (Python program) or as a plain dict with the
  models' snake_case names (the provider, from another language); :func:`section` returns the
  model either way, and a bad dict gives the stack file's kind of error, before any child exists.
"""

from typing import Any, TypeVar, cast

import pulumi
from pydantic import BaseModel, TypeAdapter, ValidationError

from hybridgpu.errors import IssuesError, issues_from_validation

#: The Pulumi package name of the components (``pulumi package add``, the schema's ``name``).
PACKAGE = "hybridgpu"

T = TypeVar("T")


def type_token(cls_name: str) -> str:
    """The type token of a component class: ``hybridgpu:index:<Class>``."""
    return f"{PACKAGE}:index:{cls_name}"


class ComponentInputError(IssuesError):
    """A component's input section is invalid (from another language's program, through the provider).

    Args:
        issues: every problem found; ``file`` names the component and the input.
    """

    MAX_SHOWN = None

    def head(self) -> str:
        return f"{self.count_text} in {self.issues[0].file}:"


def component_options(old_type: str, opts: pulumi.ResourceOptions | None) -> tuple[pulumi.ResourceOptions, list[pulumi.Resource]]:
    """The options a component registers with, and the resources its waiting children depend on.

    Args:
        old_type: the component's type token before ``index`` tokens (becomes an alias).
        opts: the options the component was given, or None.

    Returns:
        ``(options, depends_on)``: the options with the alias added and a list ``depends_on`` taken
        off; that list (empty when none was given). A ``depends_on`` that is an Output stays on the
        component and the list is empty.
    """
    base = opts if opts is not None else pulumi.ResourceOptions()
    deps = base.depends_on
    waits: list[pulumi.Resource] = []
    if isinstance(deps, pulumi.Resource):
        waits = [deps]
    elif isinstance(deps, (list, tuple)):
        waits = [d for d in deps if isinstance(d, pulumi.Resource)]
        if len(waits) != len(deps):
            waits = []
    own = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=old_type)]))
    if waits:
        own.depends_on = None
    return own, waits


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(cls: Any) -> TypeAdapter[Any]:
    """One TypeAdapter per plan dataclass (building one costs more than validating with it)."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def section(cls: type[T], value: Any, *, component: str, name: str, field: str) -> T:
    """An input section as its model: the value itself when it is one, else the dict validated.

    Args:
        cls: the pydantic model or plan dataclass of the section.
        value: the model (Python program) or a dict of its snake_case fields (provider).
        component, name: the component class and logical name (for the error).
        field: the input's name in the schema (camelCase), for the error.

    Returns:
        The model instance (the same object when one was given: no dump, no re-validation).

    Raises:
        ComponentInputError: the dict does not validate; one issue per problem, each with the
            key path under the input and how to fix it.
    """
    if isinstance(value, cls):
        return value
    try:
        validated: Any = cls.model_validate(value) if issubclass(cls, BaseModel) else _adapter(cls).validate_python(value)
        return cast(T, validated)
    except ValidationError as exc:
        root = cls if issubclass(cls, BaseModel) else None
        issues = issues_from_validation(
            exc,
            file=f"input `{field}` of {component} {name!r}",
            root=root,
            reference=f"the `{field}` input of hybridgpu:index:{component} (docs/components.md)",
        )
        raise ComponentInputError(issues) from None



def as_input(model: Any) -> Any:
    """A validated section, passed where an Args TypedDict wants the section's dict.

    The Python program hands the component the model it validated; :func:`section` returns it as
    it is (no dump, no second validation). Typed ``Any`` so the TypedDict accepts it.
    """
    return model
