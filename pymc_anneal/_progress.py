"""A rich progress bar updated between compiled chunks (never inside the loop)."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def annealing_progress(enabled: bool, name: str, num_steps: int):
    """Yield ``update(phase, steps_done, total=None)``; a no-op when ``enabled`` is False.
    A phase's bar counts to ``total`` if given (again when a run is repeated with more
    temperatures), else to ``num_steps``."""
    if not enabled:
        yield lambda phase, done, total=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("temperatures"), TimeElapsedColumn(),
    ) as progress:
        tasks = {}

        def update(phase, done, total=None):
            if phase not in tasks:
                tasks[phase] = progress.add_task(f"{phase} {name}", total=total or num_steps)
            elif total is not None:
                progress.reset(tasks[phase], total=total)
            progress.update(tasks[phase], completed=done)

        yield update
