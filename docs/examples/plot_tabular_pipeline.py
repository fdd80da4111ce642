"""
LightGBM TreeSHAP, dependence plots, units, and a Pipeline explained on its own columns
=========================================================================================

Three things a tabular user meets on the first day:

1. exact TreeSHAP on a LightGBM booster (read from ``Booster.dump_model()``; the values add up to
   ``predict(raw_score=True)``) and shap's three plots: beeswarm, waterfall and dependence;
2. the units: a binary booster's raw output is the **log-odds** of class 1; ``output="probability"``
   explains ``predict_proba`` instead, and the two sets of values are *not* a transform of each
   other (a sigmoid does not distribute over a sum);
3. a scikit-learn ``Pipeline`` whose ``ColumnTransformer`` one-hot encodes a category column: the
   black-box explainers see the columns *you* passed in (one value for ``city``, not one per
   one-hot column), and the category strings come back for the plots.

Everything runs on data that ships with scikit-learn or is made here (no download).
"""

import lightgbm as lgb
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import featurelens as fl

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X.columns = [c.replace(" ", "_") for c in X.columns]  # LightGBM's own spelling of the names
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
booster = lgb.LGBMClassifier(n_estimators=100, num_leaves=15, learning_rate=0.1, random_state=0,
                             n_jobs=1, verbose=-1).fit(X_train, y_train)

# %%
# Exact TreeSHAP on LightGBM, in the booster's units (log-odds)
# --------------------------------------------------------------
# Path-dependent TreeSHAP (the trees' own cover, no background): ``base + sum(values)`` is the
# booster's margin, which LightGBM returns with ``raw_score=True``.
t = fl.explainer("tree_shap", booster).explain(X_test, target=1)
margin = booster.predict(X_test, raw_score=True)
print(t.output, t.values.shape)
print(f"largest |base + sum(values) - raw_score|: {np.abs(t.base_values + t.values.sum(1) - margin).max():.1e}")

fl.plots.beeswarm(t, max_display=8)
plt.title("LightGBM, log-odds of class 1 (benign)")
plt.tight_layout()

# %%
# The waterfall of one row: from the base value (the average margin) to this row's margin.
fl.plots.waterfall(t[0], max_display=8)
plt.tight_layout()

# %%
# A dependence plot: one feature's value against its attribution, coloured by the feature whose
# value explains most of the remaining vertical spread (``interaction_index="auto"``, as shap's).
fl.plots.dependence("worst_concave_points", t)
plt.tight_layout()

# %%
# Probability instead of log-odds
# -------------------------------
# Interventional TreeSHAP over a background: with ``output="probability"`` the values add up to
# ``predict_proba[:, 1]``. The two are not a transform of each other: near p = 0 or 1 the sigmoid
# is flat, so a row whose log-odds values are large can have small probability values, and the
# order of the features by their mean absolute value can change (here the top three agree).
background = fl.games.summarize_background(X_train, k=20, seed=0)
rows = X_test.iloc[:40]
p = fl.explainer("tree_shap", booster, background=background, output="probability").explain(rows, target=1)
lo = fl.explainer("tree_shap", booster, background=background).explain(rows, target=1)
gap = np.abs(p.base_values + p.values.sum(1) - booster.predict_proba(rows)[:, 1]).max()
print(p.output, f"largest |base + sum(values) - predict_proba|: {gap:.1e}")
print(lo.output, f"largest |base + sum(values) - raw_score|: "
      f"{np.abs(lo.base_values + lo.values.sum(1) - booster.predict(rows, raw_score=True)).max():.1e}")

for name, ex in (("log-odds", lo), ("probability", p)):
    top = np.argsort(-np.abs(ex.values).mean(0))[:3]
    print(f"{name:12s} top 3 by mean |value|:", [ex.feature_names[i] for i in top])

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
fl.plots.waterfall(lo[0], max_display=6, ax=axes[0])
axes[0].set_title("log-odds")
fl.plots.waterfall(p[0], max_display=6, ax=axes[1])
axes[1].set_title("probability")
plt.tight_layout()

# %%
# A Pipeline with a ColumnTransformer, explained on the original columns
# -----------------------------------------------------------------------
# A frame with two numeric columns and a category column ``city``; the planted rule: the odds
# rise with ``income``, fall with ``age`` and are higher in Oslo. The pipeline scales the numbers
# and one-hot encodes the city itself.
rng = np.random.default_rng(0)
n = 600
frame = pd.DataFrame({
    "age": rng.normal(40, 10, n),
    "income": rng.normal(5, 1, n),
    "city": rng.choice(["Lima", "Oslo", "Rome"], n),
})
logit = 1.5 * (frame["income"] - 5) - 0.08 * (frame["age"] - 40) + 1.5 * (frame["city"] == "Oslo") - 0.5
target = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
pipe = Pipeline([
    ("encode", ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                  ("cat", OneHotEncoder(), ["city"])])),
    ("clf", LogisticRegression()),
]).fit(frame, target)

# %%
# KernelSHAP on the pipeline: three players, ``age``, ``income`` and ``city``. A removed column
# takes its values from the background rows (strings included: the model codes ``city`` as
# integers for the coalitions and decodes them before every call). Three players have 8
# coalitions, so a budget of 8 is exact. ``output="log_odds"`` puts the values on the scale the
# rule was planted in.
shap_pipe = fl.explainer("kernel_shap", pipe, background=frame.sample(50, random_state=0), budget=8,
                         output="log_odds", seed=0)
e = shap_pipe.explain(frame.iloc[:200], target=1)
print(e.feature_names, e.values.shape)
print("categories of the coded columns:", e.params["categories"])
print("mean |value| per column:", {n: round(float(v), 3) for n, v in zip(e.feature_names, np.abs(e.values).mean(0))})

fl.plots.beeswarm(e)
plt.title("Pipeline, log-odds, one value per original column")
plt.tight_layout()

# %%
# The city's attribution, per city: Oslo's rows gain what the rule planted, the others lose a
# share of it (the values are relative to the background's mix of cities).
fig, ax = plt.subplots(figsize=(4, 3))
city = frame["city"].iloc[:200]
j = e.feature_names.index("city")
for k, name in enumerate(sorted(city.unique())):
    ax.scatter(np.full((city == name).sum(), k) + rng.uniform(-0.15, 0.15, (city == name).sum()),
               e.values[(city == name).to_numpy(), j], s=8)
ax.set_xticks(range(3), sorted(city.unique()))
ax.set_ylabel("SHAP value of city (log-odds)")
plt.tight_layout()
