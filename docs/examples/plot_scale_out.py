"""
Scale-out: the same explanation on threads, equal to serial
============================================================

``explain(X, executor=ex)`` splits the rows across an executor's workers; each row draws from its
own random stream (``SeedSequence(seed, spawn_key=(row,))``), so the values are the serial ones,
bit for bit. Threads suit a model behind an API (time spent waiting) or one that releases the
GIL; ``ProcessExecutor``, ``RayExecutor`` and ``DaskExecutor`` take the same place on one machine
or a cluster (see :mod:`featurelens.parallel`).
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import featurelens as fl
from featurelens.parallel import ThreadExecutor

X, y = load_breast_cancer(return_X_y=True)
clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
background = X[:16]


def slow_model(rows):
    """predict_proba behind a 5 ms round trip, like a model served over HTTP."""
    time.sleep(0.005)
    return clf.predict_proba(rows)


explainer = fl.explainer("kernel_shap", slow_model, background=background, budget=128, seed=0)

start = time.perf_counter()
serial = explainer.explain(X[:8], target=1)
serial_s = time.perf_counter() - start

with ThreadExecutor(8) as ex:
    start = time.perf_counter()
    threaded = explainer.explain(X[:8], target=1, executor=ex)
    threaded_s = time.perf_counter() - start

print("equal to serial, bit for bit:", np.array_equal(serial.values, threaded.values))
print(f"serial {serial_s:.2f} s, 8 threads {threaded_s:.2f} s")

fig, ax = plt.subplots(figsize=(4, 2.5))
ax.bar(["serial", "8 threads"], [serial_s, threaded_s])
ax.set_ylabel("seconds (8 rows)")
plt.tight_layout()
