"""Mergeable AGOP and CKA accumulators against closed forms and the one-shot
functions: any partition of the rows, merged in any tree, gives the one-shot value; states travel
as plain dicts (pickle, JSON); settings that would make the sums meaningless are refused; shards
through an executor equal the serial path bit for bit; all_reduce over torch.distributed."""

import json
import os
import pickle
import socket
import tempfile
from itertools import pairwise

import numpy as np
import pytest
import torch
import torch.distributed as dist

import featurelens as fl
from featurelens.learning import AGOPAccumulator, CKAAccumulator, agop, cka
from featurelens.parallel import SerialExecutor, ThreadExecutor

PARTS = [0, 3, 20, 21, 47, 83]  # uneven partitions of 83 rows, one of a single row


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b)))


def _linear():
    torch.manual_seed(1)
    lin = torch.nn.Linear(6, 3).double()
    return lin, lin.weight.detach().numpy()


def _mlp(dropout=False):
    torch.manual_seed(2)
    layers = [torch.nn.Linear(5, 16), torch.nn.Tanh()]
    if dropout:
        layers.append(torch.nn.Dropout(0.5))
    layers.append(torch.nn.Linear(16, 3))
    return torch.nn.Sequential(*layers).double()


def _x(n=83, d=5, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, d)))


def _partitioned(model, X, parts=PARTS, **kw):
    """One accumulator per part, merged left to right."""
    accs = [AGOPAccumulator(model, **kw).update(X[a:b]) for a, b in pairwise(parts)]
    total = accs[0]
    for other in accs[1:]:
        total.merge(other)
    return total


def _to_json(state):
    def conv(v):
        if isinstance(v, np.ndarray):
            return {"shape": list(v.shape), "data": v.ravel().tolist()}
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    return json.dumps(conv(state))


def _from_json(text):
    def conv(v):
        if isinstance(v, dict) and set(v) == {"shape", "data"}:
            return np.array(v["data"], dtype=np.float64).reshape(v["shape"])
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    return conv(json.loads(text))


# --------------------------------------------------------------------------------------------------
# AGOP


def test_agop_merged_partitions_of_a_linear_model_equal_w_t_w():
    net, W = _linear()
    X = _x(d=6)
    # f(x) = W x + b: every Jacobian is W, so the AGOP over all outputs is W^T W for any data.
    full = _partitioned(net, X, target="all")
    assert full.count == 83
    assert _rel(full.result(), W.T @ W) < 1e-12
    diag = _partitioned(net, X, target="all", diag=True)
    assert diag.result().shape == (6,)
    assert _rel(diag.result(), np.sum(W**2, axis=0)) < 1e-12
    one = _partitioned(net, X, target=2)
    assert _rel(one.result(), np.outer(W[2], W[2])) < 1e-12


@pytest.mark.parametrize("target", [None, 1, "all"])
@pytest.mark.parametrize("diag", [False, True])
def test_agop_merged_equals_the_one_shot_function_on_an_mlp(target, diag):
    net = _mlp()
    X = _x()
    ref = fl.learning.agop(net, X, target=target, diag=diag)
    merged = _partitioned(net, X, target=target, diag=diag)
    assert _rel(merged.result(), ref) < 1e-12
    # a tree of merges in another order, with a state round trip on the way
    parts = [AGOPAccumulator(net, target=target, diag=diag, batch_size=4).update(X[a:b])
             for a, b in pairwise(PARTS)]
    right = AGOPAccumulator.from_state(parts[3].state()).merge(parts[4])
    left = parts[0].merge(parts[1]).merge(parts[2])
    assert _rel(right.merge(left).result(), ref) < 1e-12


def test_agop_per_row_targets_go_with_each_batch():
    net = _mlp()
    X = _x()
    y = np.arange(83) % 3
    ref = fl.learning.agop(net, X, target=y)
    acc = AGOPAccumulator(net)
    for a, b in pairwise(PARTS):
        acc.update(X[a:b], target=y[a:b])
    assert _rel(acc.result(), ref) < 1e-12


def test_agop_state_round_trips_through_pickle_and_json():
    net = _mlp()
    X = _x()
    acc = AGOPAccumulator(net, target="all").update(X[:40])
    state = acc.state()
    assert state["count"] == 40 and state["d"] == 5 and state["sum_outer"].dtype == np.float64
    again = AGOPAccumulator.from_state(pickle.loads(pickle.dumps(state)))
    assert np.array_equal(again.result(), acc.result())
    from_json = AGOPAccumulator.from_state(_from_json(_to_json(state)))
    assert np.array_equal(from_json.result(), acc.result())
    # with a model the rebuilt accumulator takes more rows, like the original
    cont = AGOPAccumulator.from_state(state, model=net).update(X[40:])
    assert np.array_equal(cont.result(), acc.update(X[40:]).result())
    # the state is a copy: later updates do not change it
    assert state["count"] == 40
    # an empty accumulator's state
    empty = AGOPAccumulator.from_state(AGOPAccumulator(net, target="all", diag=True).state())
    assert empty.count == 0 and empty.diag and empty.d is None
    d_acc = AGOPAccumulator(net, target="all", diag=True).update(X)
    assert np.array_equal(empty.merge(d_acc).result(), d_acc.result())


def test_agop_settings_mismatch_and_bad_input_are_refused():
    net = _mlp()
    X = _x()
    a = AGOPAccumulator(net, target="all").update(X[:5])
    with pytest.raises(ValueError, match="diag=False here, diag=True in other"):
        a.merge(AGOPAccumulator(net, target="all", diag=True).update(X[5:9]))
    with pytest.raises(ValueError, match="target='all' here, target=None in other"):
        a.merge(AGOPAccumulator(net).update(X[5:9]))
    other = torch.nn.Linear(7, 3).double()
    with pytest.raises(ValueError, match="d=5 here, d=7 in other"):
        a.merge(AGOPAccumulator(other, target="all").update(torch.randn(4, 7, dtype=torch.float64)))
    with pytest.raises(ValueError, match="keep the input dimension"):
        a.update(torch.randn(4, 7, dtype=torch.float64))
    with pytest.raises(TypeError, match="other must be an AGOPAccumulator"):
        a.merge(a.state())
    with pytest.raises(ValueError, match="into itself"):
        a.merge(a)
    assert a.count == 5  # nothing was added by the refused merges
    with pytest.raises(TypeError, match="per-row targets"):
        AGOPAccumulator(net, target=np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="target must be None, an int or 'all'; got 'every'"):
        AGOPAccumulator(net, target="every")
    with pytest.raises(ValueError, match="seen no rows"):
        AGOPAccumulator(net).result()
    with pytest.raises(RuntimeError, match="without a model"):
        AGOPAccumulator.from_state(a.state()).update(X[:3])
    bad = a.state()
    bad["sum_outer"] = bad["sum_outer"][:4]
    with pytest.raises(ValueError, match=r"sum_outer'\] must be a float64 array of shape \(5, 5\)"):
        AGOPAccumulator.from_state(bad)
    with pytest.raises(ValueError, match="missing keys"):
        AGOPAccumulator.from_state({"kind": "featurelens.AGOPAccumulator"})
    with pytest.raises(TypeError, match="needs gradients"):
        AGOPAccumulator(fl.models.Model(lambda x: x[:, :2]))


def test_agop_shards_through_executors_equal_the_serial_path_bitwise():
    net = _mlp()
    X = _x()
    shards = [X[a:b] for a, b in pairwise(PARTS)]
    ref = fl.learning.agop(net, X, target="all")
    serial = agop(net, shards, target="all")
    assert _rel(serial, ref) < 1e-12
    with SerialExecutor() as ex:
        assert np.array_equal(agop(net, shards, target="all", executor=ex), serial)
    with ThreadExecutor(3) as ex:
        # callables: each shard is loaded on the worker
        lazy = [lambda a=a, b=b: X[a:b].numpy() for a, b in pairwise(PARTS)]
        assert np.array_equal(agop(net, lazy, target="all", executor=ex), serial)
        assert np.array_equal(agop(net, shards=shards, target="all", executor=ex), serial)
        diag = agop(net, shards, target="all", diag=True, executor=ex)
    assert np.array_equal(diag, agop(net, iter(shards), target="all", diag=True))  # a generator
    assert _rel(diag, np.diag(ref)) < 1e-12
    # one batch through an executor is one shard: the one-shot value itself
    with ThreadExecutor(2) as ex:
        assert np.array_equal(agop(net, X, target="all", executor=ex), ref)


def test_agop_shards_on_threads_keep_the_model_in_eval_mode_and_restore_training():
    # Dropout is active in training mode; the AGOP is taken in eval mode. If one task's eval
    # context restored training mode while another task ran, that task would see dropout.
    net = _mlp(dropout=True).train()
    X = _x()
    shards = [X[i : i + 4] for i in range(0, 83, 4)]
    ref = fl.learning.agop(net, X, target="all")
    with ThreadExecutor(4) as ex:
        for _ in range(3):
            assert _rel(agop(net, shards, target="all", executor=ex), ref) < 1e-12
    assert net.training and all(m.training for m in net.modules())


def test_agop_shards_errors():
    net = _mlp()
    X = _x()
    with pytest.raises(TypeError, match="not both"):
        agop(net, X, shards=[X])
    with pytest.raises(TypeError, match="needs the data"):
        agop(net)
    with pytest.raises(ValueError, match="shards is empty"):
        agop(net, shards=[])
    with pytest.raises(TypeError, match="per-row targets"):
        agop(net, [X[:4], X[4:]], target=np.zeros(83, dtype=int))
    with pytest.raises(TypeError, match="executor must be a featurelens.parallel executor"):
        agop(net, [X[:4], X[4:]], executor=4)
    with ThreadExecutor(2) as ex, pytest.raises(fl.parallel.WorkerError, match="X contains NaN"):
        agop(net, [X[:4], X[4:] * np.nan], executor=ex)


# --------------------------------------------------------------------------------------------------
# CKA


@pytest.fixture
def reps():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(83, 7)) + 3.0  # uncentred on purpose
    B = A @ rng.normal(size=(7, 5)) + 0.8 * rng.normal(size=(83, 5)) - 2.0
    return A, B


def _hsic_gram(K, L, debiased):
    """HSIC from n x n Gram matrices, straight from the definitions (H = I - 11^T/n)."""
    n = K.shape[0]
    if not debiased:
        H = np.eye(n) - np.ones((n, n)) / n
        return np.trace(K @ H @ L @ H) / (n - 1) ** 2
    Kt = K - np.diag(np.diag(K))
    Lt = L - np.diag(np.diag(L))
    one = np.ones(n)
    return (np.trace(Kt @ Lt) + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
            - 2.0 / (n - 2) * (one @ Kt @ Lt @ one)) / (n * (n - 3))


def _cka_gram(A, B, debiased):
    K, L = A @ A.T, B @ B.T
    return _hsic_gram(K, L, debiased) / np.sqrt(_hsic_gram(K, K, debiased) * _hsic_gram(L, L, debiased))


@pytest.mark.parametrize("debiased", [False, True])
def test_cka_merged_partitions_equal_the_one_shot_value(reps, debiased):
    A, B = reps
    shift = (A[:3].mean(0), B[:3].mean(0))  # a first batch's means, shared by every part
    accs = [CKAAccumulator(debiased=debiased, shift=shift).update(A[a:b], B[a:b])
            for a, b in pairwise(PARTS)]
    tree = accs[0].merge(accs[1]).merge(accs[2].merge(accs[3])).merge(accs[4])
    assert tree.n_samples_ == 83
    assert tree.result() == pytest.approx(cka(A, B, debiased=debiased), rel=1e-12, abs=0)
    assert tree.result() == pytest.approx(_cka_gram(A, B, debiased), rel=1e-10, abs=0)
    # any shared shift gives the same value, to the conditioning of the uncentred sums: here no
    # shift at all (the data's means are 3 and -2 away from it)
    far = (np.zeros(7), np.zeros(5))
    accs = [CKAAccumulator(debiased=debiased, shift=far).update(A[a:b], B[a:b])
            for a, b in pairwise(PARTS)]
    for other in accs[1:]:
        accs[0].merge(other)
    assert accs[0].result() == pytest.approx(cka(A, B, debiased=debiased), rel=1e-10, abs=0)


def test_cka_empty_accumulators_merge_as_nothing_and_take_the_shift(reps):
    A, B = reps
    auto = CKAAccumulator().update(A[:30], B[:30])
    empty = CKAAccumulator()
    assert empty.merge(CKAAccumulator()).n_samples_ == 0
    empty.merge(auto)  # adopts the automatic shift of `auto`
    assert empty.result() == auto.result()
    more = CKAAccumulator(shift=auto.state()["shift"]).update(A[30:], B[30:])
    assert empty.merge(more).result() == pytest.approx(cka(A, B), rel=1e-12, abs=0)
    assert auto.n_samples_ == 30  # the merged-from accumulator is left as it was


def test_cka_state_round_trips_through_pickle_and_json(reps):
    A, B = reps
    shift = (A[:5].mean(0), B[:5].mean(0))
    acc = CKAAccumulator(shift=shift).update(A[:50], B[:50])
    state = acc.state()
    for again in (CKAAccumulator.from_state(pickle.loads(pickle.dumps(state))),
                  CKAAccumulator.from_state(_from_json(_to_json(state)))):
        assert again.result() == acc.result()
        assert again.result(debiased=False) == acc.result(debiased=False)
        again.update(A[50:], B[50:])
        assert again.result() == pytest.approx(cka(A, B), rel=1e-12, abs=0)
    auto = CKAAccumulator().update(A[:9], B[:9])
    assert CKAAccumulator.from_state(auto.state()).merge(
        CKAAccumulator(shift=auto.state()["shift"]).update(A[9:], B[9:])).result() == pytest.approx(cka(A, B), rel=1e-12)
    assert CKAAccumulator.from_state(CKAAccumulator().state()).n_samples_ == 0


def test_cka_merge_refuses_different_shifts_and_settings(reps):
    A, B = reps
    a = CKAAccumulator().update(A[:10], B[:10])
    b = CKAAccumulator().update(A[10:], B[10:])  # another automatic shift: its own first batch
    with pytest.raises(ValueError, match="different shifts of A.*shift=\\(shift_A, shift_B\\)"):
        a.merge(b)
    s = (A[:10].mean(0), B[:10].mean(0))
    t = (s[0], s[1] + 1e-12)
    with pytest.raises(ValueError, match="different shifts of B"):
        CKAAccumulator(shift=s).merge(CKAAccumulator(shift=t).update(A[10:], B[10:]))
    with pytest.raises(ValueError, match="debiased=True here, debiased=False in other"):
        CKAAccumulator(shift=s).merge(CKAAccumulator(debiased=False, shift=s))
    with pytest.raises(ValueError, match="different numbers of features of B: 5 here, 4 in other"):
        CKAAccumulator(shift=s).merge(CKAAccumulator(shift=(s[0], s[1][:4])))
    with pytest.raises(ValueError, match="match the lengths of shift"):
        CKAAccumulator(shift=s).update(A, B[:, :4])
    with pytest.raises(TypeError, match="other must be a CKAAccumulator"):
        a.merge(b.state())
    with pytest.raises(ValueError, match="into itself"):
        a.merge(a)
    assert a.n_samples_ == 10
    with pytest.raises(TypeError, match="shift must be None or a pair"):
        CKAAccumulator(shift=A[0])
    with pytest.raises(ValueError, match=r"shift\[1\] must be a 1-d vector"):
        CKAAccumulator(shift=(A[0], B[:2]))
    with pytest.raises(ValueError, match=r"shift\[0\] contains NaN"):
        CKAAccumulator(shift=(A[0] * np.nan, B[0]))
    bad = a.state()
    bad["sums"]["xy"] = bad["sums"]["xy"].T
    with pytest.raises(ValueError, match=r"state\['sums'\]\['xy'\] must have shape \(7, 5\)"):
        CKAAccumulator.from_state(bad)


def test_cka_reset_keeps_an_explicit_shift(reps):
    A, B = reps
    s = (A[:10].mean(0), B[:10].mean(0))
    acc = CKAAccumulator(shift=s).update(A, B)
    acc.reset()
    assert acc.n_samples_ == 0
    assert np.array_equal(acc.state()["shift"][0], s[0])


# --------------------------------------------------------------------------------------------------
# torch.distributed


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_all_reduce_without_a_process_group_is_refused():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="initialised torch.distributed process group"):
        AGOPAccumulator(_mlp()).all_reduce()
    with pytest.raises(RuntimeError, match="initialised torch.distributed process group"):
        CKAAccumulator().all_reduce()


def test_all_reduce_in_a_single_process_gloo_group(reps):
    A, B = reps
    net = _mlp()
    X = _x()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    try:
        acc = AGOPAccumulator(net, target="all").update(X)
        before = acc.state()
        acc.all_reduce()
        assert acc.count == 83 and np.array_equal(acc.result(), before["sum_outer"] / 83)
        assert AGOPAccumulator(net).all_reduce().count == 0  # no rank has rows
        cka_acc = CKAAccumulator().update(A, B)
        value = cka_acc.result()
        assert cka_acc.all_reduce().result() == value
        assert CKAAccumulator().all_reduce().n_samples_ == 0
    finally:
        dist.destroy_process_group()


def _two_rank_worker(rank, port, out_dir):
    """Rank r holds its own rows; after all_reduce each rank must hold the sums of all rows."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        net = _mlp()
        X = _x()
        rng = np.random.default_rng(0)
        A = rng.normal(size=(83, 7)) + 3.0
        B = A @ rng.normal(size=(7, 5)) + 0.8 * rng.normal(size=(83, 5)) - 2.0
        rows = slice(0, 30) if rank == 0 else slice(30, 83)
        agop_acc = AGOPAccumulator(net, target="all").update(X[rows]).all_reduce()
        shift = (A[:4].mean(0), B[:4].mean(0))
        cka_acc = CKAAccumulator(shift=shift).update(A[rows], B[rows]).all_reduce()
        # rank 1 has no rows and no shift: it adopts rank 0's automatic one
        lone = CKAAccumulator()
        if rank == 0:
            lone.update(A, B)
        lone.all_reduce()
        lone_agop = AGOPAccumulator(net, target="all", diag=True)
        if rank == 1:
            lone_agop.update(X)
        lone_agop.all_reduce()
        refused = ""
        try:
            AGOPAccumulator(net, target="all", diag=rank == 1).update(X[:3]).all_reduce()
        except ValueError as err:
            refused = str(err)
        np.savez(os.path.join(out_dir, f"rank{rank}.npz"), agop=agop_acc.result(), cka=cka_acc.result(),
                 lone=lone.result(), lone_agop=lone_agop.result(), count=agop_acc.count, refused=refused)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_all_reduce_over_two_processes_sums_the_ranks(reps):
    A, B = reps
    net = _mlp()
    X = _x()
    with tempfile.TemporaryDirectory() as out:
        torch.multiprocessing.spawn(_two_rank_worker, args=(_free_port(), out), nprocs=2, join=True)
        res = [dict(np.load(os.path.join(out, f"rank{r}.npz"))) for r in (0, 1)]
    ref_agop = fl.learning.agop(net, X, target="all")
    for r in res:
        assert int(r["count"]) == 83
        assert _rel(r["agop"], ref_agop) < 1e-12
        assert float(r["cka"]) == pytest.approx(cka(A, B), rel=1e-12, abs=0)
        assert float(r["lone"]) == pytest.approx(cka(A, B), rel=1e-12, abs=0)
        assert _rel(r["lone_agop"], np.diag(ref_agop)) < 1e-12
        assert "the ranks differ in target and diag" in str(r["refused"])
    assert np.array_equal(res[0]["agop"], res[1]["agop"])
