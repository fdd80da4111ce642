"""
TreeSHAP on a gradient-boosted classifier: log-odds and probability
=====================================================================

Exact TreeSHAP (Lundberg et al. 2020) on scikit-learn's GradientBoostingClassifier trained on the
breast-cancer data that ships with scikit-learn (no download). A binary booster's raw output is its
margin, the **log-odds** of class 1: the values add up to ``gbc.decision_function``. Ask for
``output="probability"`` (with a background, interventional) and they add up to
``predict_proba[:, 1]`` instead. The plots say which units they show.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.model_selection import train_test_split

import featurelens as fl

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
gbc = GradientBoostingClassifier(n_estimators=100, random_state=0).fit(X_train, y_train)

# %%
# Path-dependent TreeSHAP, in the booster's own units (log-odds)
# ----------------------------------------------------------------
t = fl.explainer("tree_shap", gbc).explain(X_test, target=1)
print(t.output, t.values.shape)
gap = np.abs(t.base_values + t.values.sum(1) - gbc.decision_function(X_test)).max()
print(f"largest |base + sum(values) - decision_function|: {gap:.2e}")

fl.plots.beeswarm(t)
plt.tight_layout()

# %%
# One row: the waterfall from the base value to the prediction
fl.plots.waterfall(t[0])
plt.tight_layout()

# %%
# The same rows in probability units
# ----------------------------------
# Interventional TreeSHAP over a background (shap's ``model_output="probability"``): the values
# now add up to ``predict_proba[:, 1]``.
background = fl.games.summarize_background(X_train, k=20, seed=0)
p = fl.explainer("tree_shap", gbc, background=background, output="probability").explain(X_test.iloc[:50], target=1)
gap = np.abs(p.base_values + p.values.sum(1) - gbc.predict_proba(X_test.iloc[:50])[:, 1]).max()
print(p.output, f"largest |base + sum(values) - predict_proba|: {gap:.2e}")

fl.plots.waterfall(p[0])
plt.tight_layout()
