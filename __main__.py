"""Pulumi entry point (``runtime: python``): see :mod:`hybridgpu.components.program`.

The Python language host runs this file once per ``pulumi preview``/``up``: the collector is set
up for that one run (:func:`hybridgpu.collector.tune_for_batch_run`) before the SDK is imported.
"""

from hybridgpu.collector import tune_for_batch_run

tune_for_batch_run()

from hybridgpu.components.program import main  # noqa: E402 - after the collector is set up

main()
