"""``python -m hybridgpu``: the command line (see :mod:`hybridgpu.cli`), as the console script runs it (:func:`hybridgpu.cli.entry.main`)."""

from hybridgpu.cli.entry import main

if __name__ == "__main__":  # importing the module (tests/test_layers.py) does not run the CLI
    main()
