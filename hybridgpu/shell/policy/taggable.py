"""Which AWS resource types take tags, read from the installed ``pulumi_aws`` SDK (shell).

A type is taggable when its Python resource class accepts a ``tags`` argument (the
pulumi-aws schema gives every taggable resource a ``tags`` input and, with provider default
tags, a computed ``tagsAll``). Looking at the SDK rather than keeping a list means a new
pulumi-aws release brings its new taggable types along.

This lives in the shell because it imports ``pulumi_aws`` (by name, at run time: only the
module of the asked type, since ``pulumi_aws`` imports its submodules lazily). The pack
(:mod:`hybridgpu.shell.policy.pack`) puts the answer on each
:class:`~hybridgpu.policy.base.PolicyResource` (``taggable``), so the validator
:func:`hybridgpu.policy.untagged.required_cost_tags` stays pure and never loads Pulumi.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading

#: pulumi_aws puts its submodules in ``sys.modules`` as ``importlib.util.LazyLoader`` modules
#: (``pulumi_aws/_utilities.py`` ``lazy_import``), and on Python < 3.12.3 the first attribute
#: access of such a module is not thread-safe (CPython gh-114763): two threads can both start
#: executing it and one sees a half-initialised module without the class. The pack's gRPC server
#: answers calls on 4 threads (pulumi_policy 1.21 ``policy.py``), and ``hybridgpu check`` sends
#: ``Analyze`` calls concurrently, so the first look-up per module is serialised.
_IMPORT_LOCK = threading.Lock()


@functools.lru_cache(maxsize=None)
def is_taggable(resource_type: str) -> bool | None:
    """True if the AWS resource type takes ``tags``, False if not, None if the SDK does not know it.

    Args:
        resource_type: a pulumi-aws type token, e.g. ``aws:ec2/vpc:Vpc`` (module ``ec2``,
            class ``Vpc``).

    Returns:
        None for non-AWS tokens, providers, and tokens the installed pulumi-aws lacks
        (callers then go by whether the inputs carry ``tags``).
    """
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "aws" or parts[1] in ("index", "providers"):
        return None
    module_name = parts[1].split("/", 1)[0]
    with _IMPORT_LOCK:
        try:
            module = importlib.import_module(f"pulumi_aws.{module_name}")
        except ImportError:
            return None
        cls = getattr(module, parts[2], None)
    init = getattr(cls, "_internal_init", None)
    if init is None:
        return None
    return "tags" in inspect.signature(init).parameters
