r"""Independent AIS runs on a Dask cluster, pooled exactly (the extra `[distributed]`).

AIS particles are independent until the final average, so ``k`` runs of the same model,
data and schedule from different seeds are the particles of one run ``k`` times larger:
every weight :math:`w_i` is an unbiased estimate of :math:`Z`, and the pooled estimate
:math:`\log \frac{1}{N} \sum_i w_i` over all :math:`N` particles is what
:func:`pymc_anneal.merge` computes from the runs' results. Here the runs are tasks of a
`Dask distributed <https://distributed.dask.org>`_ cluster:

- :func:`sample_ais` and :func:`ais` submit ``runs`` seeded runs of one model and merge them;
- :func:`batched_ais` and :func:`reverse_ais` split the test points into ``batches``, run
  each batch as a task and join the per-point results along ``point`` (each point's
  estimate is its own; the test-set mean is pooled again over all points);
- :func:`evidences` runs several PyMC models (the models of a
  :func:`pymc_anneal.compare`) side by side, ``runs`` tasks each.

**Seeds.** The seeds of the tasks are drawn from one ``numpy.random.SeedSequence(random_seed)``
(:func:`task_seeds`), so the pooled result depends on ``random_seed`` and the number of
tasks only, never on the cluster: the same call on one worker or a hundred, or the same
runs made one by one in this process with :func:`pymc_anneal.merge`, gives the same values.
Each run's seed is in the merged result's ``random_seed`` attribute.

**What travels.** A model is pickled once per call (cloudpickle: a ``pm.Model`` with its
data, an energy model with its arrays) and scattered to every worker; each worker
unpickles it once and keeps it (up to eight models per worker), so its annealing loop is compiled
once per worker process, not once per run. A task returns its run's DataTree and the
:class:`~pymc_anneal.AnnealingWarning` s it raised, which are raised again here (a worker's
warnings would otherwise only reach its log).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import pickle
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import xarray as xr

from pymc_anneal.estimators import pooled_mean
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning, warn
from pymc_anneal.merge import _plain, merge
from pymc_anneal.validation import check_model

__all__ = ["ais", "batched_ais", "evidences", "reverse_ais", "sample_ais", "task_seeds"]

INSTALL = 'pip install "pymc-anneal[distributed]"'
_WORKER_MODELS: OrderedDict = OrderedDict()
"""On a worker: the models it has unpickled, by the digest of their pickle (at most
:data:`_MAX_WORKER_MODELS`, least recently used dropped), so that the runs of one model on
one worker share its compiled loop."""
_MAX_WORKER_MODELS = 8
_PICKLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Here: each PyMC model's first pickle, while its content is unchanged (:func:`_pickled`)."""
REFUSED = {"random_seed": "it is given per task from this call's random_seed",
           "checkpoint": "a task that fails is run again from its seed by the scheduler",
           "progressbar": "workers draw none: watch the tasks on the Dask dashboard"}
"""Arguments of the entry points that the distributed calls take no value for, and why."""


def task_seeds(random_seed, num_tasks: int) -> list[int]:
    """The seeds of ``num_tasks`` tasks, spawned from ``SeedSequence(random_seed)``.

    Parameters
    ----------
    random_seed : None, int or sequence of int
        The call's seed (``None``: fresh entropy, as NumPy draws it).
    num_tasks : int

    Returns
    -------
    list of int
        One non-negative 63-bit seed per task: run ``i`` is the entry point called with
        ``random_seed=seeds[i]``.
    """
    try:
        root = np.random.SeedSequence(random_seed)
    except (TypeError, ValueError) as err:
        raise AnnealingError(
            f"random_seed must be None or a non-negative integer (or a sequence of them), got "
            f"{random_seed!r}: the tasks' seeds are spawned from it.") from err
    if isinstance(random_seed, bool | np.bool_):
        raise AnnealingError(f"random_seed must be None or a non-negative integer, got "
                             f"{random_seed!r} (a bool is not a seed).")
    return [int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))
            for child in root.spawn(_count("num_tasks", num_tasks))]


def sample_ais(*, runs: int, model=None, client=None, random_seed=None,
               **kwargs) -> xr.DataTree:
    """:func:`pymc_anneal.sample_ais` as ``runs`` independent tasks, merged.

    Parameters
    ----------
    runs : int
        Independent runs (tasks), each of ``chains`` chains of ``draws`` particles; the
        result has ``runs * chains`` chains.
    model : pm.Model, optional
        Defaults to the model on the context stack.
    client : distributed.Client, optional
        Defaults to the current client (``distributed.Client()`` starts a local cluster of
        processes; ``distributed.Client("tcp://scheduler:8786")`` joins a cluster).
    random_seed : None, int or sequence of int
        The runs' seeds are spawned from it (:func:`task_seeds`).
    **kwargs
        Any other argument of :func:`pymc_anneal.sample_ais`. ``num_steps`` must be an
        integer (or ``schedule`` an array): with ``"auto"`` each run would choose its own
        temperatures, and runs through different temperatures cannot be pooled. Run
        ``pa.sample_ais(num_steps="auto")`` once and take its ``num_steps`` and ``base``
        attributes (at the default ``base="auto"`` a long path runs from a fitted Gaussian
        mixture: its K is far too few for the prior, whose own K is ``prior_num_steps``, or
        ``prior_num_steps_predicted`` where its pilot did not run),
        or pass its ``annealing_stats["beta"]`` of one chain as ``schedule``.

    Returns
    -------
    xarray.DataTree
        :func:`pymc_anneal.merge` of the runs, in the order of their seeds: value for value
        what merging the same seeded runs made in this process gives.

    Raises
    ------
    AnnealingError
        Without the extra (``pip install "pymc-anneal[distributed]"``), without a client,
        for bad ``runs``, ``random_seed`` or arguments, and whatever a run raises.

    Examples
    --------
    >>> from distributed import Client                                  # doctest: +SKIP
    >>> client = Client(n_workers=4, threads_per_worker=1)              # doctest: +SKIP
    >>> with model:                                                     # doctest: +SKIP
    ...     idata = pa.distributed.sample_ais(runs=8, num_steps=2000, random_seed=1)
    """
    distributed = _import_distributed()
    model = check_model(model)
    kwargs = _task_kwargs("sample_ais", kwargs)
    seeds = task_seeds(random_seed, _count("runs", runs))
    client = _client(distributed, client)
    return _merged(client, [("sample_ais", model, kwargs, seeds)])[0]


def ais(model, *, runs: int, client=None, random_seed=None, **kwargs) -> xr.DataTree:
    """:func:`pymc_anneal.ais` as ``runs`` independent tasks, merged.

    Parameters
    ----------
    model : EnergyModel or Path
        As for :func:`pymc_anneal.ais`.
    runs, client, random_seed
        As for :func:`sample_ais`.
    **kwargs
        Any other argument of :func:`pymc_anneal.ais`; ``num_steps`` an integer (run
        ``pa.ais(model)`` once, its default ``num_steps="auto"``, and take its ``num_steps``
        attribute) or ``schedule`` an array.

    Returns
    -------
    xarray.DataTree
        :func:`pymc_anneal.merge` of the runs, in the order of their seeds.
    """
    distributed = _import_distributed()
    kwargs = _task_kwargs("ais", kwargs)
    seeds = task_seeds(random_seed, _count("runs", runs))
    client = _client(distributed, client)
    return _merged(client, [("ais", model, kwargs, seeds)])[0]


def evidences(models: Mapping, *, runs: int = 1, client=None, random_seed=None,
              **kwargs) -> dict[str, xr.DataTree]:
    """The evidences of several PyMC models, ``runs`` tasks each, all submitted at once.

    Parameters
    ----------
    models : dict of {str : pm.Model}
        The models to compare, by name.
    runs : int, default 1
        Tasks per model, merged per model.
    client : distributed.Client, optional
        As for :func:`sample_ais`.
    random_seed : None, int or sequence of int
        Model ``i`` (in the dict's order) gets the seed ``task_seeds(random_seed,
        len(models))[i]``, and its runs are those of :func:`sample_ais` with that seed.
    **kwargs
        Arguments of :func:`pymc_anneal.sample_ais` for every model (``num_steps`` an
        integer).

    Returns
    -------
    dict of {str : xarray.DataTree}
        Each model's merged result, ready for :func:`pymc_anneal.compare`.

    Examples
    --------
    >>> results = pa.distributed.evidences({"linear": m1, "quadratic": m2}, runs=4,
    ...                                    num_steps=1000, random_seed=0)  # doctest: +SKIP
    >>> pa.compare(results)                                                # doctest: +SKIP
    """
    import pymc as pm

    distributed = _import_distributed()
    if not isinstance(models, Mapping) or not models:
        raise AnnealingError(f"evidences needs a dict from model name to pm.Model, got "
                             f"{type(models).__name__} {models!r:.80}.")
    bad = {name: type(m).__name__ for name, m in models.items() if not isinstance(m, pm.Model)}
    if bad:
        raise AnnealingError(f"evidences runs PyMC models; {bad} are not pm.Model. For energy "
                             "models call pymc_anneal.distributed.ais per model.")
    kwargs = _task_kwargs("sample_ais", kwargs)
    runs = _count("runs", runs)
    jobs = [("sample_ais", model, kwargs, task_seeds(seed, runs))
            for model, seed in zip(models.values(), task_seeds(random_seed, len(models)),
                                   strict=True)]
    client = _client(distributed, client)
    return dict(zip(models, _merged(client, jobs), strict=True))


def batched_ais(model, data, *, batches: int, client=None, random_seed=None,
                **kwargs) -> xr.DataTree:
    """:func:`pymc_anneal.batched_ais` over ``batches`` batches of test points, joined.

    Parameters
    ----------
    model : GenerativeModel
        As for :func:`pymc_anneal.batched_ais`.
    data : array (N, num_dims)
        The test points, split into ``batches`` contiguous batches of nearly equal size
        (:func:`numpy.array_split`); batch ``i`` runs with ``task_seeds(random_seed,
        batches)[i]``.
    batches : int
        Tasks (at most N).
    client : distributed.Client, optional
        As for :func:`sample_ais`.
    random_seed : None, int or sequence of int
    **kwargs
        Any other argument of :func:`pymc_anneal.batched_ais`.

    Returns
    -------
    xarray.DataTree
        The layout of :func:`pymc_anneal.batched_ais` on all points: the per-point values
        of the batches one after the other along ``point`` (renumbered from 0), the
        test-set mean pooled again over all points. Each batch tunes its own step sizes:
        ``annealing_stats`` values that differ between batches get a ``batch`` dimension,
        and ``sample_stats["batch"]`` gives each point's batch. ``model_fingerprint`` and
        ``num_test_points`` are those of all the points, so two such results of the same
        points and batches can be merged (:func:`pymc_anneal.merge`).
    """
    from pymc_anneal.partition import model_fingerprint

    distributed = _import_distributed()
    if not callable(getattr(model, "evidence_path", None)):
        raise AnnealingError(
            "batched_ais needs a generative model with per-point evidences (a "
            "pymc_anneal.energy.LinearGenerative or BilinearGenerative), got "
            f"{type(model).__name__}.")
    kwargs = _task_kwargs("batched_ais", kwargs)
    path = model.evidence_path(data)  # checks the data
    test = np.asarray(path.parameters["data"])
    parts = _split("batched_ais", test, batches)
    fingerprint = model_fingerprint(model, path)
    joined = _joined(_client(distributed, client), "batched_ais", model, parts, kwargs,
                     task_seeds(random_seed, len(parts)))
    joined.attrs["model_fingerprint"] = fingerprint
    return joined


def reverse_ais(model, data, *, batches: int, client=None, random_seed=None,
                **kwargs) -> xr.DataTree:
    """:func:`pymc_anneal.reverse_ais` (RAISE) over ``batches`` batches of test points, joined.

    Parameters
    ----------
    model : EnergyModel
        As for :func:`pymc_anneal.reverse_ais`.
    data : array (N, num_dims)
        The test points, split as in :func:`batched_ais`.
    batches : int
        Tasks (at most N).
    client : distributed.Client, optional
    random_seed : None, int or sequence of int
    **kwargs
        Any other argument of :func:`pymc_anneal.reverse_ais` but ``subsample`` (a few
        points: run it in one call) and ``log_z`` (its bracket is of the whole test set:
        set ``model.log_likelihood(data, log_z).mean()`` against the result's
        ``mean_log_likelihood``, or call :func:`pymc_anneal.sandwich`).

    Returns
    -------
    xarray.DataTree
        The layout of :func:`pymc_anneal.reverse_ais`, joined along ``point`` as in
        :func:`batched_ais`.
    """
    from pymc_anneal.energy import EnergyModel

    distributed = _import_distributed()
    if not isinstance(model, EnergyModel):
        raise AnnealingError(f"reverse_ais needs an energy model from pymc_anneal.energy, got "
                             f"{type(model).__name__}.")
    for name in ("subsample", "log_z"):
        if kwargs.get(name) is not None:
            raise AnnealingError(
                f"pymc_anneal.distributed.reverse_ais takes no {name} (got {kwargs[name]!r}): "
                "both are about the whole test set, and each task sees a batch. Run "
                "pymc_anneal.reverse_ais with subsample= in one call, and set "
                "model.log_likelihood(data, log_z).mean() against the mean_log_likelihood "
                "of this result.")
    kwargs = _task_kwargs("reverse_ais", kwargs)
    parts = _split("reverse_ais", model.check_data(data), batches)
    return _joined(_client(distributed, client), "reverse_ais", model, parts, kwargs,
                   task_seeds(random_seed, len(parts)))


# ----------------------------------------------------------------------------- the client side


def _import_distributed():
    try:
        import distributed
    except ImportError as err:
        raise AnnealingError(
            "pymc_anneal.distributed runs on Dask distributed, which is not installed: "
            f'{INSTALL} (or pip install "distributed>=2024.8").') from err
    return distributed


def _client(distributed, client):
    if client is None:
        try:
            return distributed.default_client()
        except ValueError as err:
            raise AnnealingError(
                "no Dask client: pass client=, or start one first, e.g. "
                "distributed.Client(n_workers=4, threads_per_worker=1) for a local cluster "
                "of processes, or distributed.Client('tcp://scheduler:8786').") from err
    if not isinstance(client, distributed.Client):
        raise AnnealingError(f"client must be a distributed.Client, got "
                             f"{type(client).__name__}.")
    return client


def _count(name: str, value) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer) \
            or value < 1:
        raise AnnealingError(f"{name} must be an integer >= 1 (the number of tasks), got "
                             f"{value!r}.")
    return int(value)


def _task_kwargs(function: str, kwargs: dict) -> dict:
    """``kwargs`` checked against the entry point's signature, with no progress bar."""
    import pymc_anneal.batched
    import pymc_anneal.partition
    import pymc_anneal.pymc.sampling
    import pymc_anneal.reverse

    entry = {"sample_ais": pymc_anneal.pymc.sampling.sample_ais,
             "ais": pymc_anneal.partition.ais,
             "batched_ais": pymc_anneal.batched.batched_ais,
             "reverse_ais": pymc_anneal.reverse.reverse_ais}[function]
    parameters = inspect.signature(entry).parameters
    for name in kwargs:
        if name in REFUSED or name in ("model", "data"):
            why = REFUSED.get(name, "it is this function's own argument")
            raise AnnealingError(f"pymc_anneal.distributed.{function} takes no {name} in "
                                 f"its keyword arguments ({why}).")
        if name not in parameters:
            raise AnnealingError(
                f"pymc_anneal.distributed.{function} got an unknown argument {name!r}: the "
                f"keyword arguments go to pymc_anneal.{function}, whose arguments are "
                f"{sorted(set(parameters) - set(REFUSED))}.")
    steps = kwargs.get("num_steps", parameters["num_steps"].default)
    schedule = kwargs.get("schedule", parameters["schedule"].default)
    if isinstance(schedule, str) and schedule == "adaptive":
        raise AnnealingError(
            f'pymc_anneal.distributed.{function} cannot run schedule="adaptive": each task '
            "would place its own temperatures, and runs through different temperatures "
            "cannot be merged. Run it once locally and pass its annealing_stats['beta'] "
            "(one chain) as schedule.")
    if isinstance(schedule, str) and (isinstance(steps, bool) or
                                      not isinstance(steps, int | np.integer)):
        raise AnnealingError(
            f"pymc_anneal.distributed.{function} needs num_steps as an integer (or schedule "
            f"as an array), got num_steps={steps!r}: with \"auto\" each task would choose "
            "its own temperatures, and runs through different temperatures cannot be "
            f'merged. Run pymc_anneal.{function}(num_steps="auto") once and pass its '
            "num_steps attribute" + (" and its base" if function == "sample_ais" else "")
            + ".")
    return {**kwargs, "progressbar": False}


def _split(function: str, test: np.ndarray, batches) -> list[np.ndarray]:
    batches = _count("batches", batches)
    if batches > test.shape[0]:
        raise AnnealingError(f"pymc_anneal.distributed.{function}: batches must be at most "
                             f"the number of test points, {test.shape[0]}, got {batches}.")
    return np.array_split(test, batches)


def _scatter(client, model):
    """The model pickled, on every worker, and the digest that names it there."""
    blob, key = _pickled(model)
    return client.scatter(blob, broadcast=True, hash=False), key


def _pickled(model) -> tuple[bytes, str]:
    """``model``'s pickle and its digest. A PyMC model's pickle changes when it is used (a
    run leaves state in it), so the first pickle is kept while the model's content (its
    graphs and data, :func:`~pymc_anneal.pymc.adapter.model_content`) is unchanged: the
    workers then know it by the same digest and reuse its compiled loop."""
    import cloudpickle
    import pymc as pm

    from pymc_anneal._digest import fingerprint
    from pymc_anneal.pymc.adapter import model_content

    content = fingerprint(model_content(model)) if isinstance(model, pm.Model) else None
    kept = _PICKLES.get(model) if content is not None else None
    if kept is not None and kept[0] == content:
        return kept[1], kept[2]
    try:
        blob = cloudpickle.dumps(model)
    except Exception as err:  # what cannot be pickled raises anything
        raise AnnealingError(
            f"the model ({type(model).__name__}) cannot be pickled with cloudpickle to travel "
            f"to the workers: {err}. Build the model from plain arrays and functions.") from err
    key = hashlib.sha256(blob).hexdigest()
    if content is not None:
        _PICKLES[model] = (content, blob, key)
    return blob, key


def _gather(client, futures) -> list:
    """The tasks' results in order; their warnings raised again here. A failure (or a
    Ctrl-C) cancels the tasks still running."""
    try:
        outputs = client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise
    for i, (_, caught) in enumerate(outputs):
        for message in dict.fromkeys(caught):
            warn(f"task {i}: {message}")
    return [result for result, _ in outputs]


def _merged(client, jobs) -> list[xr.DataTree]:
    """Submit every job's runs at once (``jobs``: ``(function, model, kwargs, seeds)``);
    the merged result of each job."""
    futures = []
    for function, model, kwargs, seeds in jobs:
        blob, key = _scatter(client, model)
        futures.append([client.submit(_run_task, function, blob, key, (),
                                      {**kwargs, "random_seed": seed}, pure=False)
                        for seed in seeds])
    flat = _gather(client, [f for job in futures for f in job])
    out, start = [], 0
    for job in futures:
        out.append(merge(flat[start:start + len(job)]))
        start += len(job)
    return out


def _joined(client, function, model, parts, kwargs, seeds) -> xr.DataTree:
    blob, key = _scatter(client, model)
    futures = [client.submit(_run_task, function, blob, key, (part,),
                             {**kwargs, "random_seed": seed}, pure=False)
               for part, seed in zip(parts, seeds, strict=True)]
    return _join_points(_gather(client, futures))


# ----------------------------------------------------------------------------- the worker side


def _run_task(function: str, blob: bytes, key: str, args: tuple, kwargs: dict):
    """Run ``pymc_anneal.<function>(model, *args, **kwargs)`` (on a worker): the result
    and the messages of the :class:`~pymc_anneal.AnnealingWarning` s it raised."""
    import pymc_anneal.batched
    import pymc_anneal.partition
    import pymc_anneal.pymc.sampling
    import pymc_anneal.reverse

    model = _WORKER_MODELS.get(key)
    if model is None:
        model = _WORKER_MODELS[key] = pickle.loads(blob)
        while len(_WORKER_MODELS) > _MAX_WORKER_MODELS:
            _WORKER_MODELS.popitem(last=False)
    _WORKER_MODELS.move_to_end(key)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AnnealingWarning)
        if function == "sample_ais":
            result = pymc_anneal.pymc.sampling.sample_ais(model=model, **kwargs)
        else:
            entry = {"ais": pymc_anneal.partition.ais,
                     "batched_ais": pymc_anneal.batched.batched_ais,
                     "reverse_ais": pymc_anneal.reverse.reverse_ais}[function]
            result = entry(model, *args, **kwargs)
    return result, [str(w.message) for w in caught if issubclass(w.category, AnnealingWarning)]


# ------------------------------------------------------------------ joining batches of points


def _join_points(results: list[xr.DataTree]) -> xr.DataTree:
    """Per-point results of disjoint batches of test points, as one result on all points.

    Variables with a ``point`` dimension are joined along it (``point`` renumbered from 0);
    the test-set mean and its standard
    error are :func:`pymc_anneal.estimators.pooled_mean` of all the per-point estimates
    again; other values are kept where every batch has the same and otherwise stacked
    along a new ``batch`` dimension. ``num_test_points`` becomes the total, and
    ``random_seed``, ``timings`` and ``backend`` JSON lists with one entry per batch.
    """
    sizes = [r["sample_stats"].sizes["point"] for r in results]
    groups = {}
    for group in results[0].children:
        datasets = [r[group].to_dataset() for r in results]
        groups[group] = _join_group(datasets)
    stats = groups["sample_stats"]
    mean, mean_se = pooled_mean(stats["log_likelihood"].values,
                                stats["log_likelihood_se"].values)
    stats = stats.assign(mean_log_likelihood=((), mean), mean_log_likelihood_se=((), mean_se),
                         batch=("point", np.repeat(np.arange(len(sizes)), sizes)))
    groups["sample_stats"] = stats
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(results[0].attrs)
    for key in ("random_seed", "timings", "backend"):
        if key in results[0].attrs:
            tree.attrs[key] = json.dumps([_plain(r.attrs.get(key)) for r in results])
    tree.attrs.update(num_test_points=int(sum(sizes)), batches=len(results))
    for group in results[0].children:
        tree[group].attrs.update(results[0][group].attrs)
    return tree


def _join_group(datasets: list[xr.Dataset]) -> xr.Dataset:
    joined = {}
    for name in datasets[0].data_vars:
        values = [ds[name] for ds in datasets]
        if "point" in values[0].dims:
            joined[name] = xr.concat(values, dim="point", coords="minimal",
                                     compat="override", join="override")
        elif all(v.identical(values[0]) for v in values[1:]):
            joined[name] = values[0]
        else:
            joined[name] = xr.concat(values, dim="batch", coords="minimal", compat="override")
    out = xr.Dataset(joined, attrs=datasets[0].attrs)
    if "point" in out.dims:
        out = out.assign_coords(point=np.arange(out.sizes["point"]))
    return out

