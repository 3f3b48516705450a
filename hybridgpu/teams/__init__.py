"""Teams as data: the typed teams file (kind ``Teams``), its single-file checks and the Kueue objects for many teams (pure).

* :mod:`hybridgpu.teams.models`: the file model, :class:`~hybridgpu.teams.models.TeamsError` and
  :func:`~hybridgpu.teams.models.read_teams_file`;

The package sits low in the layers (beside ``hybridgpu.config``), so the economics (showback:
team -> cost labels) and the burst layer may both read it. The Kueue objects for many teams
(ClusterQueues in a cohort, WorkloadPriorityClasses, namespaces, LocalQueues, RBAC) are derived
next to the other Kueue renderers, in :mod:`hybridgpu.burst.teams`.

Checks that read another file (the inventory, the burst plan, the cloud stack) live in
:mod:`hybridgpu.stack.teams`.
"""
