"""Size-like arguments (widths, hidden sizes, random features) are estimated against memory before
anything is allocated (issue 33, item 6): ``featurelens._budgets.check_sizes`` refuses them fast,
naming the argument responsible, its value, the parameters and the memory."""

import time

import numpy as np
import pytest

import featurelens._budgets as budgets
from featurelens._budgets import check_sizes, training_bytes
from featurelens.learning import RFRBoostRegressor
from featurelens.selection import SAND, HyperDFS

GB = 10**9


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    return X, (X[:, 0] > 0).astype(int)


def test_training_bytes_counts_parameters_gradients_moments_and_activations_exactly():
    assert training_bytes(10) == 4 * 4 * 10
    assert training_bytes(10, 5, itemsize=8) == 8 * (40 + 15)
    assert training_bytes(2**100) == 16 * 2**100  # ints of any size, no overflow


def test_check_sizes_names_the_argument_that_frees_the_most_memory():
    def estimate(a, b):
        return a * b + b * b, training_bytes(a * b + b * b)

    check_sizes({"a": 10, "b": 10}, estimate, "a toy", limit=GB)  # 3.2 KB: accepted
    with pytest.raises(ValueError, match=r"^b=100000 \(a=10; a toy\) needs about 1e\+10 parameters, about 160 GB "
                                         r"of memory to train, more than the 1 GB available; lower b$"):
        check_sizes({"a": 10, "b": 100_000}, estimate, "a toy", limit=GB)


@pytest.mark.parametrize("name, value, size", [("width", 2**20, "317 TB"), ("hyper_hidden", 2**22, "493 TB"),
                                               ("classifier_hidden", 2**24, "727 GB")])
def test_hyperdfs_sizes_are_refused_before_allocation(data, name, value, size, monkeypatch):
    # before: allocator RuntimeErrors (width, hyper_hidden) and a 37 s run to a 5.6 GB peak (classifier_hidden)
    monkeypatch.setattr(budgets, "available_memory", lambda: 16 * GB)  # as on a 16 GB machine, whatever this one has
    X, y = data
    start = time.perf_counter()
    with pytest.raises(ValueError, match=rf"^{name}={value} \(.*HyperDFS on 4 features, 2 classes\) needs about "
                                         rf"[0-9.e+]+ parameters, about {size} of memory to train, more than the 16 GB "
                                         rf"available; lower {name}$"):
        HyperDFS(budget=2, n_heads=1, **{name: value}).fit(X, y)
    assert time.perf_counter() - start < 20.0  # refused before work (hours at these sizes), not a speed check


def test_hyperdfs_default_sizes_need_little_memory():
    from featurelens.selection.dynamic import _network_size

    params, nbytes = _network_size(7, 4, 2, 128, width=32, hyper_hidden=64, classifier_hidden=16)
    assert params == 35_791 and nbytes < 0.25 * GB
    # a wide generated classifier no longer holds 4096 rows of its parameters in one pass
    assert _network_size(7, 4, 2, 128, width=32, hyper_hidden=64, classifier_hidden=2**16)[1] < 6 * GB


def test_sand_hidden_widths_are_refused_before_allocation(data, monkeypatch):
    # before: hidden=(2**30,) ran 78 s into an allocator error
    monkeypatch.setattr(budgets, "available_memory", lambda: 8 * GB)
    X, y = data
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"^hidden=\(1073741824,\) \(SAND's MLP on 4 features\) needs about 7.52e\+09 "
                                         r"parameters, about 893 GB of memory to train, more than the 8 GB available; "
                                         r"lower hidden$"):
        SAND(k=2, hidden=(2**30,), epochs=1).fit(X, y)
    with pytest.raises(ValueError, match=r"^hidden=\(65536, 65536\) .* about 68.8 GB of memory to train, more than "
                                         r"the 8 GB available; lower hidden$"):
        SAND(k=2, hidden=(2**16, 2**16), epochs=1).fit(X, y)
    assert time.perf_counter() - start < 20.0  # refused before work (hours at these sizes), not a speed check
    SAND(k=2, hidden=(16,), epochs=1).fit(X, y)  # small widths pass under the same 8 GB


def test_rfrboost_names_hidden_dim_when_it_is_the_size_too_large(data):
    # before: "n_features=256 (256 random features per layer, ...) would need about 11.3 TB"
    X, _ = data
    with pytest.raises(ValueError, match=r"^hidden_dim=1073741824 \(n_features=256; RFRBoostRegressor with n_layers=5 "
                                         r"on 60 rows of 4 features\) needs .* lower hidden_dim$"):
        RFRBoostRegressor(hidden_dim=2**30).fit(X, X[:, 0])
    with pytest.raises(ValueError, match=r"^n_features=1073741824 \(RFRBoostRegressor .*\) needs .* lower n_features$"):
        RFRBoostRegressor(n_features=2**30).fit(X, X[:, 0])
