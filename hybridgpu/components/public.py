"""The public components: those the component package (``components/``) hosts for other languages.

Each one can be used on its own from TypeScript, Go, C#, Python or YAML: typed ``args`` (a
TypedDict the schema is inferred from), live objects as resource references or plain values,
ordering through ``dependsOn``. Left out (docs/components.md, "What the package hosts"):
:class:`~hybridgpu.components.onprem.OnPremHost`, a per-host record the OnPremCluster makes (no
input a user would give), and :class:`~hybridgpu.components.kueue.TopLevelCustomResource`, a
CustomResource, not a component.
"""

import pulumi

from hybridgpu.components.efa import Efa, EfaQueues
from hybridgpu.components.eks import EksCluster
from hybridgpu.components.karpenter import Karpenter
from hybridgpu.components.kueue import KueueCluster
from hybridgpu.components.network import Network
from hybridgpu.components.network_operator import NetworkOperator
from hybridgpu.components.nodepools import GpuNodePools
from hybridgpu.components.nvidia import NvidiaLayer
from hybridgpu.components.onprem import OnPremCluster
from hybridgpu.components.opencost import OpenCost
from hybridgpu.components.storage import FsxLustre, TrainingData

#: The hosted components, in the order the program builds them (names are unique: the schema's tokens).
PUBLIC_COMPONENTS: tuple[type[pulumi.ComponentResource], ...] = (
    Network,
    EksCluster,
    Karpenter,
    GpuNodePools,
    Efa,
    NvidiaLayer,
    OpenCost,
    FsxLustre,
    TrainingData,
    KueueCluster,
    EfaQueues,
    OnPremCluster,
    NetworkOperator,
)
