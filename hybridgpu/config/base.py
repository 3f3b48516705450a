"""Base of every stack-config model (re-exported from :mod:`hybridgpu.modelbase`; the DNS-1123 name from :mod:`hybridgpu.k8s`)."""

from hybridgpu.k8s import DNS1123_LABEL_PATTERN as DNS1123
from hybridgpu.k8s import Dns1123Name
from hybridgpu.modelbase import Duration, Model

__all__ = ["DNS1123", "Dns1123Name", "Duration", "Model"]
