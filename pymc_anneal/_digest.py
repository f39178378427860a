"""Digests of what a result or a checkpoint was computed from: the model, its data and the
settings (:func:`fingerprint`), never object ids, so that the same call in another process
or on another machine has the same digest."""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["attribute_content", "fingerprint", "graph_content"]


def attribute_content(obj) -> list:
    """An object's class and its attributes that are arrays, numbers, strings or tuples
    (weights, biases, sizes), by name: the content of a model defined by its arrays."""
    parts: list = [type(obj).__qualname__]
    for name, value in sorted(getattr(obj, "__dict__", {}).items()):
        if isinstance(value, np.ndarray | np.generic | int | float | str | bool | tuple):
            parts += [name, value]
    return parts


def fingerprint(parts) -> str:
    """A digest of what a result was computed from (``model_fingerprint``): ``parts`` are
    arrays (their dtype, shape and bytes count) and anything else (its ``repr``). Two
    results may be merged (:func:`pymc_anneal.merge`) only when their digests agree."""
    digest = hashlib.blake2b(digest_size=16)
    _update(digest, list(parts))
    return digest.hexdigest()


def _update(digest, part) -> None:
    """Arrays by dtype, shape and bytes (object arrays by their items); dicts by sorted key; lists and tuples item by item;
    functions and classes by their module and qualified name (never their address);
    anything else by its ``repr``."""
    if isinstance(part, np.ndarray | np.generic):
        value = np.ascontiguousarray(part)
        digest.update(f"array{value.dtype.str}{value.shape}".encode())
        if value.dtype.hasobject:  # the bytes of an object array are addresses
            _update(digest, value.tolist())
        else:
            digest.update(value.tobytes())
    elif isinstance(part, dict):
        digest.update(b"dict")
        for key in sorted(part, key=repr):
            _update(digest, key)
            _update(digest, part[key])
    elif isinstance(part, list | tuple):
        digest.update(f"{type(part).__name__}{len(part)}".encode())
        for item in part:
            _update(digest, item)
    elif callable(part) and hasattr(part, "__qualname__"):
        digest.update(f"callable {getattr(part, '__module__', '')}.{part.__qualname__}".encode())
    else:
        digest.update(repr(part).encode())
    digest.update(b"\x00")


def graph_content(graphs, inputs=()) -> list:
    """What PyTensor ``graphs`` compute, for :func:`fingerprint`: the operations between
    ``inputs`` and ``graphs`` in order, and the values of every constant and shared variable
    they read (random generators excluded). Object ids are left out, so the same graph built
    again, in another process, has the same content."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors, io_toposort
    from pytensor.tensor.random.type import RandomType

    graphs = list(graphs)
    parts: list = [str(node.op) for node in io_toposort(list(inputs), graphs)]
    for var in ancestors(graphs):
        if isinstance(var, Constant):
            parts.append(np.asarray(var.data))
        elif isinstance(var, SharedVariable) and not isinstance(var.type, RandomType):
            parts.append(np.asarray(var.get_value(borrow=True)))
    return parts
