"""
Scale-out: the same explanation on threads, Ray and Dask, equal to serial
==========================================================================

``explain(X, executor=ex)`` splits the rows across an executor's workers; each row draws from its
own random stream (``SeedSequence(seed, spawn_key=(row,))``), so the values are the serial ones,
bit for bit, whatever runs them. Threads suit a model behind an API (time spent waiting) or one
that releases the GIL; ``ProcessExecutor``, ``RayExecutor`` and ``DaskExecutor`` take the same
place on one machine or a cluster (see :mod:`featurelens.parallel`). Here Ray and Dask run as
local clusters of 2 workers (Ray's bound to 127.0.0.1, Dask's inside this process); on a real
cluster only the address changes.
"""

import logging
import os
import time

# Ray on Linux otherwise advertises the machine's routable address; with this variable at 0 (read
# when ray is imported) every node and worker of a local Ray uses 127.0.0.1.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import featurelens as fl
from featurelens.parallel import DaskExecutor, RayExecutor, ThreadExecutor

X, y = load_breast_cancer(return_X_y=True)
clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
background = X[:16]


def slow_model(rows):
    """predict_proba behind a 5 ms round trip, like a model served over HTTP."""
    time.sleep(0.005)
    return clf.predict_proba(rows)


explainer = fl.explainer("kernel_shap", slow_model, background=background, budget=128, seed=0)
runs, seconds = {}, {}


def timed(name, executor=None):
    start = time.perf_counter()
    runs[name] = explainer.explain(X[:8], target=1, executor=executor)
    seconds[name] = time.perf_counter() - start


timed("serial")

# %%
# Threads
# -------
with ThreadExecutor(8) as ex:
    timed("8 threads", ex)
print("threads equal to serial, bit for bit:", np.array_equal(runs["serial"].values, runs["8 threads"].values))

# %%
# A local Ray cluster
# -------------------
# ``ray.init`` with 2 CPUs and no dashboard starts a cluster on this machine (a few seconds); the
# executor starts one actor per worker, each a long-lived process that receives the explainer
# (pickled once per call) and a share of the rows. ``ray.init(address="auto")`` or
# ``RayExecutor(address="ray://head:10001")`` would join a real cluster instead.
import ray  # noqa: E402

ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
print("Ray nodes:", [node["NodeManagerAddress"] for node in ray.nodes()])
with RayExecutor(num_workers=2) as ex:
    timed("Ray, 2 actors", ex)
ray.shutdown()
print("Ray equal to serial, bit for bit:", np.array_equal(runs["serial"].values, runs["Ray, 2 actors"].values))

# %%
# A Dask LocalCluster
# -------------------
# A scheduler and 2 single-threaded workers; ``Client("tcp://scheduler:8786")`` would use a
# running cluster instead. The workers here live in this process (``processes=False``: Dask's
# in-process transport, no port opened), so that this file also runs as a plain script: Dask
# starts worker *processes* by spawning them, a spawned process imports the main script again,
# and a script that starts them must keep its work under ``if __name__ == "__main__":``
# (``processes=True, host="127.0.0.1"`` then gives worker processes on loopback).
from distributed import Client, LocalCluster  # noqa: E402

with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                  silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
    with DaskExecutor(client) as ex:
        timed("Dask, 2 workers", ex)
print("Dask equal to serial, bit for bit:", np.array_equal(runs["serial"].values, runs["Dask, 2 workers"].values))

# %%
# Same values, different wall times
# ---------------------------------
# Left: each executor's values against the serial ones (every point on the diagonal). Right: the
# wall time of the 8 rows, which on a small job is mostly the workers' start-up and round trips;
# the gain grows with the rows and with the time each model call waits.
for name, s in seconds.items():
    print(f"{name:18s} {s:6.2f} s")
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3))
for name, e in runs.items():
    if name != "serial":
        ax0.scatter(runs["serial"].values.ravel(), e.values.ravel(), s=10, label=name, alpha=0.6)
ax0.set_xlabel("serial value")
ax0.set_ylabel("value on the executor")
ax0.legend(fontsize=8)
ax1.barh(list(seconds), list(seconds.values()))
ax1.set_xlabel("seconds (8 rows, 128 coalitions each)")
plt.tight_layout()
