"""Brute-force references shared by several test modules (independent of the code under test)."""

import math
from itertools import combinations

import numpy as np


def brute_shapley(game) -> np.ndarray:
    """phi_i = sum_{S not containing i} |S|!(n-|S|-1)!/n! (v(S+i) - v(S)), one coalition at a time
    (independent of the table routine)."""
    n = game.n_players
    phi = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for s in range(n):
            w = math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
            for subset in combinations(others, s):
                m = np.zeros(n, dtype=bool)
                m[list(subset)] = True
                with_i = m.copy()
                with_i[i] = True
                phi[i] += w * (game(with_i)[0] - game(m)[0])
    return phi
