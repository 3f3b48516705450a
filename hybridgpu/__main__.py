"""``python -m hybridgpu``: the command line (see :mod:`hybridgpu.cli`)."""

from hybridgpu.cli import app

app()
