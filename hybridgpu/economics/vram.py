"""VRAM estimator: how much GPU memory a model needs, and the smallest GPU or MIG profile that holds it.

Formulas (memory in decimal GB = 1e9 bytes, as model sizes are quoted; compared with GPU
memory in GiB after conversion):

* weights = parameters x bytes per parameter of the precision (fp32 4, fp16/bf16 2, fp8/int8 1,
  int4 0.5: the storage sizes of the number formats, IEEE 754 and the seed "ML infrastructure
  primer", shared/seeds/001 "The VRAM Calculation");
* inference = weights + KV cache, the KV cache either computed
  ``2 (K and V) x layers x kv_heads x head_dim x context_tokens x batch x bytes`` (the
  transformer KV-cache size; e.g. vLLM's and Hugging Face's memory calculators use the same
  product) or, without the shape, ``kv_overhead x weights`` (the seed's "typically an extra
  20-30%"; default 0.3);
* training = weights + gradients (parameters x bytes of the precision) + optimizer states
  (Adam/AdamW: two fp32 moments = 8 bytes per parameter; SGD with momentum 4; plain SGD 0)
  + fp32 master weights for mixed precision (4 bytes per parameter when the precision is
  fp16/bf16 and ``master_weights``: the 16 bytes/parameter of mixed-precision Adam in the ZeRO
  paper, Rajbhandari et al. 2020, section 3.1) + activations (given in GB, or
  ``activation_fraction x weights``; default 1.0, the seed's "rough lower bound");
* with ``shards`` GPUs (FSDP / ZeRO-3) every term is divided by the shard count: weights,
  gradients and optimizer states are sharded (seed 001: "Each GPU only holds 1/N"), and for a
  fixed global batch each GPU keeps the activations of its 1/N of the batch.

GPU and MIG memory come from the catalogs (:mod:`hybridgpu.catalog` ``memoryMiB``,
:mod:`hybridgpu.mig` ``memoryGiB``), so no hardware fact is repeated here. Nothing here
imports Pulumi.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hybridgpu.catalog import Catalog, load_catalog
from hybridgpu.mig import load_mig_models

__all__ = ["BYTES_PER_PARAMETER", "CUDA_CONTEXT_RESERVE_GIB", "Fit", "VramEstimate", "estimate_vram", "fitting_gpus", "fitting_mig_profiles", "min_gpus"]

Precision = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"]
Optimizer = Literal["adam", "adamw", "sgd-momentum", "sgd", "none"]

#: Storage size of one parameter per number format (bytes): IEEE 754 binary32 = 4, binary16
#: and bfloat16 = 2, FP8 (E4M3/E5M2) and int8 = 1, int4 = 0.5.
BYTES_PER_PARAMETER: dict[str, float] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
#: Optimizer state per parameter (bytes): Adam/AdamW two fp32 moments; SGD momentum one fp32 buffer.
OPTIMIZER_BYTES: dict[str, float] = {"adam": 8, "adamw": 8, "sgd-momentum": 4, "sgd": 0, "none": 0}
#: Memory kept free per GPU (or MIG instance) for the CUDA context (GiB), on top of the estimate.
#: An assumption, not a documented or measured figure: NVIDIA documents no fixed context size
#: (it depends on the driver, CUDA version, GPU and loaded libraries). PyTorch forum answers
#: (discuss.pytorch.org/t/high-gpu-memory-overhead/81330, PyTorch 1.4/1.5) report ~700-800 MB
#: for a PyTorch process, so 0.5 GiB may be low for PyTorch workloads.
CUDA_CONTEXT_RESERVE_GIB = 0.5
_GB = 1e9
_GIB = 2**30


@dataclass(frozen=True)
class VramEstimate:
    """Memory needed per GPU (GB, decimal) by part.

    Attributes:
        mode: ``inference`` or ``training``.
        parts: part name -> GB per GPU (``weights``, ``kv_cache`` | ``gradients``,
            ``optimizer``, ``master_weights``, ``activations``).
        shards: GPUs the model state is sharded over.
    """

    mode: str
    parts: dict[str, float]
    shards: int = 1

    @property
    def total_gb(self) -> float:
        """Sum of the parts (GB per GPU)."""
        return sum(self.parts.values())

    @property
    def total_gib(self) -> float:
        """The total in GiB (GB x 1e9 / 2^30), to compare with GPU memory."""
        return self.total_gb * _GB / _GIB


def estimate_vram(
    params_billions: float,
    mode: Literal["inference", "training"] = "inference",
    precision: Precision = "bf16",
    optimizer: Optimizer = "adam",
    *,
    master_weights: bool = True,
    kv_overhead: float = 0.3,
    layers: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    context_tokens: int | None = None,
    batch: int = 1,
    kv_precision: Precision | None = None,
    activation_gb: float | None = None,
    activation_fraction: float = 1.0,
    shards: int = 1,
) -> VramEstimate:
    """Estimate the GPU memory of a model (formulas in the module docstring).

    Args:
        params_billions: parameters in billions (e.g. 7 for a 7B model).
        mode: ``inference`` or ``training``.
        precision: storage precision of weights (and gradients when training).
        optimizer: training optimizer (ignored for inference).
        master_weights: keep fp32 master weights when training in fp16/bf16.
        kv_overhead: KV cache as a fraction of the weights when the shape is not given.
        layers, kv_heads, head_dim, context_tokens: transformer shape for an exact KV cache
            (all four or none).
        batch: concurrent sequences (KV cache).
        kv_precision: KV cache precision (default: ``precision``).
        activation_gb: training activations of the whole (global) batch in GB (default:
            ``activation_fraction x weights``).
        activation_fraction: see ``activation_gb``.
        shards: GPUs the model state and the batch are split over (FSDP/ZeRO-3 data parallel).

    Returns:
        A :class:`VramEstimate`.

    Raises:
        ValueError: a non-positive size, an unknown precision or optimizer, a partial KV shape.
    """
    if not (math.isfinite(params_billions) and params_billions > 0):
        raise ValueError(f"params_billions must be > 0, got {params_billions!r}")
    if precision not in BYTES_PER_PARAMETER:
        raise ValueError(f"unknown precision {precision!r}; one of {', '.join(BYTES_PER_PARAMETER)}")
    if mode not in ("inference", "training"):
        raise ValueError(f"mode must be inference or training, got {mode!r}")
    if shards < 1 or batch < 1:
        raise ValueError("shards and batch must be >= 1")
    params = params_billions * 1e9
    weights = params * BYTES_PER_PARAMETER[precision] / _GB
    parts: dict[str, float] = {"weights": weights / shards}
    if mode == "inference":
        shape = (layers, kv_heads, head_dim, context_tokens)
        if any(v is not None for v in shape):
            if any(v is None or v < 1 for v in shape):
                raise ValueError("give layers, kv_heads, head_dim and context_tokens together (each >= 1), or none of them")
            kv_bytes = BYTES_PER_PARAMETER[kv_precision or precision]
            parts["kv_cache"] = 2 * layers * kv_heads * head_dim * context_tokens * batch * kv_bytes / _GB / shards  # type: ignore[operator]
        else:
            if kv_overhead < 0:
                raise ValueError(f"kv_overhead must be >= 0, got {kv_overhead}")
            parts["kv_cache"] = kv_overhead * weights / shards
        return VramEstimate(mode, parts, shards)
    if optimizer not in OPTIMIZER_BYTES:
        raise ValueError(f"unknown optimizer {optimizer!r}; one of {', '.join(OPTIMIZER_BYTES)}")
    parts["gradients"] = weights / shards
    parts["optimizer"] = params * OPTIMIZER_BYTES[optimizer] / _GB / shards
    if master_weights and precision in ("fp16", "bf16"):
        parts["master_weights"] = params * 4 / _GB / shards
    if activation_gb is not None and activation_gb < 0:
        raise ValueError("activation_gb must be >= 0")
    parts["activations"] = (activation_gb if activation_gb is not None else activation_fraction * weights) / shards
    return VramEstimate(mode, parts, shards)


@dataclass(frozen=True)
class Fit:
    """A device that holds the estimate.

    Attributes:
        kind: ``gpu`` (a whole GPU) or ``mig`` (a MIG profile).
        gpu_model: GPU catalog key.
        profile: MIG profile name (None for a whole GPU).
        memory_gib: memory of the device (GiB).
        headroom_gib: memory left after the estimate (GiB).
        usd_per_gpu_hour: cheapest catalog On-Demand price per GPU of the model (None if not on EC2).
    """

    kind: str
    gpu_model: str
    profile: str | None
    memory_gib: float
    headroom_gib: float
    usd_per_gpu_hour: float | None

    @property
    def label(self) -> str:
        """``H100-80GB`` or ``H100-80GB 1g.20gb``."""
        return self.gpu_model if self.profile is None else f"{self.gpu_model} {self.profile}"


def _cheapest_per_gpu(catalog: Catalog) -> dict[str, float]:
    out: dict[str, float] = {}
    for it in catalog.instance_types:
        per = it.usd_per_gpu_hour
        if per is not None:
            out[it.gpu_model] = min(out.get(it.gpu_model, per), per)
    return out


def fitting_gpus(estimate: VramEstimate, catalog: Catalog | None = None, reserve_gib: float = CUDA_CONTEXT_RESERVE_GIB) -> list[Fit]:
    """Whole GPUs of the catalog that hold ``estimate`` plus ``reserve_gib`` (CUDA context), smallest memory first, then cheapest.

    GPU memory: the catalog's ``memoryMiB`` / 1024 (EC2's figure), else the driver's.
    """
    catalog = catalog or load_catalog()
    prices = _cheapest_per_gpu(catalog)
    need = estimate.total_gib + reserve_gib
    fits = [Fit("gpu", g.name, None, g.memory_gib, g.memory_gib - need, prices.get(g.name)) for g in catalog.gpu_models if g.memory_gib >= need]
    return sorted(fits, key=lambda f: (f.memory_gib, f.usd_per_gpu_hour if f.usd_per_gpu_hour is not None else math.inf, f.gpu_model))


def fitting_mig_profiles(estimate: VramEstimate, gpu_model: str | None = None, reserve_gib: float = CUDA_CONTEXT_RESERVE_GIB) -> list[Fit]:
    """MIG profiles (without media extensions) that hold ``estimate`` + ``reserve_gib``, smallest memory first, then fewest compute slices.

    Profile memory: the MIG catalog's ``memoryGiB`` (``nvidia-smi mig -lgip``), else the
    nominal ``memoryGB`` of the name converted to GiB. ``gpu_model`` limits to one model.
    """
    need = estimate.total_gib + reserve_gib
    out = []
    for gpu in load_mig_models():
        if gpu_model is not None and gpu.name != gpu_model:
            continue
        for p in gpu.profiles:
            if p.media_extensions:
                continue
            mem = p.memory_gib if p.memory_gib is not None else p.memory_gb * _GB / _GIB
            if mem >= need:
                out.append((mem, p.compute_slices, Fit("mig", gpu.name, p.name, mem, mem - need, None)))
    return [f for _, _, f in sorted(out, key=lambda t: (t[0], t[1], t[2].gpu_model))]


def min_gpus(estimate_for: Callable[[int], VramEstimate], memory_gib: float, reserve_gib: float = CUDA_CONTEXT_RESERVE_GIB, limit: int = 1024) -> int | None:
    """Fewest GPUs of ``memory_gib`` each that hold the model when sharded over them.

    Args:
        estimate_for: shards -> the per-GPU estimate (e.g. ``lambda n: estimate_vram(..., shards=n)``).
        memory_gib: memory per GPU (GiB).
        reserve_gib: per-GPU reserve (GiB; default :data:`CUDA_CONTEXT_RESERVE_GIB`).
        limit: largest shard count tried.

    Returns:
        The count, or None if even ``limit`` GPUs do not hold it.
    """
    for n in range(1, limit + 1):
        if estimate_for(n).total_gib + reserve_gib <= memory_gib:
            return n
    return None
