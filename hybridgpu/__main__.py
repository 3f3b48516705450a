"""``python -m hybridgpu``: the command line (see :mod:`hybridgpu.cli`)."""

from hybridgpu.cli import app

if __name__ == "__main__":  # importing the module (tests/test_layers.py) does not run the CLI
    app()
