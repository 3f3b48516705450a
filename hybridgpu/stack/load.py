"""Validate a stack once: schema, single-section checks, then the cross-section checks (pure).

* :func:`validate_stack` turns namespaced config values into a :class:`Stack`: the frozen
  :class:`~hybridgpu.config.models.StackConfig` plus what validation derived from other files
  (inventory, burst plan, cost report, rendered on-prem plan), so that nothing downstream
  derives them again;
* :func:`load_stack` reads ``<stackConfigDir>/Pulumi.<stack>.yaml`` and validates it;
* :func:`config_from_pulumi_values` and :func:`load_stack_config` return just the config
  (and the raw values);
* :func:`report_from_stack` returns the cost report validation built;
* :func:`preloaded` lets the offline preview hand the program the stack it has just validated:
  the program validates only when its runtime config differs (always, under ``pulumi up``).

Every problem becomes a :class:`~hybridgpu.errors.Issue` (pydantic errors through
:func:`~hybridgpu.errors.issues_from_validation`, the one translator) in one
:class:`~hybridgpu.errors.StackConfigError`, raised before any Pulumi resource is registered.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import difflib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hybridgpu.burst.plan import BurstPlan
from hybridgpu.config.keys import FIELD_TO_KEY, KEY_TO_FIELD, PROJECT, STRUCTURED_KEYS
from hybridgpu.config.models import StackConfig
from hybridgpu.economics.report import StackCostReport, build_report
from hybridgpu.errors import CONFIG_REFERENCE, Issue, StackConfigError, StackFileError, issues_from_validation, unknown_key_fix
from hybridgpu.inventory import Inventory
from hybridgpu.onprem import OnPremPlan
from hybridgpu.stack.checks import check_stack
from hybridgpu.stack.files import StackValues, find_project_root, list_stacks, pulumi_config_strings, read_stack_file, stack_config_dir
from hybridgpu.stack.inventory import load_onprem_inventory


@dataclass(frozen=True)
class Stack:
    """A validated stack.

    Attributes:
        config: the validated, frozen configuration.
        file: the stack file as users know it, e.g. ``stacks/Pulumi.prod.yaml``.
        root: the project root that relative paths in the config start from.
        values: the raw namespaced values as read from the stack file (None when validated from
            the values the Pulumi runtime holds).
        inventory: the on-prem inventory (``hybridgpu:onprem``), or None.
        burst_plan: the derived burst plan (``hybridgpu:burst``), or None.
        cost_report: the cost report at the default utilizations (``hybridgpu:economics``), or None.
        onprem_plan: the on-prem plan rendered from the inventory during validation
            (:func:`hybridgpu.onprem.plan_onprem`: kubeadm configs and scripts per host), or None;
            the program deploys this plan, it does not render it again.
    """

    config: StackConfig
    file: str
    root: Path
    values: StackValues | None = None
    inventory: Inventory | None = None
    burst_plan: BurstPlan | None = None
    cost_report: StackCostReport | None = None
    onprem_plan: OnPremPlan | None = None

    def report(self, utilizations: list[float] | None = None) -> StackCostReport:
        """The stack's cost report: the one validation built at the default utilizations, else built now.

        Args:
            utilizations: utilization points in (0, 1] to price, or None for the section's defaults.

        Raises:
            ValueError: a utilization outside (0, 1].
        """
        if utilizations is None and self.cost_report is not None:
            return self.cost_report
        return build_report(self.config, inventory=self.inventory, utilizations=utilizations, file=self.file)


def _loc_to_key(loc: tuple[Any, ...]) -> str:
    """A pydantic location of :class:`StackConfig` as a stack-file key path, e.g. ``hybridgpu:cloud.nodePools[1].weight``."""
    if not loc:
        return f"{PROJECT}:<root>"
    head, *rest = loc
    key = FIELD_TO_KEY.get(str(head), f"{PROJECT}:{head}")
    for part in rest:
        key += f"[{part}]" if isinstance(part, int) else f".{part}"
    return key


def validate_stack(values: dict[str, Any], *, stack: str, file: str, root: Path | None = None) -> Stack:
    """Validate namespaced config values into a :class:`Stack` (the one validation of a stack).

    Args:
        values: ``ns:key`` -> value; structured values may be given as dicts/lists or as the JSON
            strings the Pulumi runtime holds. Keys of other namespaces (``aws:profile``,
            ``kubernetes:context``...) are ignored except ``aws:region``.
        stack: stack name.
        file: stack file path to name in errors.
        root: project root for relative paths in the config (inventories, burst plans); default:
            the working directory.

    Returns:
        The stack with its config and what validation derived (values left None).

    Raises:
        StackConfigError: every problem found: unknown ``hybridgpu:`` keys, schema errors
            (unknown keys, out-of-range values, wrong types) and the checks of
            :mod:`hybridgpu.config` and :mod:`hybridgpu.stack.checks`, each with file, key path and fix.
    """
    data: dict[str, Any] = {"stack": stack}
    issues: list[Issue] = []
    for key, value in values.items():
        if key in KEY_TO_FIELD:
            if key in STRUCTURED_KEYS and isinstance(value, str):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    issues.append(Issue(file, key, "expected a structured (mapping/list) value", "write the value as YAML mapping/list"))
                    continue
            data[KEY_TO_FIELD[key]] = value
        elif key.startswith(f"{PROJECT}:"):
            issues.append(Issue(file, key, "unknown configuration key", unknown_key_fix(key, sorted(KEY_TO_FIELD))))
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as exc:
        found = issues_from_validation(exc, file=file, root=StackConfig, reference=CONFIG_REFERENCE, key_of=_loc_to_key)
        raise StackConfigError(issues + found) from None
    base = root or Path.cwd()
    checked = check_stack(config, file, root=base, config_values=values)
    issues += checked.issues
    if issues:
        raise StackConfigError(issues)
    inventory = load_onprem_inventory(config, base) if config.onprem is not None else None
    return Stack(config, file, base, None, inventory, checked.burst_plan, checked.cost_report, checked.onprem_plan)


def config_from_pulumi_values(values: dict[str, Any], *, stack: str, file: str, root: Path | None = None) -> StackConfig:
    """The config of :func:`validate_stack` (same arguments and errors)."""
    return validate_stack(values, stack=stack, file=file, root=root).config


def stack_name(given: str, root: Path) -> str:
    """The stack named by ``given``: a stack name (``prod``) or the path of its stack file
    (``stacks/Pulumi.prod.yaml``, as a shell completes it).

    Args:
        given: what the user typed.
        root: project root (resolved).

    Returns:
        The stack name, whose ``<stackConfigDir>/Pulumi.<name>.yaml`` exists.

    Raises:
        StackFileError: no such stack; the message names the closest stack (a typo) or the
            project's stacks, and for a path outside the project's stack directory where stack files live.
    """
    config_dir = stack_config_dir(root)
    name = given
    if given.endswith((".yaml", ".yml")) or "/" in given or os.sep in given:
        base = Path(given).name
        if not (base.startswith("Pulumi.") and base.endswith(".yaml")) or base.count(".") < 2:
            raise StackFileError(f"{given}: not a stack file name; give a stack name (e.g. `prod`) or a path like {config_dir.relative_to(root)}/Pulumi.prod.yaml")
        name = base[len("Pulumi.") : -len(".yaml")]
        candidate = Path(given) if Path(given).is_absolute() else (Path.cwd() / given)
        if candidate.is_file() and candidate.resolve().parent != config_dir.resolve():
            raise StackFileError(
                f"{given}: stack files of this project live in {config_dir.relative_to(root)}/ (Pulumi.yaml `stackConfigDir`); "
                f"move the file there and give the name `{name}`"
            )
    if (config_dir / f"Pulumi.{name}.yaml").is_file():
        return name
    stacks = list_stacks(root)
    close = difflib.get_close_matches(name, stacks, n=1, cutoff=0.6)
    hint = f"did you mean `{close[0]}`? " if close else ""
    available = ", ".join(stacks) or "none"
    raise StackFileError(f"{(config_dir / f'Pulumi.{name}.yaml').relative_to(root)}: no such stack file; {hint}(stacks here: {available})")


def load_stack(stack: str, root: Path | None = None) -> Stack:
    """Read and validate ``<stackConfigDir>/Pulumi.<stack>.yaml``.

    Args:
        stack: stack name.
        root: project root (default: found from the working directory).

    Returns:
        The validated :class:`Stack`, with the raw values (to hand to Pulumi's runtime).

    Raises:
        StackFileError: unreadable or missing file; StackConfigError: invalid configuration.
    """
    root = (root or find_project_root()).resolve()
    stack = stack_name(stack, root)
    path = stack_config_dir(root) / f"Pulumi.{stack}.yaml"
    values = read_stack_file(path, root=root)
    loaded = validate_stack(values.values, stack=values.stack, file=values.file, root=root)
    return dataclasses.replace(loaded, root=root, values=values)


def load_stack_config(stack: str, root: Path | None = None) -> tuple[StackConfig, StackValues]:
    """``(config, values)`` of :func:`load_stack` (same arguments and errors)."""
    loaded = load_stack(stack, root)
    assert loaded.values is not None
    return loaded.config, loaded.values


_PRELOADED: contextvars.ContextVar[Stack | None] = contextvars.ContextVar("hybridgpu_preloaded_stack", default=None)


@contextlib.contextmanager
def preloaded(stack: Stack) -> Iterator[None]:
    """Within the block, :func:`runtime_stack` returns ``stack`` for the same stack name and values.

    The offline preview validates a stack before it starts the program (so a bad stack file
    fails before the mocks start); the program then reads its config from the Pulumi runtime
    and would validate it again. Inside this block it is handed the validated stack instead.
    """
    token = _PRELOADED.set(stack)
    try:
        yield
    finally:
        _PRELOADED.reset(token)


def runtime_stack(values: dict[str, Any], *, stack: str, file: str, root: Path | None = None) -> Stack:
    """The validated stack for the config values the Pulumi runtime holds (``ns:key`` -> string).

    Returns the :func:`preloaded` stack when its name and values are the same (compared as the
    strings the runtime holds); otherwise validates (:func:`validate_stack`).

    Raises:
        StackConfigError: invalid configuration.
    """
    pre = _PRELOADED.get()
    if pre is not None and pre.values is not None and pre.config.stack == stack:
        if pulumi_config_strings(pre.values.values) == pulumi_config_strings(values):
            return pre
    return validate_stack(values, stack=stack, file=file, root=root)


def report_from_stack(stack: str, root: Path | None = None, utilizations: list[float] | None = None) -> StackCostReport:
    """The cost report of ``stacks/Pulumi.<stack>.yaml`` (with its inventory).

    At the default utilizations this is the report validation built (it is not built twice);
    other utilizations build it again at those points.

    Args:
        stack: stack name.
        root: project root (default: found from the working directory).
        utilizations: utilization points (0..1] to price, or None for the defaults.

    Raises:
        StackFileError, StackConfigError: the stack file is missing or invalid (including a bad
            price override, which validation reports).
        InventoryError: the inventory is invalid.
    """
    return load_stack(stack, root).report(utilizations)
