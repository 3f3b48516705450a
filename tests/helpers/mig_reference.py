"""Reference ILP for MIG planning, solved with HiGHS (``highspy``): the yardstick of the planner.

A test helper, not part of the package (it moved here from ``hybridgpu/mig/reference.py``): the
tests check that :func:`hybridgpu.mig.planner.plan_mig` uses exactly as many MIG GPUs as this
exact integer program (``tests/mig/test_planner.py``), and ``benchmarks/mig_bench.py`` times both
(it puts the project root on ``sys.path`` and imports ``tests.helpers.mig_reference``).

Model: one integer variable per valid layout of the GPU model (``x_L >= 0`` GPUs with layout
``L``), minimize ``sum x_L`` subject to ``sum_L x_L * L[p] >= demand[p]`` for every demanded
profile ``p``. HiGHS 1.x API (``highspy.Highs``, ``HighsLp``), read 2026-11-22.
"""

from __future__ import annotations

from collections.abc import Mapping

from hybridgpu.highs import quiet_highs
from hybridgpu.mig.placement import valid_layouts
from hybridgpu.mig.profiles import mig_gpu


def ilp_min_mig_gpus(model: str, demand: Mapping[str, int]) -> int:
    """Fewest GPUs of ``model`` whose MIG layouts cover ``demand`` (profile -> instances), by ILP.

    Raises:
        ImportError: ``highspy`` (and numpy) are not installed (``pip install -e '.[test]'``).
        RuntimeError: HiGHS did not reach a proven optimum.
    """
    import highspy
    import numpy as np

    names = [n for n in mig_gpu(model).profile_names if demand.get(n, 0) > 0]
    if not names:
        return 0
    columns = [layout for layout in valid_layouts(model) if any(layout[n] for n in names)]
    h = quiet_highs()  # no banner on stdout either (issue 14)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-6)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(columns), len(names)
    lp.col_cost_ = np.ones(len(columns))
    lp.col_lower_ = np.zeros(len(columns))
    lp.col_upper_ = np.full(len(columns), highspy.kHighsInf)
    lp.row_lower_ = np.array([float(demand[n]) for n in names])
    lp.row_upper_ = np.full(len(names), highspy.kHighsInf)
    starts, index, value = [], [], []
    for layout in columns:
        starts.append(len(index))
        for row, name in enumerate(names):
            if layout[name]:
                index.append(row)
                value.append(float(layout[name]))
    starts.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * len(columns)
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS did not prove an optimum: {h.modelStatusToString(h.getModelStatus())}")
    objective = h.getInfo().objective_function_value
    if abs(objective - round(objective)) > 1e-6:
        raise RuntimeError(f"HiGHS returned a fractional optimum {objective}")
    return round(objective)
