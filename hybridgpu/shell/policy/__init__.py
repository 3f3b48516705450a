"""The policy pack's Pulumi side: the ``pulumi_policy`` pack (:mod:`.pack`), the gRPC analyzer
driver (:mod:`.analyzer`) and the offline ``hybridgpu check`` (:mod:`.check`).

The validators themselves are pure and live in :mod:`hybridgpu.policy`.
"""
