"""The annealing driver, behind the entry points :func:`pymc_anneal.sample_ais` (PyMC models)
and :func:`pymc_anneal.ais` (energy models and paths).

One job per module, in the order data flows:

- :mod:`~pymc_anneal.driver.scan`: the annealing loop as one compiled PyTensor ``scan``
  (built from a path and a kernel's declarations, and how to call it);
- :mod:`~pymc_anneal.driver.cache`: compiled loops, bounded, freed with their model;
- :mod:`~pymc_anneal.driver.tuning`: the pilot that tunes per-step kernel parameters;
- :mod:`~pymc_anneal.driver.options`: :class:`RunOptions`, how a run anneals (kernel,
  backend, tuning, progress), checked once by :func:`run_options`;
- :mod:`~pymc_anneal.driver.run`: :func:`run_annealing`, forward or backward, chunk by chunk.
- :mod:`~pymc_anneal.driver.importance`: importance sampling from a path's base (AIS with
  one step and no transition, no loop), and the check that decides whether it is enough;
- :mod:`~pymc_anneal.driver.checkpoint`: a run's state on disk between chunks, to resume;
- :mod:`~pymc_anneal.driver.memory`: the memory a run needs, checked before it starts.
"""

from pymc_anneal.driver.options import RunOptions, run_options, run_options_from
from pymc_anneal.driver.run import DIRECTIONS, AnnealingRun, check_run, run_annealing
from pymc_anneal.driver.tuning import TuningOptions, equal_length_schedule

__all__ = ["DIRECTIONS", "AnnealingRun", "RunOptions", "TuningOptions", "check_run",
           "equal_length_schedule", "run_annealing", "run_options", "run_options_from"]
