"""The examples stay true: they run end to end (fast mode) and say what the README says."""

import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow
def test_quickstart_prefers_the_quadratic_model(capsys):
    spec = importlib.util.spec_from_file_location("quickstart", EXAMPLES / "quickstart.py")
    quickstart = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quickstart)
    results = quickstart.main(fast=True)
    out = capsys.readouterr().out
    assert "log Bayes factor quadratic vs linear" in out
    diff = results["quadratic"].log_evidence - results["linear"].log_evidence
    se = np.hypot(results["quadratic"].standard_error, results["linear"].standard_error)
    # the data were simulated with curvature -0.22: the quadratic model must win clearly
    assert diff > 3 * se and diff > 1.0
