"""The hybridgpu policy pack: the Pulumi CLI runs this file (``python -u -m pulumi.policy ENGINE PACK_DIR``); docs/policies.md."""

from hybridgpu.shell.policy.pack import serve

if __name__ == "__main__":  # run as the pack, not when imported (tests/test_layers.py imports every module)
    serve()
