"""Continual-learning task sequences (the lazy/rich output scale is in ``output_scale.py``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..._random import numpy_rng
from ..._validation import check_float, check_int, check_option
from ..._budgets import check_budget
from ._checks import check_noise, check_size, orthonormal
from .index_models import SINGLE_INDEX_LINKS


# --------------------------------------------------------------------------------------------------
# continual learning


@dataclass
class ContinualTasks:
    """A sequence of teacher-student tasks returned by :func:`continual_tasks`.

    Attributes
    ----------
    X : (n_tasks, n_samples, d) float64, each task's inputs ``x ~ N(0, I_d)`` (drawn afresh per task).
    y : (n_tasks, n_samples) float64, ``y = sum_j a_j g(<w_tj, x>) + noise * eps``, ``a_j = 1/sqrt(m)``.
    y_clean : (n_tasks, n_samples) float64, the noiseless targets.
    teachers : (n_tasks, m, d) float64, each task's teacher rows ``w_tj`` (orthonormal per task).
    similarity : (n_tasks,) float64, the cosine asked between task t's and task 0's teacher
        (``similarity[0] = 1``).
    link : str, noise : float.
    """

    X: np.ndarray
    y: np.ndarray
    y_clean: np.ndarray
    teachers: np.ndarray
    similarity: np.ndarray
    link: str
    noise: float
    tasks: list = field(init=False, repr=False)

    def __post_init__(self):
        self.tasks = [(self.X[t], self.y[t]) for t in range(self.X.shape[0])]

    def overlaps(self) -> np.ndarray:
        """The teacher overlap matrix ``Q[s, t] = trace(W_s W_t^T) / m`` (n_tasks, n_tasks): the mean
        cosine of matched teacher units, ``Q[0, t] = similarity[t]`` and ``Q[s, t] = similarity[s]
        similarity[t]`` for ``s != t`` both >= 1."""
        m = self.teachers.shape[1]
        W = self.teachers.reshape(self.teachers.shape[0], -1)
        return W @ W.T / m


def continual_tasks(n_tasks: int = 3, n_samples: int = 500, d: int = 20, similarity=0.5, n_hidden: int = 1,
                    link: str = "linear", noise: float = 0.0, seed=0) -> ContinualTasks:
    """Teacher-student tasks whose teachers sit at a chosen cosine to task 0's.

    Task 0's teacher is ``W_0``, ``m = n_hidden`` Haar-random orthonormal rows. Task ``t >= 1`` has

        ``W_t = s_t W_0 + sqrt(1 - s_t^2) V_t``,

    where the ``V_t`` are orthonormal rows orthogonal to ``W_0`` and to each other. So every row of
    ``W_t`` is a unit vector, ``<w_tj, w_0j> = s_t`` exactly, ``<w_tj, w_0i> = 0`` for ``i != j``, and
    two later tasks meet at ``s_s s_t`` (``ContinualTasks.overlaps``). The target is the soft
    committee ``y = sum_j g(<w_tj, x>) / sqrt(m) + noise * eps`` with a shared readout, as in the
    feature-similarity experiments of Lee, Goldt & Saxe (ICML 2021, arXiv 2107.04384). Needs
    ``d >= m n_tasks``.

    Parameters
    ----------
    n_tasks : int >= 1.
    n_samples : int >= 1, rows per task.
    d : int >= 1.
    similarity : float in [-1, 1] (every later task at this cosine to task 0), or a sequence of
        ``n_tasks - 1`` of them (task ``t``'s cosine is ``similarity[t - 1]``).
    n_hidden : int >= 1, the teacher's units ``m``.
    link : a name of ``SINGLE_INDEX_LINKS`` (the units' activation).
    noise : float >= 0, the std of the additive Gaussian noise on ``y``.
    seed : None, int or numpy Generator.

    Returns
    -------
    ContinualTasks
    """
    T = check_budget(n_tasks, "n_tasks", unit="tasks")
    m = check_int(n_hidden, "n_hidden", low=1)
    n_samples, d = check_size(n_samples, d, "continual_tasks", per_row=3 * T)
    if isinstance(similarity, (list, tuple, np.ndarray)):
        sims = list(np.asarray(similarity, dtype=object).ravel())
        if len(sims) != T - 1:
            raise ValueError(f"similarity has {len(sims)} entries; expected one per later task (n_tasks - 1 = {T - 1}) "
                             "or a single number")
        sims = [check_float(s, "each of similarity", low=-1.0, high=1.0) for s in sims]
    else:
        sims = [check_float(similarity, "similarity", low=-1.0, high=1.0)] * (T - 1)
    if d < m * T:
        raise ValueError(f"d={d} is too small for {T} tasks of {m} teacher units: the construction needs "
                         f"d >= n_hidden * n_tasks = {m * T} orthogonal directions")
    link = check_option(link, "link", tuple(SINGLE_INDEX_LINKS))
    g = SINGLE_INDEX_LINKS[link][0]
    noise = check_noise(noise)
    rng = numpy_rng(seed)
    Q = orthonormal(rng, d, m * T)
    W0 = Q[:m]
    teachers = [W0] + [s * W0 + math.sqrt(max(0.0, 1.0 - s * s)) * Q[m * t: m * (t + 1)]
                       for t, s in enumerate(sims, start=1)]
    teachers = np.stack(teachers)
    X = rng.standard_normal((T, n_samples, d))
    y_clean = np.stack([g(X[t] @ teachers[t].T).sum(axis=1) / math.sqrt(m) for t in range(T)])
    y = y_clean + noise * rng.standard_normal(y_clean.shape) if noise > 0 else y_clean.copy()
    return ContinualTasks(X=X, y=y, y_clean=y_clean, teachers=teachers, similarity=np.array([1.0] + sims),
                          link=link, noise=noise)


# --------------------------------------------------------------------------------------------------
# lazy / rich


