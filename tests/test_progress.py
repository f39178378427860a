"""The progress bar counts to the number of temperatures a run really has."""

from __future__ import annotations

import rich.progress

from pymc_anneal._progress import annealing_progress


def test_a_repeated_run_counts_to_its_new_total(monkeypatch):
    """num_steps="auto" can repeat the annealing run with more temperatures: its bar must
    show the new total (a run of 1500 once showed "1500/817")."""
    seen = {}
    original = rich.progress.Progress.update

    def update(self, task_id, **kwargs):
        original(self, task_id, **kwargs)
        task = self._tasks[task_id]
        seen[task.description] = (task.completed, task.total)

    monkeypatch.setattr(rich.progress.Progress, "update", update)
    with annealing_progress(True, "model", 256) as progress:
        progress("tuning", 256)
        progress("annealing", 0, 817)
        progress("annealing", 817)
        assert seen["annealing model"] == (817, 817)
        progress("annealing", 0, 1500)
        progress("annealing", 1500)
    assert seen["annealing model"] == (1500, 1500)
    assert seen["tuning model"] == (256, 256)
