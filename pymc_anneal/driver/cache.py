"""The compile cache: compiled annealing loops, kept while their path's owner lives.

Compiling a loop costs seconds to a minute, so a loop is reused by every run on the same
path structure, kernel structure and backend. Entries are keyed by the path's
:meth:`compile_key`, ``(owner, key)``:

- an owner (a PyMC model's path, or the path a fitted Gaussian base was built on): its
  entries are dropped when the owner is garbage-collected, so a process that builds many
  models does not keep their loops;
- no owner (``None``: every value of the path is a loop input, as for RBMs): the entry is
  shared by every path of that structure.

In both cases at most :data:`MAX_ENTRIES` loops are kept; the least recently used go first.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable

from pymc_anneal.backends import static_loop_length
from pymc_anneal.driver.scan import CompiledLoop, build_loop
from pymc_anneal.validation import check_backend

__all__ = ["LOOPS", "MAX_ENTRIES", "CompileCache", "compiled_loop"]

MAX_ENTRIES = 32
"""Compiled loops kept at most (each holds a few MB of compiled code)."""


class CompileCache:
    """A bounded least-recently-used map whose entries die with their owner."""

    def __init__(self, max_entries: int = MAX_ENTRIES):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, CompiledLoop] = OrderedDict()
        self._owners: dict[int, weakref.finalize] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def owned_by(self, owner) -> list[tuple]:
        """The keys of ``owner``'s entries (for tests and introspection)."""
        return [k[1:] for k in self._entries if k[0] == id(owner)]

    def get(self, owner, key: tuple, build: Callable[[], CompiledLoop]) -> CompiledLoop:
        """The entry for ``(owner, key)``, built by ``build()`` on a miss."""
        full_key = (None if owner is None else id(owner), *key)
        loop = self._entries.get(full_key)
        if loop is not None:
            self._entries.move_to_end(full_key)
            return loop
        loop = build()
        if owner is not None and id(owner) not in self._owners:
            self._owners[id(owner)] = weakref.finalize(owner, self._drop_owner, id(owner))
        self._entries[full_key] = loop
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return loop

    def _drop_owner(self, owner_id: int) -> None:
        self._owners.pop(owner_id, None)
        for key in [k for k in self._entries if k[0] == owner_id]:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()


LOOPS = CompileCache()
"""The process-wide cache of compiled annealing loops."""


def compiled_loop(path, kernel, backend: str) -> CompiledLoop:
    """The compiled loop of ``kernel`` on ``path`` for ``backend``, from :data:`LOOPS`.

    Where the backend's loops take the shapes of the path's parameters as static (JAX's),
    they are part of the key."""
    backend = check_backend(backend)
    owner, key = path.compile_key()
    key = (*key, kernel.structure, backend)
    if static_loop_length(backend) is not None:
        key += (tuple((k, v.shape) for k, v in sorted(path.parameters.items())),)
    return LOOPS.get(owner, key, lambda: build_loop(path, kernel, backend))
