"""Population uniqueness estimated from a sample's class-size histogram: how many persons of a
population of ``N`` are unique on the QIs, when only a sample of ``n`` of them is at hand.

Two models, as ARX implements them and as Dankar et al. (2012, "Estimating the
re-identification risk of clinical data sets", BMC Med Inform Decis Mak 12:66) compared them:

* Zayatz (1991): the share of sample uniques that are population uniques, from the
  hypergeometric chance that a population class of size i leaves exactly one record in the
  sample, with the sample's class-size shares standing in for the population's.
* Pitman (Hoshino 2001): Pitman's sampling formula fitted to the histogram by maximum
  likelihood (theta, alpha); the population has Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha
  uniques.

Dankar et al.'s rule picks Pitman for sampling fractions up to 10 % and otherwise the smaller
of Zayatz and SNB; anon_duck has no SNB, so above 10 % the rule names Zayatz. The histogram is
the aggregate SQL returns (``class_size -> n_classes``); only the fit iterates, in Python.
docs/risk.md gives every formula.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

# Newton's method on the likelihood's gradient: stop when a step moves theta and alpha by less
# than this (relative), give up after MAX_STEPS
TOLERANCE = 1e-12
MAX_STEPS = 200
# where the search stops, the gradient (per sample record) must vanish to this: a maximum on
# the edge of the domain (alpha -> 0) is no fit
STATIONARY = 1e-8
DANKAR_SAMPLING_FRACTION = 0.1


def population_uniqueness(histogram: Mapping[int, int], population_size: int) -> dict[str, Any]:
    """Both estimates and the model Dankar et al.'s rule picks, for a sample whose classes have
    the sizes ``histogram`` (size -> number of classes) drawn from ``population_size`` persons.
    Shares are of the population's records; with no sample uniques both are 0."""
    n = sum(size * count for size, count in histogram.items())
    fraction = n / population_size
    zayatz = zayatz_uniques(histogram, population_size)
    pitman = pitman_fit(histogram, population_size)
    rule = "pitman" if fraction <= DANKAR_SAMPLING_FRACTION and pitman["uniques"] is not None else "zayatz"
    return {
        "sampling_fraction": fraction,
        "zayatz": {"uniques": zayatz, "share": zayatz / population_size},
        "pitman": {**pitman, "share": None if pitman["uniques"] is None else pitman["uniques"] / population_size},
        "dankar_rule": rule,
    }


def zayatz_uniques(histogram: Mapping[int, int], population_size: int) -> float:
    """Zayatz's estimate of the population uniques: f1 * P(F = 1 | f = 1) / pi, where
    P(F = 1 | f = 1) = (f1/J) h(1) / sum_i (f_i/J) h(i) and h(i) = i C(N-i, n-1) / C(N, n) is the
    hypergeometric chance that a population class of size i leaves exactly one record in a
    sample of n (ARX's ModelZayatz)."""
    n = sum(size * count for size, count in histogram.items())
    uniques = histogram.get(1, 0)
    if not uniques:
        return 0.0
    # log of i * C(N - i, n - 1), None where it is 0; C(N, n) and J cancel in the ratio
    logs = {size: _log_choose(population_size - size, n - 1) for size in histogram}
    logs = {size: None if v is None else v + math.log(size) for size, v in logs.items()}
    top = max(v for v in logs.values() if v is not None)     # size 1 always has one
    weights = {size: 0.0 if logs[size] is None else count * math.exp(logs[size] - top)
               for size, count in histogram.items()}
    conditional = weights[1] / sum(weights.values())
    return uniques * conditional * population_size / n


def _log_choose(a: int, b: int) -> float | None:
    """log C(a, b), None when C(a, b) = 0 (b > a)."""
    if b < 0 or b > a:
        return None
    return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)


def pitman_fit(histogram: Mapping[int, int], population_size: int) -> dict[str, Any]:
    """Pitman's model: (theta, alpha) maximizing Hoshino's (2001) likelihood of the histogram,
    and the population uniques Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha. The search
    starts from Hoshino's moment-based guess (as ARX), or from alpha = 1/2 when that guess lies
    outside 0 < alpha < 1, theta > -alpha, and takes Newton steps, halved until they stay in
    that domain and raise the likelihood (a gradient step where the Hessian is not negative
    definite). ``uniques`` is None when the search does not converge or the estimate is not in
    [0, N]; with no sample uniques it is 0."""
    failed = {"theta": None, "alpha": None, "uniques": None, "converged": False}
    if not histogram.get(1, 0):
        return {"theta": None, "alpha": None, "uniques": 0.0, "converged": True}
    n = sum(size * count for size, count in histogram.items())
    u = sum(histogram.values())
    if u == 1 or u == n:      # one class, or all unique: the likelihood has no maximum inside the domain
        return failed
    theta, alpha = _hoshino_start(histogram, n, u)
    if not _in_domain(theta, alpha):
        theta, alpha = float(u), 0.5
    likelihood = _log_likelihood(histogram, n, u, theta, alpha)
    for _ in range(MAX_STEPS):
        (g_t, g_a), ((h_tt, h_ta), (_, h_aa)) = _pitman_derivatives(histogram, n, u, theta, alpha)
        det = h_tt * h_aa - h_ta * h_ta
        if h_tt < 0 and det > 0:          # Newton's step goes uphill
            step_t, step_a = -(h_aa * g_t - h_ta * g_a) / det, -(h_tt * g_a - h_ta * g_t) / det
        else:
            step_t, step_a = g_t, g_a * alpha * (1 - alpha)
        for _ in range(60):
            if _in_domain(theta + step_t, alpha + step_a):
                trial = _log_likelihood(histogram, n, u, theta + step_t, alpha + step_a)
                if trial >= likelihood:
                    break
            step_t, step_a = step_t / 2, step_a / 2
        else:
            return failed
        theta, alpha, likelihood = theta + step_t, alpha + step_a, trial
        if abs(step_t) <= TOLERANCE * max(1.0, abs(theta)) and abs(step_a) <= TOLERANCE:
            break
    else:
        return failed
    (g_t, g_a), _ = _pitman_derivatives(histogram, n, u, theta, alpha)
    if abs(g_t) * max(1.0, theta) > STATIONARY * n or abs(g_a) > STATIONARY * n:
        return failed        # stuck at the domain's edge (alpha -> 0): no maximum inside it
    uniques = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha) + alpha * math.log(population_size))
    if not 0 <= uniques <= population_size:
        return failed
    return {"theta": theta, "alpha": alpha, "uniques": uniques, "converged": True}


def _hoshino_start(histogram: Mapping[int, int], n: int, u: int) -> tuple[float, float]:
    """Hoshino's (2001) moment-based (theta, alpha), ARX's starting point; (nan, nan) when it
    is undefined."""
    f1, f2 = histogram.get(1, 0), histogram.get(2, 0) or 1
    c = f1 * (f1 - 1) / f2
    denominator = 2 * f1 * u + f1 * c - n * c
    if denominator == 0:
        return math.nan, math.nan
    theta = (n * u * c - f1 * (n - 1) * (2 * u + c)) / denominator
    return theta, (theta * (f1 - n) + (n - 1) * f1) / (n * u)


def _in_domain(theta: float, alpha: float) -> bool:
    return 0 < alpha < 1 and theta > -alpha


def _log_likelihood(histogram: Mapping[int, int], n: int, u: int, t: float, a: float) -> float:
    """Hoshino's log-likelihood of Pitman's sampling formula, constants dropped:
    sum_{i<u} log(t + i a) - sum_{i<n} log(t + i) + sum_j f_j sum_{i<j} log(i - a), each sum
    through log-gamma."""
    return ((u - 1) * math.log(a) + math.lgamma(t / a + u) - math.lgamma(t / a + 1)
            - (math.lgamma(t + n) - math.lgamma(t + 1))
            + sum(count * (math.lgamma(size - a) - math.lgamma(1 - a)) for size, count in histogram.items()))


def _pitman_derivatives(histogram: Mapping[int, int], n: int, u: int, t: float,
                        a: float) -> tuple[tuple[float, float], tuple[tuple[float, float], tuple[float, float]]]:
    """Gradient and Hessian of the log-likelihood in closed form (sums over i < u and i < n
    as differences of digamma/trigamma values, so a fit costs O(distinct class sizes))."""
    x0, x1 = t / a + 1, t / a + u
    s1 = (digamma(x1) - digamma(x0)) / a                 # sum_{i<u} 1 / (t + i a)
    s2 = (trigamma(x0) - trigamma(x1)) / (a * a)         # sum_{i<u} 1 / (t + i a)^2
    d_t = s1 - (digamma(t + n) - digamma(t + 1))
    per_class = sum(count * (digamma(size - a) - digamma(1 - a)) for size, count in histogram.items() if size > 1)
    d_a = (u - 1) / a - t * s1 / a - per_class
    h_tt = -s2 + trigamma(t + 1) - trigamma(t + n)
    h_ta = -(s1 - t * s2) / a
    per_class2 = sum(count * (trigamma(1 - a) - trigamma(size - a)) for size, count in histogram.items() if size > 1)
    h_aa = -((u - 1) - 2 * t * s1 + t * t * s2) / (a * a) - per_class2
    return (d_t, d_a), ((h_tt, h_ta), (h_ta, h_aa))


def digamma(x: float) -> float:
    """psi(x) for x > 0: the recurrence up to x >= 20, then the asymptotic series (error < 1e-15)."""
    shift = 0.0
    while x < 20:
        shift -= 1 / x
        x += 1
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return shift + math.log(x) - 0.5 / x - series


def trigamma(x: float) -> float:
    """psi'(x) for x > 0: the recurrence up to x >= 20, then the asymptotic series."""
    shift = 0.0
    while x < 20:
        shift += 1 / (x * x)
        x += 1
    inv2 = 1 / (x * x)
    series = (1 + inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))) / x
    return shift + series + 0.5 * inv2
