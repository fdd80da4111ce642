"""
Interactions: exact indices on a small game, SPEX on a thousand players
========================================================================

A *game* maps each coalition of players (features kept) to a value. On a few players every
coalition can be evaluated and every interaction index computed exactly from the Möbius transform;
on a thousand players SPEX (Kang et al. 2025) recovers a sparse set of interactions from sampled
coalitions. Here the thousand-player game has 40 planted terms, so we can check what SPEX finds.
"""

import matplotlib.pyplot as plt
import numpy as np

import featurelens as fl

# %%
# Exact interactions of a small model
# -----------------------------------
# ``y = 2 x0 x1 - x2 + 0.5 x3``: the pair (0, 1) interacts, 2 and 3 act alone.
def f(X):
    return 2 * X[:, 0] * X[:, 1] - X[:, 2] + 0.5 * X[:, 3]


x = np.ones(6)
g = fl.games.MaskedModel(f, x, baseline=0.0)
I = fl.interactions.exact(g, index="fsii", max_order=2)
print(I.top(4))
phi = fl.interactions.exact(g, index="shapley").dense(order=1)
print("Shapley values:", phi.round(3), " sum:", phi.sum().round(3), "= f(x) - f(0):", f(x[None])[0] - f(0 * x[None])[0])

fl.plots.interaction_heatmap(I.dense(order=2), feature_names=[f"x{i}" for i in range(6)])
plt.tight_layout()

# %%
# SPEX on a planted sparse game of 1000 players
# ---------------------------------------------
toy = fl.datasets.sparse_game(n=1000, n_terms=40, max_degree=3, basis="mobius", seed=0)
S = fl.interactions.spex(toy, budget=15000, max_order=3, seed=0)
print(f"queries: {S.queries}, R^2 on random coalitions: {S.r2(toy):.4f}")
found = {tuple(sorted(t)) for t, _ in S.to("mobius").top(40)}
planted = {tuple(sorted(t)) for t in toy.terms if t}   # toy.terms also holds the constant term ()
print(f"planted terms recovered among the 40 strongest: {len(found & planted)} of {len(planted)}")
est = dict(S.to("mobius").top(40))
true = [toy.terms[t] for t in sorted(planted)]
got = [est.get(t, 0.0) for t in sorted(planted)]
fig, ax = plt.subplots(figsize=(4, 4))
ax.scatter(true, got)
ax.plot([-2, 2], [-2, 2], color="grey", lw=0.5)
ax.set_xlabel("planted coefficient")
ax.set_ylabel("SPEX estimate")
plt.tight_layout()
