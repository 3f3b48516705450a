"""GPU economics: cost per productive GPU-hour, break-even utilization, hybrid capacity plans.

* :mod:`hybridgpu.economics.prices` - price data (cloud purchase options, on-prem cost
  defaults, egress) as YAML with source and date; On-Demand prices come from the GPU catalog.
* :mod:`hybridgpu.economics.costmodel` - the formulas (docs/economics.md): on-prem cost per
  GPU and per productive GPU-hour, cloud rates by purchase option with spot waste,
  break-even utilization, egress, cumulative cost.
* :mod:`hybridgpu.economics.demand` - hourly GPU demand profiles (CSV loader, generator).
* :mod:`hybridgpu.economics.planner` - the cheapest on-prem / reserved / spot / on-demand mix
  for a demand profile, solved exactly with HiGHS, against simple alternatives.
* :mod:`hybridgpu.economics.vram` - VRAM estimator and smallest GPU / MIG profile that fits.
* :mod:`hybridgpu.economics.failure` - the cost of failure: Young's and Daly's checkpoint
  intervals, goodput, GPU-hours and USD lost per month (default rate from Meta's Llama 3 report,
  ``data/failure_rates.yaml``); the cost report priced with lost work.
* :mod:`hybridgpu.economics.report` - per-stack cost report; :mod:`hybridgpu.economics.plots`
  its PNG plots.

Nothing here imports Pulumi.
"""
