r"""A seeded generator of random small PyMC models with an exact log evidence.

Issue 23, section 3: the defects of the audit hid in models nobody chose to test, at points
nobody looked at. This module draws models at random from families whose evidence
:math:`\log Z = \log \int p(\theta)\, \sum_z p(z \mid \theta)\, p(y \mid z, \theta)\,
e^{\phi(\theta, z)}\, d\theta` (:math:`\phi` the Potentials) is known to a precision far
below any Monte Carlo error, and varies what the code branches on:

========================  ===========================================================  ======
family                    model                                                        exact
========================  ===========================================================  ======
``normal_mean``           mu ~ N; y ~ N(mu, sigma); optional Gaussian Potential        conjugate Gaussian
``normal_scale``          mu ~ N, sigma ~ HalfNormal | Gamma; y ~ N(mu, sigma)         1-d quad x conjugacy
``funnel``                tau ~ HalfNormal; theta_j ~ N(0, tau) (centered)             1-d quad x conjugacy
``gamma_poisson``         lam ~ Gamma; y ~ Poisson(lam e); optional Potential -c lam   closed form
``beta_binomial``         p ~ Beta | Uniform; y ~ Binomial(n, p), n from pm.Data        closed form
``dirichlet_multinomial`` w ~ Dirichlet(3); counts ~ Multinomial(n, w)                 closed form
``mixture_labels``        z_i ~ Bernoulli(p | sigmoid(x)); y_i ~ N(mu + delta z_i)      enumeration x conjugacy
``coupled_labels``        z_i ~ Bernoulli; y_i ~ N(a + b z_i + rho z_{i-1})            enumeration x conjugacy
``binomial_sigmoid``      x ~ N; z ~ Binomial(n, sigmoid(x)), n from pm.Data            1-d quad of a finite sum
``all_discrete``          z_i ~ Categorical; optional Potential coupling neighbours    enumeration
``latent_count``          lam ~ Gamma; k ~ Poisson(lam) latent; y ~ N(k, s)            negative-binomial sum
========================  ===========================================================  ======

Random structure within a family: the size, the hyper-parameters, Deterministics,
Potentials, ``pm.Data`` containers, a prior choice (bounded, positive, simplex transforms),
couplings whose coefficient is 0 at the model's initial point (``rho ~ N(0, s)``), discrete
parameters that depend on continuous variables, supports set by ``pm.Data``, and one to
three datasets per model, swapped in with ``pm.set_data`` (changing the number of
observations or a discrete support where the family allows).

Every reference is computed two ways (:meth:`ModelCase.check_log_z`): the *exact* route in the
table and an independent one (1-d or 2-d adaptive quadrature of the per-element sums, a
forward recursion over a chain of labels, brute-force enumeration, or a Rao-Blackwellised
prior Monte Carlo with its standard error); ``tests/calibration/test_generator.py`` compares
them on a seeded sample.

A case is replayed from its :meth:`ModelCase.spec` (family, seed and the drawn parameters,
optionally with explicit ``datasets``), as ``tests/data/calibration_failures.json`` does.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import integrate, special, stats

__all__ = ["FAMILIES", "ModelCase", "case_from_spec", "generate", "generate_many"]

MAX_CONFIGURATIONS = 4096
"""The most discrete configurations a reference enumerates."""
_LOG_2PI = float(np.log(2 * np.pi))


# --------------------------------------------------------------------------- numerics
def _log_quad(log_f: Callable, lo: float, hi: float, num_grid: int = 4001) -> float:
    """log of the integral of exp(log_f) over [lo, hi], by adaptive quadrature.

    ``log_f`` is vectorised. A grid finds the peak and the region within 50 nats of it;
    the integrand is shifted by the peak so that tiny evidences stay representable.
    """
    grid = np.linspace(lo, hi, num_grid)
    values = np.asarray(log_f(grid), dtype=float)
    peak = float(np.max(values))
    inside = np.flatnonzero(values > peak - 50.0)
    step = grid[1] - grid[0]
    a = max(lo, grid[inside[0]] - 2 * step)
    b = min(hi, grid[inside[-1]] + 2 * step)
    points = [float(grid[np.argmax(values)])] if a < grid[np.argmax(values)] < b else None
    val, _ = integrate.quad(lambda t: np.exp(float(log_f(np.array([t]))[0]) - peak), a, b,
                            points=points, limit=400, epsabs=0.0, epsrel=1e-10)
    return peak + float(np.log(val))


def _gauss_legendre(a: float, b: float, num_panels: int, order: int = 32):
    """Nodes and weights of a composite Gauss-Legendre rule on [a, b]."""
    t, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(a, b, num_panels + 1)
    half = np.diff(edges)[:, None] / 2
    nodes = (edges[:-1, None] + half * (t[None, :] + 1)).ravel()
    return nodes, (half * w[None, :]).ravel()


def _log_dblquad(log_f: Callable, xlim, ylim, num_grid: int = 301, num_panels: int = 16) -> float:
    """log of the double integral of exp(log_f(x, y)) (vectorised) over a box, or over
    ``x in xlim, y in ylim(x)`` when ``ylim`` is a function returning (lo, hi) arrays.

    A grid finds the region within 50 nats of the peak; a composite Gauss-Legendre product
    rule (``num_panels`` x 32 nodes a side) integrates it, shifted by the peak. This is a
    different method from :func:`_log_quad`'s adaptive quadrature, and fast enough for the
    generator's test; for a smooth integrand it is accurate to far below 1e-6.
    """
    def mapped(x, t):  # y = lo(x) + (hi(x) - lo(x)) t, with its Jacobian
        if callable(ylim):
            lo, hi = ylim(x)
            return log_f(x, lo + (hi - lo) * t) + np.log(hi - lo)
        return log_f(x, ylim[0] + (ylim[1] - ylim[0]) * t) + np.log(ylim[1] - ylim[0])

    xs, ts = np.linspace(*xlim, num_grid)[1:-1], np.linspace(0.0, 1.0, num_grid)[1:-1]
    values = np.asarray(mapped(xs[:, None], ts[None, :]), dtype=float)
    peak = float(np.max(values[np.isfinite(values)]))
    inside = values > peak - 50.0
    rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
    dx, dt = xs[1] - xs[0], ts[1] - ts[0]
    xa, xb = max(xlim[0], xs[rows[0]] - 2 * dx), min(xlim[1], xs[rows[-1]] + 2 * dx)
    ta, tb = max(0.0, ts[cols[0]] - 2 * dt), min(1.0, ts[cols[-1]] + 2 * dt)
    xn, xw = _gauss_legendre(xa, xb, num_panels)
    tn, tw = _gauss_legendre(ta, tb, num_panels)
    vals = np.asarray(mapped(xn[:, None], tn[None, :]), dtype=float) - peak
    return peak + float(special.logsumexp(vals, b=xw[:, None] * tw[None, :]))


def _log_mc(log_g: np.ndarray) -> tuple[float, float]:
    """log mean exp of Monte Carlo terms, and its delta-method standard error."""
    m = float(special.logsumexp(log_g) - np.log(log_g.size))
    w = np.exp(log_g - m)
    return m, float(np.std(w, ddof=1) / np.sqrt(w.size))


def _norm_logpdf(y, mean, sd):
    return -0.5 * _LOG_2PI - np.log(sd) - 0.5 * ((y - mean) / sd) ** 2


def _log_gauss_rank1(r: np.ndarray, noise_var: float, v: np.ndarray, prior_var) -> np.ndarray:
    r"""log N(r | 0, noise_var I + prior_var v v^T), batched over the leading axes of r and
    v (Sherman-Morrison and the matrix-determinant lemma); ``prior_var`` broadcasts too."""
    n = r.shape[-1]
    vv = np.sum(v * v, axis=-1)
    vr = np.sum(v * r, axis=-1)
    denom = noise_var + prior_var * vv
    quad = (np.sum(r * r, axis=-1) - prior_var * vr**2 / denom) / noise_var
    logdet = (n - 1) * np.log(noise_var) + np.log(denom)
    return -0.5 * (n * _LOG_2PI + logdet + quad)


def _sigmoid(x):
    return special.expit(x)


def _log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def _f(x) -> float:
    return float(np.round(x, 6))


# --------------------------------------------------------------------------- the case
@dataclass(frozen=True)
class ModelCase:
    """One generated model with its datasets and their exact log evidences.

    Attributes
    ----------
    name : str
        ``"<family>-<seed>"``.
    family : str
        A key of :data:`FAMILIES`.
    seed : int
        The generator's seed.
    params : dict
        The drawn parameters (JSON-able); with ``family`` and ``seed`` they rebuild the case.
    features : frozenset of str
        What the model exercises (``"set_data"``, ``"labels:coupled"``, ...).
    datasets : tuple of dict
        ``pm.Data`` name -> value; the model is built holding ``datasets[0]``.
    log_z : tuple of float
        The exact log evidence of each dataset.
    refused_routes : frozenset of str
        ``discrete=`` routes that must refuse this model with an ``AnnealingError``.
    """

    name: str
    family: str
    seed: int
    params: dict
    features: frozenset
    datasets: tuple
    log_z: tuple
    refused_routes: frozenset = field(default_factory=frozenset)

    @property
    def has_discrete(self) -> bool:
        """Whether the model has discrete free variables (so that the routes differ)."""
        return FAMILIES[self.family].discrete

    def build(self) -> pm.Model:
        """A new model holding ``datasets[0]``."""
        return FAMILIES[self.family].build(self.params, self.datasets[0])

    def set_data(self, model: pm.Model, index: int) -> None:
        """Swap dataset ``index`` into ``model`` with ``pm.set_data``."""
        with model:
            pm.set_data({k: np.asarray(v) for k, v in self.datasets[index].items()})

    def check_log_z(self, index: int) -> tuple[float, float]:
        """The reference of dataset ``index`` computed the other way, with its tolerance."""
        return FAMILIES[self.family].check(self.params, self.datasets[index])

    def spec(self) -> dict:
        """JSON-able description from which :func:`case_from_spec` rebuilds the case; the
        datasets are included, so that a replay does not depend on the simulator."""
        datasets = [{k: np.asarray(v).tolist() for k, v in d.items()} for d in self.datasets]
        return {"family": self.family, "seed": self.seed,
                "params": {**self.params, "datasets": datasets}}


@dataclass(frozen=True)
class Family:
    """A family of models: draw parameters, simulate datasets, build, and two references."""

    draw: Callable  # rng -> params
    simulate: Callable  # (params, rng) -> list of datasets
    build: Callable  # (params, dataset) -> pm.Model
    exact: Callable  # (params, dataset) -> float
    check: Callable  # (params, dataset) -> (float, tolerance)
    features: Callable  # params -> set of str
    discrete: bool = False
    refused_routes: frozenset = frozenset()


def _common(rng, max_datasets: int = 3) -> dict:
    num = int(rng.integers(1, max_datasets + 1))
    return {"num_datasets": num,
            "use_data": bool(num > 1 or rng.random() < 0.5),
            "deterministic": bool(rng.random() < 0.4)}


def _data(params, name, value):
    """A ``pm.Data`` container when the case swaps data, else the plain array."""
    value = np.asarray(value)
    return pm.Data(name, value) if params["use_data"] else value


def _base_features(params, datasets=None) -> set:
    out = set()
    if params["use_data"]:
        out.add("pm.Data")
    if params["num_datasets"] > 1:
        out.add("set_data")
    if params["deterministic"]:
        out.add("deterministic")
    if params.get("potential"):
        out.add("potential")
    return out


def _sizes(rng, params, lo, hi, fixed: bool = False) -> list[int]:
    if fixed:
        n = int(rng.integers(lo, hi + 1))
        return [n] * params["num_datasets"]
    return [int(rng.integers(lo, hi + 1)) for _ in range(params["num_datasets"])]


# --------------------------------------------------------------------------- normal_mean
def _normal_mean_draw(rng):
    p = _common(rng)
    p.update(m0=_f(rng.uniform(-2, 2)), s0=_f(rng.uniform(0.5, 3)),
             sigma=_f(rng.uniform(0.3, 2)), sizes=_sizes(rng, p, 1, 8))
    if rng.random() < 0.4:
        p["potential"] = [_f(rng.uniform(-2, 2)), _f(rng.uniform(0.5, 3))]
    return p


def _normal_mean_simulate(params, rng):
    out = []
    for n in params["sizes"]:
        mu = rng.normal(params["m0"], params["s0"])
        out.append({"y_obs": rng.normal(mu, params["sigma"], n).round(4)})
    return out


def _normal_mean_build(params, data):
    with pm.Model() as model:
        mu = pm.Normal("mu", params["m0"], params["s0"])
        pm.Normal("y", mu, params["sigma"], observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("mu_shifted", 2 * mu + 1)
        if params.get("potential"):
            c, t = params["potential"]
            pm.Potential("pot", -0.5 * ((mu - c) / t) ** 2)
    return model


def _normal_mean_exact(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    noise = np.full(y.size, params["sigma"] ** 2)
    extra = 0.0
    if params.get("potential"):  # exp(-(mu-c)^2/2t^2) = sqrt(2 pi) t N(c | mu, t)
        c, t = params["potential"]
        y, noise = np.r_[y, c], np.r_[noise, t**2]
        extra = 0.5 * _LOG_2PI + np.log(t)
    cov = np.diag(noise) + params["s0"] ** 2
    return float(stats.multivariate_normal(np.full(y.size, params["m0"]), cov).logpdf(y) + extra)


def _normal_mean_check(params, data):
    y = np.asarray(data["y_obs"], dtype=float)

    def log_f(mu):
        out = _norm_logpdf(mu, params["m0"], params["s0"])
        out = out + _norm_logpdf(y[None, :], mu[:, None], params["sigma"]).sum(axis=1)
        if params.get("potential"):
            c, t = params["potential"]
            out = out - 0.5 * ((mu - c) / t) ** 2
        return out

    lo, hi = params["m0"] - 15 * params["s0"], params["m0"] + 15 * params["s0"]
    return _log_quad(log_f, lo, hi), 1e-6


def _normal_mean_features(params):
    return _base_features(params) | {"conjugate"} | (
        {"nobs_changes"} if len(set(params["sizes"])) > 1 else set())


# --------------------------------------------------------------------------- normal_scale
def _normal_scale_draw(rng):
    p = _common(rng)
    p.update(m0=_f(rng.uniform(-1, 1)), s0=_f(rng.uniform(0.5, 3)),
             scale_prior=str(rng.choice(["halfnormal", "gamma"])),
             h=_f(rng.uniform(0.5, 2)), a=_f(rng.uniform(2, 5)), b=_f(rng.uniform(2, 5)),
             sizes=_sizes(rng, p, 2, 8))
    return p


def _normal_scale_simulate(params, rng):
    out = []
    for n in params["sizes"]:
        mu = rng.normal(params["m0"], params["s0"])
        if params["scale_prior"] == "halfnormal":
            sigma = abs(rng.normal(0, params["h"]))
        else:
            sigma = rng.gamma(params["a"], 1 / params["b"])
        out.append({"y_obs": rng.normal(mu, max(sigma, 0.05), n).round(4)})
    return out


def _normal_scale_build(params, data):
    with pm.Model() as model:
        mu = pm.Normal("mu", params["m0"], params["s0"])
        if params["scale_prior"] == "halfnormal":
            sigma = pm.HalfNormal("sigma", params["h"])
        else:
            sigma = pm.Gamma("sigma", alpha=params["a"], beta=params["b"])
        pm.Normal("y", mu, sigma, observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("precision", sigma**-2)
    return model


def _log_prior_sigma(params, sigma):
    if params["scale_prior"] == "halfnormal":
        return np.log(2.0) + _norm_logpdf(sigma, 0.0, params["h"])
    return stats.gamma(params["a"], scale=1 / params["b"]).logpdf(sigma)


def _sigma_upper(params):
    if params["scale_prior"] == "halfnormal":
        return 12 * params["h"]
    return float(stats.gamma(params["a"], scale=1 / params["b"]).isf(1e-14))


def _normal_scale_exact(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    r = y - params["m0"]

    def log_f(sigma):
        sigma = np.asarray(sigma, dtype=float)
        marg = _log_gauss_rank1(np.broadcast_to(r, sigma.shape + r.shape), sigma**2,
                                np.ones(r.shape), params["s0"] ** 2)
        return _log_prior_sigma(params, sigma) + marg

    return _log_quad(log_f, 1e-9, _sigma_upper(params))


def _normal_scale_check(params, data):
    y = np.asarray(data["y_obs"], dtype=float)

    def log_f(mu, sigma):
        ll = _norm_logpdf(y, mu[..., None], sigma[..., None]).sum(axis=-1)
        return _norm_logpdf(mu, params["m0"], params["s0"]) + _log_prior_sigma(params, sigma) + ll

    mlim = (params["m0"] - 12 * params["s0"], params["m0"] + 12 * params["s0"])
    return _log_dblquad(log_f, mlim, (1e-6, _sigma_upper(params))), 1e-5


def _normal_scale_features(params):
    return _base_features(params) | {"transform:positive", "quadrature:2d"} | (
        {"nobs_changes"} if len(set(params["sizes"])) > 1 else set())


# --------------------------------------------------------------------------- funnel
def _funnel_draw(rng):
    p = _common(rng)
    j = int(rng.integers(2, 7))
    p.update(h=_f(rng.uniform(1, 5)), sig=[_f(s) for s in rng.uniform(0.5, 3, j)])
    return p


def _funnel_simulate(params, rng):
    sig = np.asarray(params["sig"])
    out = []
    for _ in range(params["num_datasets"]):
        tau = abs(rng.normal(0, params["h"]))
        out.append({"y_obs": rng.normal(rng.normal(0, tau, sig.size), sig).round(4)})
    return out


def _funnel_build(params, data):
    with pm.Model() as model:
        tau = pm.HalfNormal("tau", params["h"])
        theta = pm.Normal("theta", 0.0, tau, shape=len(params["sig"]))  # centered: a funnel
        pm.Normal("y", theta, np.asarray(params["sig"]),
                  observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("theta_mean", theta.mean())
    return model


def _funnel_log_lik(params, data, tau):
    y, sig = np.asarray(data["y_obs"], dtype=float), np.asarray(params["sig"])
    sd = np.sqrt(np.asarray(tau)[..., None] ** 2 + sig**2)
    return _norm_logpdf(y, 0.0, sd).sum(axis=-1)


def _funnel_exact(params, data):
    def log_f(tau):
        return np.log(2.0) + _norm_logpdf(tau, 0.0, params["h"]) + _funnel_log_lik(params, data,
                                                                                    tau)

    return _log_quad(log_f, 0.0, 12 * params["h"])


def _funnel_check(params, data):
    rng = np.random.default_rng(12345)
    tau = np.abs(rng.normal(0, params["h"], 400_000))
    value, se = _log_mc(_funnel_log_lik(params, data, tau))
    return value, 5 * se


def _funnel_features(params):
    return _base_features(params) | {"funnel", "transform:positive"}


# --------------------------------------------------------------------------- gamma_poisson
def _gamma_poisson_draw(rng):
    p = _common(rng)
    p.update(a=_f(rng.uniform(1, 5)), b=_f(rng.uniform(0.5, 3)), sizes=_sizes(rng, p, 1, 8))
    if rng.random() < 0.4:
        p["potential"] = _f(rng.uniform(0.2, 2))
    return p


def _gamma_poisson_simulate(params, rng):
    out = []
    for n in params["sizes"]:
        lam = rng.gamma(params["a"], 1 / params["b"])
        e = rng.uniform(0.5, 2, n).round(3)
        out.append({"exposure": e, "y_obs": rng.poisson(lam * e)})
    return out


def _gamma_poisson_build(params, data):
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=params["a"], beta=params["b"])
        e = _data(params, "exposure", data["exposure"])
        pm.Poisson("y", lam * e, observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("log_lam", pt.log(lam))
        if params.get("potential"):
            pm.Potential("pot", -params["potential"] * lam)
    return model


def _gamma_poisson_exact(params, data):
    y, e = np.asarray(data["y_obs"], dtype=float), np.asarray(data["exposure"], dtype=float)
    a, b = params["a"], params["b"]
    c = params.get("potential") or 0.0
    return float(a * np.log(b) - special.gammaln(a) + special.gammaln(a + y.sum())
                 - (a + y.sum()) * np.log(b + c + e.sum()) + np.sum(y * np.log(e))
                 - np.sum(special.gammaln(y + 1)))


def _gamma_poisson_check(params, data):
    y, e = np.asarray(data["y_obs"], dtype=float), np.asarray(data["exposure"], dtype=float)
    c = params.get("potential") or 0.0
    prior = stats.gamma(params["a"], scale=1 / params["b"])

    def log_f(lam):
        lam = np.asarray(lam, dtype=float)
        ll = stats.poisson.logpmf(y, lam[..., None] * e).sum(axis=-1)
        return prior.logpdf(lam) + ll - c * lam

    return _log_quad(log_f, 1e-12, float(prior.isf(1e-15)) + 10), 1e-6


def _gamma_poisson_features(params):
    return _base_features(params) | {"transform:positive", "conjugate"} | (
        {"nobs_changes"} if len(set(params["sizes"])) > 1 else set())


# --------------------------------------------------------------------------- beta_binomial
def _beta_binomial_draw(rng):
    p = _common(rng)
    uniform = bool(rng.random() < 0.4)
    p.update(prior="uniform" if uniform else "beta", a=1.0 if uniform else _f(rng.uniform(0.7, 4)),
             b=1.0 if uniform else _f(rng.uniform(0.7, 4)), sizes=_sizes(rng, p, 1, 6))
    return p


def _beta_binomial_simulate(params, rng):
    out = []
    for n in params["sizes"]:
        prob = rng.beta(params["a"], params["b"])
        trials = rng.integers(1, 11, n)
        out.append({"n_trials": trials, "y_obs": rng.binomial(trials, prob)})
    return out


def _beta_binomial_build(params, data):
    with pm.Model() as model:
        if params["prior"] == "uniform":
            p = pm.Uniform("p", 0, 1)
        else:
            p = pm.Beta("p", params["a"], params["b"])
        pm.Binomial("y", _data(params, "n_trials", data["n_trials"]), p,
                    observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("odds", p / (1 - p))
    return model


def _beta_binomial_exact(params, data):
    y, n = np.asarray(data["y_obs"], dtype=float), np.asarray(data["n_trials"], dtype=float)
    a, b = params["a"], params["b"]
    log_choose = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
    return float(log_choose.sum() + special.betaln(a + y.sum(), b + (n - y).sum())
                 - special.betaln(a, b))


def _beta_binomial_check(params, data):
    y, n = np.asarray(data["y_obs"], dtype=float), np.asarray(data["n_trials"], dtype=float)
    prior = stats.beta(params["a"], params["b"])

    def log_f(u):  # in logit space: smooth, unbounded
        u = np.asarray(u, dtype=float)
        p = _sigmoid(u)
        jac = _log_sigmoid(u) + _log_sigmoid(-u)
        ll = stats.binom.logpmf(y, n, p[..., None]).sum(axis=-1)
        return prior.logpdf(p) + jac + ll

    return _log_quad(log_f, -35.0, 35.0), 1e-6


def _beta_binomial_features(params):
    return _base_features(params) | {"transform:bounded", "conjugate",
                                     f"prior:{params['prior']}"} | (
        {"nobs_changes"} if len(set(params["sizes"])) > 1 else set())


# --------------------------------------------------------------------------- dirichlet_multinomial
def _dirichlet_draw(rng):
    p = _common(rng)
    p.update(alpha=[_f(a) for a in rng.uniform(1, 3, 3)], sizes=_sizes(rng, p, 1, 3))
    return p


def _dirichlet_simulate(params, rng):
    out = []
    for rows in params["sizes"]:
        w = rng.dirichlet(params["alpha"])
        n = rng.integers(1, 16, rows)
        out.append({"n_total": n, "counts": np.stack([rng.multinomial(k, w) for k in n])})
    return out


def _dirichlet_build(params, data):
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.asarray(params["alpha"]))
        n = _data(params, "n_total", data["n_total"])
        pm.Multinomial("y", n=n, p=w, observed=_data(params, "counts", data["counts"]))
        if params["deterministic"]:
            pm.Deterministic("w_max", w.max())
    return model


def _dirichlet_exact(params, data):
    c, n = np.asarray(data["counts"], dtype=float), np.asarray(data["n_total"], dtype=float)
    alpha = np.asarray(params["alpha"])

    def log_beta(a):
        return special.gammaln(a).sum() - special.gammaln(a.sum())

    coef = special.gammaln(n + 1).sum() - special.gammaln(c + 1).sum()
    return float(coef + log_beta(alpha + c.sum(axis=0)) - log_beta(alpha))


def _dirichlet_check(params, data):
    """Stick-breaking, w1 = v1, w2 = (1 - v1) v2: the prior factorises into Beta(a1, a2 + a3)
    and Beta(a2, a3) and so does the likelihood; each factor by quadrature in logit space."""
    c = np.asarray(data["counts"], dtype=float)
    n = np.asarray(data["n_total"], dtype=float)
    a = np.asarray(params["alpha"])
    coef = special.gammaln(n + 1).sum() - special.gammaln(c + 1).sum()
    tot = c.sum(axis=0)

    def log_factor(a_on, a_off, c_on, c_off):
        def log_f(u):  # v = sigmoid(u), dv = v (1 - v) du
            lv, l1v = _log_sigmoid(u), _log_sigmoid(-u)
            return (-special.betaln(a_on, a_off) + (a_on + c_on) * lv + (a_off + c_off) * l1v)

        return _log_quad(log_f, -60.0, 60.0)

    return (coef + log_factor(a[0], a[1] + a[2], tot[0], tot[1] + tot[2])
            + log_factor(a[1], a[2], tot[1], tot[2])), 1e-6


def _dirichlet_features(params):
    return _base_features(params) | {"transform:simplex", "conjugate"} | (
        {"nobs_changes"} if len(set(params["sizes"])) > 1 else set())


# --------------------------------------------------------------------------- mixture_labels
def _mixture_draw(rng):
    p = _common(rng)
    p.update(s0=_f(rng.uniform(1, 3)), delta=_f(rng.uniform(1, 3)), s=_f(rng.uniform(0.3, 1)),
             p_from_x=bool(rng.random() < 0.5), p=_f(rng.uniform(0.2, 0.8)),
             sizes=_sizes(rng, p, 3, 8, fixed=True))
    return p


def _mixture_simulate(params, rng):
    out = []
    for n in params["sizes"]:
        mu = rng.normal(0, params["s0"])
        prob = _sigmoid(rng.normal()) if params["p_from_x"] else params["p"]
        z = rng.random(n) < prob
        out.append({"y_obs": rng.normal(mu + params["delta"] * z, params["s"]).round(4)})
    return out


def _mixture_build(params, data):
    n = len(data["y_obs"])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, params["s0"])
        if params["p_from_x"]:
            x = pm.Normal("x", 0, 1)
            prob = pm.math.sigmoid(x)
        else:
            prob = params["p"]
        z = pm.Bernoulli("z", prob, shape=n)
        pm.Normal("y", mu + params["delta"] * z, params["s"],
                  observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("num_high", z.sum())
    return model


def _configs(n: int, k: int = 2) -> np.ndarray:
    if k**n > MAX_CONFIGURATIONS:
        raise ValueError(f"{k}^{n} configurations exceed {MAX_CONFIGURATIONS}")
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=float).reshape(-1, n)


def _log_q_sigmoid(n: int) -> np.ndarray:
    """log int N(x | 0, 1) sigmoid(x)^k (1 - sigmoid(x))^(n - k) dx for k = 0..n."""
    return np.array([_log_quad(lambda x, k=k: _norm_logpdf(x, 0, 1) + k * _log_sigmoid(x)
                               + (n - k) * _log_sigmoid(-x), -40.0, 40.0) for k in range(n + 1)])


def _mixture_exact(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    z = _configs(y.size)
    k = z.sum(axis=1).astype(int)
    if params["p_from_x"]:
        log_pz = _log_q_sigmoid(y.size)[k]
    else:
        log_pz = k * np.log(params["p"]) + (y.size - k) * np.log1p(-params["p"])
    marg = _log_gauss_rank1(y - params["delta"] * z, params["s"] ** 2, np.ones(y.size),
                            params["s0"] ** 2)
    return float(special.logsumexp(log_pz + marg))


def _mixture_per_element(params, y, mu, log_p, log_1mp):
    lo = log_1mp[..., None] + _norm_logpdf(y, mu[..., None], params["s"])
    hi = log_p[..., None] + _norm_logpdf(y, mu[..., None] + params["delta"], params["s"])
    return np.logaddexp(lo, hi).sum(axis=-1)


def _mixture_check(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    mlim = (-12 * params["s0"], 12 * params["s0"])
    if not params["p_from_x"]:
        def log_f(mu):
            mu = np.asarray(mu, dtype=float)
            lp = np.full(mu.shape, np.log(params["p"]))
            l1 = np.full(mu.shape, np.log1p(-params["p"]))
            return _norm_logpdf(mu, 0, params["s0"]) + _mixture_per_element(params, y, mu, lp, l1)

        return _log_quad(log_f, *mlim), 1e-6

    def log_f2(mu, x):
        return (_norm_logpdf(mu, 0, params["s0"]) + _norm_logpdf(x, 0, 1)
                + _mixture_per_element(params, y, mu, _log_sigmoid(x), _log_sigmoid(-x)))

    return _log_dblquad(log_f2, mlim, (-12.0, 12.0)), 1e-5


def _mixture_features(params):
    out = _base_features(params) | {"labels:independent", "discrete:bernoulli"}
    if params["p_from_x"]:
        out |= {"discrete_depends_on_continuous", "quadrature:2d"}
    return out


# --------------------------------------------------------------------------- coupled_labels
def _coupled_draw(rng):
    p = _common(rng)
    zero = bool(rng.random() < 0.6)
    p.update(rho0=0.0 if zero else _f(rng.uniform(0.5, 1.5)), rho_sd=_f(rng.uniform(0.5, 1.5)),
             p=_f(rng.uniform(0.3, 0.7)), a=_f(rng.uniform(-1, 1)), b=_f(rng.uniform(0.5, 2)),
             s=_f(rng.uniform(0.3, 0.8)), sizes=_sizes(rng, p, 4, 9, fixed=True))
    return p


def _coupled_simulate(params, rng):
    out = []
    for n in params["sizes"]:
        rho = rng.normal(params["rho0"], params["rho_sd"])
        z = (rng.random(n) < params["p"]).astype(float)
        prev = np.r_[0.0, z[:-1]]
        out.append({"y_obs": (params["a"] + params["b"] * z + rho * prev
                              + params["s"] * rng.standard_normal(n)).round(4)})
    return out


def _coupled_build(params, data):
    n = len(data["y_obs"])
    with pm.Model() as model:
        rho = pm.Normal("rho", params["rho0"], params["rho_sd"])
        z = pm.Bernoulli("z", params["p"], shape=n)
        prev = pt.concatenate([pt.zeros(1), z[:-1]])
        pm.Normal("y", params["a"] + params["b"] * z + rho * prev, params["s"],
                  observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("num_on", z.sum())
    return model


def _coupled_exact(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    z = _configs(y.size)
    prev = np.concatenate([np.zeros((z.shape[0], 1)), z[:, :-1]], axis=1)
    k = z.sum(axis=1)
    log_pz = k * np.log(params["p"]) + (y.size - k) * np.log1p(-params["p"])
    r = y - params["a"] - params["b"] * z - params["rho0"] * prev
    marg = _log_gauss_rank1(r, params["s"] ** 2, prev, params["rho_sd"] ** 2)
    return float(special.logsumexp(log_pz + marg))


def _coupled_log_lik(params, y, rho):
    """log p(y | rho), summed over the chain of labels by the forward recursion."""
    rho = np.asarray(rho, dtype=float)
    log_prior = np.log([1 - params["p"], params["p"]])
    # alpha[..., z_i]: log p(y_1..i, z_i | rho); the first label has z_prev = 0
    alpha = log_prior + _norm_logpdf(y[0], params["a"] + params["b"] * np.arange(2.0),
                                     params["s"]) + np.zeros(rho.shape + (2,))
    for i in range(1, y.size):
        # trans[..., prev, cur]
        mean = (params["a"] + params["b"] * np.arange(2.0)[None, :]
                + rho[..., None, None] * np.arange(2.0)[:, None])
        trans = log_prior[None, :] + _norm_logpdf(y[i], mean, params["s"])
        alpha = special.logsumexp(alpha[..., :, None] + trans, axis=-2)
    return special.logsumexp(alpha, axis=-1)


def _coupled_check(params, data):
    y = np.asarray(data["y_obs"], dtype=float)

    def log_f(rho):
        return _norm_logpdf(rho, params["rho0"], params["rho_sd"]) + _coupled_log_lik(params, y,
                                                                                      rho)

    r0, rs = params["rho0"], params["rho_sd"]
    return _log_quad(log_f, r0 - 15 * rs, r0 + 15 * rs), 1e-6


def _coupled_features(params):
    out = _base_features(params) | {"labels:coupled", "discrete:bernoulli"}
    if params["rho0"] == 0.0:
        out.add("coupling_zero_at_init")
    return out


# --------------------------------------------------------------------------- binomial_sigmoid
def _binsig_draw(rng):
    p = _common(rng)
    p.update(m=_f(rng.uniform(-1, 1)) if rng.random() < 0.5 else 0.0,
             c=_f(rng.uniform(0.5, 1.5)), s=_f(rng.uniform(0.3, 1)),
             trials=[int(t) for t in rng.choice(np.arange(1, 9), p["num_datasets"], replace=False)],
             sizes=_sizes(rng, p, 1, 4))
    return p


def _binsig_simulate(params, rng):
    out = []
    for n, m in zip(params["trials"], params["sizes"], strict=True):
        z = rng.binomial(n, _sigmoid(rng.normal(params["m"], 1)))
        out.append({"n_trials": np.asarray(n), "y_obs": rng.normal(params["c"] * z, params["s"],
                                                                   m).round(4)})
    return out


def _binsig_build(params, data):
    with pm.Model() as model:
        x = pm.Normal("x", params["m"], 1)
        z = pm.Binomial("z", _data(params, "n_trials", data["n_trials"]), pm.math.sigmoid(x))
        pm.Normal("y", params["c"] * z, params["s"], observed=_data(params, "y_obs",
                                                                     data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("p", pm.math.sigmoid(x))
    return model


def _binsig_log_lik(params, data, x):
    """log sum_z Binomial(z | n, sigmoid(x)) prod_j N(y_j | c z, s), vectorised over x."""
    n, y = int(data["n_trials"]), np.asarray(data["y_obs"], dtype=float)
    z = np.arange(n + 1.0)
    x = np.asarray(x, dtype=float)[..., None]
    log_pz = (special.gammaln(n + 1) - special.gammaln(z + 1) - special.gammaln(n - z + 1)
              + z * _log_sigmoid(x) + (n - z) * _log_sigmoid(-x))
    ll = _norm_logpdf(y[:, None], params["c"] * z, params["s"]).sum(axis=0)
    return special.logsumexp(log_pz + ll, axis=-1)


def _binsig_exact(params, data):
    return _log_quad(lambda x: _norm_logpdf(x, params["m"], 1) + _binsig_log_lik(params, data, x),
                     params["m"] - 15, params["m"] + 15)


def _binsig_check(params, data):
    x = np.random.default_rng(54321).normal(params["m"], 1, 400_000)
    value, se = _log_mc(_binsig_log_lik(params, data, x))
    return value, 5 * se


def _binsig_features(params):
    out = _base_features(params) | {"discrete_depends_on_continuous", "discrete:binomial"}
    if params["use_data"]:
        out.add("support_from_data")
    if len(set(params["trials"])) > 1:
        out.add("support_changes")
    if len(set(params["sizes"])) > 1:
        out.add("nobs_changes")
    return out


# --------------------------------------------------------------------------- all_discrete
def _alldisc_draw(rng):
    p = _common(rng)
    k = int(rng.integers(2, 6))
    p.update(num_labels=k, probs=[_f(v) for v in rng.dirichlet([3, 3, 3])],
             centers=[-1.5, 0.0, 1.5], s=_f(rng.uniform(0.4, 1.2)))
    if rng.random() < 0.5:
        p["potential"] = _f(rng.uniform(-1, 1.5))  # J * #(neighbours equal)
    return p


def _alldisc_simulate(params, rng):
    out = []
    for _ in range(params["num_datasets"]):
        z = rng.choice(3, params["num_labels"], p=np.asarray(params["probs"])
                       / np.sum(params["probs"]))
        out.append({"y_obs": rng.normal(np.asarray(params["centers"])[z], params["s"]).round(4)})
    return out


def _alldisc_build(params, data):
    probs = np.asarray(params["probs"]) / np.sum(params["probs"])
    with pm.Model() as model:
        z = pm.Categorical("z", probs, shape=params["num_labels"])
        pm.Normal("y", pt.as_tensor(np.asarray(params["centers"]))[z], params["s"],
                  observed=_data(params, "y_obs", data["y_obs"]))
        if params.get("potential"):
            pm.Potential("coupling", params["potential"] * pt.eq(z[1:], z[:-1]).sum())
        if params["deterministic"]:
            pm.Deterministic("num_zero", pt.eq(z, 0).sum())
    return model


def _alldisc_terms(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    probs = np.asarray(params["probs"]) / np.sum(params["probs"])
    # unary[i, k] = log p(z_i = k) + log N(y_i | center_k, s)
    return np.log(probs) + _norm_logpdf(y[:, None], np.asarray(params["centers"]), params["s"])


def _alldisc_exact(params, data):
    unary = _alldisc_terms(params, data)
    z = _configs(params["num_labels"], 3).astype(int)
    total = unary[np.arange(z.shape[1]), z].sum(axis=1)
    if params.get("potential"):
        total = total + params["potential"] * (z[:, 1:] == z[:, :-1]).sum(axis=1)
    return float(special.logsumexp(total))


def _alldisc_check(params, data):  # forward recursion over the chain
    unary = _alldisc_terms(params, data)
    pair = (params.get("potential") or 0.0) * np.eye(3)
    alpha = unary[0]
    for i in range(1, unary.shape[0]):
        alpha = special.logsumexp(alpha[:, None] + pair, axis=0) + unary[i]
    return float(special.logsumexp(alpha)), 1e-9


def _alldisc_features(params):
    out = _base_features(params) | {"all_discrete", "discrete:categorical"}
    out.add("labels:coupled" if params.get("potential") else "labels:independent")
    return out


# --------------------------------------------------------------------------- latent_count
def _count_draw(rng):
    p = _common(rng)
    p.update(a=_f(rng.uniform(2, 6)), b=_f(rng.uniform(0.5, 2)), s=_f(rng.uniform(0.5, 1.5)),
             sizes=_sizes(rng, p, 1, 4))
    return p


def _count_simulate(params, rng):
    out = []
    for m in params["sizes"]:
        k = rng.poisson(rng.gamma(params["a"], 1 / params["b"]))
        out.append({"y_obs": rng.normal(k, params["s"], m).round(4)})
    return out


def _count_build(params, data):
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=params["a"], beta=params["b"])
        k = pm.Poisson("k", lam)
        pm.Normal("y", k, params["s"], observed=_data(params, "y_obs", data["y_obs"]))
        if params["deterministic"]:
            pm.Deterministic("k_over_lam", k / lam)
    return model


_KMAX = 400


def _count_exact(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    k = np.arange(_KMAX + 1.0)
    a, b = params["a"], params["b"]
    log_pk = stats.nbinom.logpmf(k, a, b / (b + 1.0))  # Gamma(a, rate b) mixture of Poissons
    ll = _norm_logpdf(y[:, None], k, params["s"]).sum(axis=0)
    return float(special.logsumexp(log_pk + ll))


def _count_check(params, data):
    y = np.asarray(data["y_obs"], dtype=float)
    k = np.arange(_KMAX + 1.0)
    ll = _norm_logpdf(y[:, None], k, params["s"]).sum(axis=0)
    prior = stats.gamma(params["a"], scale=1 / params["b"])

    def log_f(lam):
        lam = np.asarray(lam, dtype=float)[..., None]
        return prior.logpdf(lam[..., 0]) + special.logsumexp(
            stats.poisson.logpmf(k, lam) + ll, axis=-1)

    return _log_quad(log_f, 1e-12, float(prior.isf(1e-15))), 1e-6


def _count_features(params):
    return _base_features(params) | {"unbounded_discrete", "discrete:poisson",
                                     "transform:positive"}


FAMILIES: dict[str, Family] = {
    "normal_mean": Family(_normal_mean_draw, _normal_mean_simulate, _normal_mean_build,
                          _normal_mean_exact, _normal_mean_check, _normal_mean_features),
    "normal_scale": Family(_normal_scale_draw, _normal_scale_simulate, _normal_scale_build,
                           _normal_scale_exact, _normal_scale_check, _normal_scale_features),
    "funnel": Family(_funnel_draw, _funnel_simulate, _funnel_build, _funnel_exact, _funnel_check,
                     _funnel_features),
    "gamma_poisson": Family(_gamma_poisson_draw, _gamma_poisson_simulate, _gamma_poisson_build,
                            _gamma_poisson_exact, _gamma_poisson_check, _gamma_poisson_features),
    "beta_binomial": Family(_beta_binomial_draw, _beta_binomial_simulate, _beta_binomial_build,
                            _beta_binomial_exact, _beta_binomial_check, _beta_binomial_features),
    "dirichlet_multinomial": Family(_dirichlet_draw, _dirichlet_simulate, _dirichlet_build,
                                    _dirichlet_exact, _dirichlet_check, _dirichlet_features),
    "mixture_labels": Family(_mixture_draw, _mixture_simulate, _mixture_build, _mixture_exact,
                             _mixture_check, _mixture_features, discrete=True),
    "coupled_labels": Family(_coupled_draw, _coupled_simulate, _coupled_build, _coupled_exact,
                             _coupled_check, _coupled_features, discrete=True),
    "binomial_sigmoid": Family(_binsig_draw, _binsig_simulate, _binsig_build, _binsig_exact,
                               _binsig_check, _binsig_features, discrete=True),
    "all_discrete": Family(_alldisc_draw, _alldisc_simulate, _alldisc_build, _alldisc_exact,
                           _alldisc_check, _alldisc_features, discrete=True),
    "latent_count": Family(_count_draw, _count_simulate, _count_build, _count_exact, _count_check,
                           _count_features, discrete=True, refused_routes=frozenset({"sum"})),
}
"""The model families, by name."""


def _to_json(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON-able: {type(value).__name__}")


def generate(seed: int, family: str | None = None, **overrides) -> ModelCase:
    """Draw one model case.

    Parameters
    ----------
    seed : int
        Seeds the family's choice (when ``family`` is None), its parameters and its data.
    family : str, optional
        A key of :data:`FAMILIES`; drawn uniformly by default.
    **overrides
        Parameters to replace after the draw (a replayed spec passes all of them).
        ``datasets=[{name: value}, ...]`` gives the data explicitly instead of simulating
        it from the prior predictive.
    """
    rng = np.random.default_rng(seed)
    names = sorted(FAMILIES)
    family = family or names[int(rng.integers(len(names)))]
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {names}, got {family!r}")
    fam = FAMILIES[family]
    params = fam.draw(rng)
    params.update(overrides)
    if "datasets" in params:
        datasets = [{k: np.asarray(v) for k, v in d.items()} for d in params["datasets"]]
    else:
        datasets = fam.simulate(params, np.random.default_rng([seed, 1]))
    params = json.loads(json.dumps(params, default=_to_json))  # JSON-able, as replayed
    log_z = tuple(float(fam.exact(params, d)) for d in datasets)
    features = frozenset(fam.features(params) | {f"family:{family}"})
    return ModelCase(name=f"{family}-{seed}", family=family, seed=seed, params=params,
                     features=features, datasets=tuple(datasets), log_z=log_z,
                     refused_routes=fam.refused_routes)


def generate_many(seed: int, num: int, families=None) -> list[ModelCase]:
    """``num`` cases from seeds ``seed, seed + 1, ...``, cycling through ``families`` (all
    by default) so that every family is represented."""
    families = sorted(FAMILIES) if families is None else list(families)
    return [generate(seed + i, families[i % len(families)]) for i in range(num)]


def case_from_spec(spec: dict) -> ModelCase:
    """Rebuild a case from :meth:`ModelCase.spec` (as stored in the replay file)."""
    return generate(int(spec["seed"]), spec["family"], **spec.get("params", {}))
