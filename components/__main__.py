"""The hybridgpu component provider: hosts the public components for programs in any Pulumi language.

``pulumi package add ./components`` runs this file; Pulumi's component provider infers the schema
(package ``hybridgpu``, tokens ``hybridgpu:index:<Class>``) from the components' typed ``args`` and
annotated outputs, and constructs them on request (docs/components.md). The list of components
is :data:`hybridgpu.components.public.PUBLIC_COMPONENTS`.
"""

from pulumi.provider.experimental import component_provider_host

import hybridgpu
from hybridgpu.components.public import PUBLIC_COMPONENTS
from hybridgpu.components.base import PACKAGE

if __name__ == "__main__":
    component_provider_host(components=list(PUBLIC_COMPONENTS), name=PACKAGE, version=hybridgpu.__version__)
