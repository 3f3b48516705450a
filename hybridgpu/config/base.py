"""Base of every stack-config model (re-exported from :mod:`hybridgpu.modelbase`)."""

from hybridgpu.modelbase import DNS1123, Dns1123Name, Duration, Model

__all__ = ["DNS1123", "Dns1123Name", "Duration", "Model"]
