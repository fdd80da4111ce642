"""
Feature selection: SAND, MinShap p-values and stability
========================================================

The selectors are scikit-learn ``SelectorMixin`` estimators: ``scores_`` (higher is more
important), ``ranking_``, ``get_support()``, exactly ``k`` features when ``k`` is given. On data
where 4 of 20 features carry the target, we compare SAND (a noise-gain input layer, Pad et al.
2025), the AGOP of a Recursive Feature Machine and MinShap's p-values (k=None keeps the features
whose largest p-value is below 0.05), and how stable each selection is under bootstrap.
"""

import matplotlib.pyplot as plt
import numpy as np

import featurelens as fl

rng = np.random.default_rng(0)
X = rng.normal(size=(400, 20))
y = (X[:, 0] + X[:, 1] - X[:, 2] * X[:, 3] > 0).astype(int)      # features 0-3 matter
relevant = {0, 1, 2, 3}

sand = fl.selection.SAND(k=4, seed=0).fit(X, y)
agop = fl.selection.AGOPSelector(k=4).fit(X, y)
print("SAND keeps", np.flatnonzero(sand.get_support()), " AGOP keeps", np.flatnonzero(agop.get_support()))

# %%
# MinShap: a p-value per feature. Here it keeps the two features with main effects; the two
# factors of the product ``x2 x3`` are not kept at this sample size (their minimum marginal
# contribution is small for many orderings).
minshap = fl.selection.MinShapSelector(seed=0).fit(X, y)
print("MinShap keeps", np.flatnonzero(minshap.get_support()))

fig, axes = plt.subplots(1, 2, figsize=(9, 3))
for ax, (name, sel) in zip(axes, [("SAND", sand), ("AGOP", agop)]):
    ax.bar(range(20), sel.scores_ / np.max(sel.scores_),
           color=["tab:red" if i in relevant else "tab:grey" for i in range(20)])
    ax.set_title(f"{name} scores (relevant in red)")
    ax.set_xlabel("feature")
plt.tight_layout()

# %%
# Stability under bootstrap (Nogueira et al. 2018; 1 is the same selection every time)
st = fl.selection.stability(fl.selection.AGOPSelector(k=4), X, y, n_bootstrap=5, seed=0)
print(f"Nogueira {st['nogueira']:.2f}, Jaccard {st['jaccard']:.2f}; selection frequency per feature:")
print(st["frequency"])
