"""GPU economics tests (a package so that test_planner.py does not clash with tests/mig/test_planner.py)."""
