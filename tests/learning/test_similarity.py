"""CKA, effective rank, compression/discrimination and linear probes against independent
references: HSIC with explicit centred Gram matrices, analytic invariances, planted spectra."""

import numpy as np
import pytest
import scipy.spatial.distance
import torch

import featurelens as fl
from featurelens.learning import CKAAccumulator, cka, compression_discrimination, effective_rank, linear_probe


def _hsic_gram(K, L, debiased):
    """HSIC from n x n Gram matrices, straight from the definitions (H = I - 11^T/n)."""
    n = K.shape[0]
    if not debiased:
        H = np.eye(n) - np.ones((n, n)) / n
        return np.trace(K @ H @ L @ H) / (n - 1) ** 2
    Kt = K - np.diag(np.diag(K))
    Lt = L - np.diag(np.diag(L))
    one = np.ones(n)
    return (
        np.trace(Kt @ Lt) + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * (one @ Kt @ Lt @ one)
    ) / (n * (n - 3))


def _cka_gram(K, L, debiased):
    return _hsic_gram(K, L, debiased) / np.sqrt(_hsic_gram(K, K, debiased) * _hsic_gram(L, L, debiased))


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(60, 7)) + 3.0  # uncentred on purpose
    B = A @ rng.normal(size=(7, 5)) + 0.8 * rng.normal(size=(60, 5)) - 2.0
    return A, B


@pytest.mark.parametrize("debiased", [False, True])
def test_linear_cka_equals_gram_hsic(pair, debiased):
    A, B = pair
    expected = _cka_gram(A @ A.T, B @ B.T, debiased)
    assert cka(A, B, debiased=debiased) == pytest.approx(expected, rel=1e-10)
    assert 0.2 < expected < 0.99  # a non-trivial value


@pytest.mark.parametrize("debiased", [False, True])
def test_linear_cka_gram_and_feature_forms_agree(debiased):
    rng = np.random.default_rng(8)
    A = rng.normal(size=(30, 100)) + 1.0  # n (p + q) < p^2 + q^2 + p q: "auto" takes the Gram form
    B = A[:, :60] @ rng.normal(size=(60, 80)) + 5.0 * rng.normal(size=(30, 80))
    expected = _cka_gram(A @ A.T, B @ B.T, debiased)
    for method in ("auto", "gram", "features"):
        assert cka(A, B, debiased=debiased, method=method) == pytest.approx(expected, rel=1e-10), method
    for debiased_ in (False, True):
        with pytest.raises(ValueError, match="A has zero variance"):
            cka(np.full((30, 100), 0.1), B, debiased=debiased_, method="gram")
    with pytest.raises(ValueError, match="method must be one of"):
        cka(A, B, method="dual")


@pytest.mark.parametrize("debiased", [False, True])
def test_rbf_cka_equals_gram_hsic(pair, debiased):
    A, B = pair

    def rbf(X):
        D = scipy.spatial.distance.squareform(scipy.spatial.distance.pdist(X))
        sigma = 0.7 * np.median(D[np.triu_indices(len(X), 1)])
        return np.exp(-(D**2) / (2 * sigma**2))

    import scipy.spatial

    expected = _cka_gram(rbf(A), rbf(B), debiased)
    assert cka(A, B, kernel="rbf", debiased=debiased, median_factor=0.7) == pytest.approx(expected, rel=1e-9)
    # an explicit bandwidth is used for both matrices
    D_A = np.exp(-scipy.spatial.distance.squareform(scipy.spatial.distance.pdist(A, "sqeuclidean")) / (2 * 4.0))
    D_B = np.exp(-scipy.spatial.distance.squareform(scipy.spatial.distance.pdist(B, "sqeuclidean")) / (2 * 4.0))
    assert cka(A, B, kernel="rbf", debiased=debiased, sigma=2.0) == pytest.approx(_cka_gram(D_A, D_B, debiased), rel=1e-9)


@pytest.mark.slow
def test_debiased_cka_of_independent_data_is_near_zero():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 2048))
    Y = rng.normal(size=(2000, 2048))
    # One pass over the data gives both estimators (the accumulator is exact: tested below).
    acc = CKAAccumulator().update(X, Y)
    debiased, biased = acc.compute(), acc.compute(debiased=False)
    assert abs(debiased) < 0.05
    # the biased estimator is far from the population value 0 when d ~ n
    assert biased > 0.4


@pytest.mark.parametrize("debiased", [False, True])
def test_cka_invariances(pair, debiased):
    A, B = pair
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.normal(size=(7, 7)))
    assert cka(A, A @ Q, debiased=debiased) == pytest.approx(1.0, abs=1e-12)
    base = cka(A, B, debiased=debiased)
    assert cka(3.7 * A, B, debiased=debiased) == pytest.approx(base, rel=1e-12)
    assert cka(A, 0.01 * B, kernel="rbf", debiased=debiased) == pytest.approx(
        cka(A, B, kernel="rbf", debiased=debiased), rel=1e-9
    )
    assert cka(A, B + 100.0, debiased=debiased) == pytest.approx(base, rel=1e-9)  # translations
    assert cka(B, A, debiased=debiased) == pytest.approx(base, rel=1e-12)  # symmetric


def test_cka_torch_input_and_flattening(pair):
    A, B = pair
    At = torch.from_numpy(A).float().reshape(60, 7, 1)
    assert cka(At, torch.from_numpy(B)) == pytest.approx(cka(A.astype(np.float32), B), rel=1e-12)


@pytest.mark.parametrize("debiased", [False, True])
def test_accumulator_is_exact(pair, debiased):
    A, B = pair
    acc = CKAAccumulator(debiased=debiased)
    for start in range(0, 60, 7):  # uneven batches, the last of 4 rows, some of < 4 rows would also do
        acc.update(A[start : start + 7], B[start : start + 7])
    assert acc.n_samples_ == 60
    assert acc.compute() == pytest.approx(cka(A, B, debiased=debiased), rel=1e-10)
    acc.reset()
    for start in range(0, 60, 3):  # batches of 3 rows: still exact (not the minibatch estimator)
        acc.update(A[start : start + 3], B[start : start + 3])
    assert acc.compute() == pytest.approx(_cka_gram(A @ A.T, B @ B.T, debiased), rel=1e-10)
    assert acc.compute(debiased=not debiased) == pytest.approx(_cka_gram(A @ A.T, B @ B.T, not debiased), rel=1e-10)
    # far from the origin: the shift (the first batch's mean) keeps the sums well conditioned
    acc.reset()
    for start in range(0, 60, 3):
        acc.update(A[start : start + 3] + 1e5, B[start : start + 3] - 1e5)
    assert acc.compute() == pytest.approx(cka(A, B, debiased=debiased), rel=1e-8)


def test_accumulator_errors(pair):
    A, B = pair
    acc = CKAAccumulator()
    acc.update(A[:3], B[:3])
    with pytest.raises(ValueError, match="at least 4 samples"):
        acc.compute()
    with pytest.raises(ValueError, match="keep their numbers of features"):
        acc.update(A[:3, :5], B[:3])


def test_cka_errors(pair):
    A, B = pair
    with pytest.raises(ValueError, match="same number of rows"):
        cka(A, B[:-1])
    with pytest.raises(ValueError, match="at least 4 samples"):
        cka(A[:3], B[:3], debiased=True)
    assert np.isfinite(cka(A[:3], B[:3], debiased=False))
    bad = A.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match="A contains NaN"):
        cka(bad, B)
    with pytest.raises(ValueError, match="kernel must be one of"):
        cka(A, B, kernel="cosine")
    with pytest.raises(ValueError, match="feature matrix"):
        cka(A[:, 0], B)
    with pytest.raises(TypeError, match="floating-point"):
        cka(A.astype(int), B)
    for debiased in (False, True):
        with pytest.raises(ValueError, match="A has zero variance"):
            cka(np.ones((10, 3)), B[:10], debiased=debiased)
        with pytest.raises(ValueError, match="B has zero variance"):  # a mean that rounds
            cka(A[:10], np.full((10, 3), 0.1), debiased=debiased)
    with pytest.raises(ValueError, match="sigma must be"):
        cka(A, B, kernel="rbf", sigma=-1.0)
    acc = CKAAccumulator().update(np.full((3, 2), 0.3), B[:3]).update(np.full((3, 2), 0.3), B[3:6])
    with pytest.raises(ValueError, match="A has zero variance"):
        acc.compute()


def test_effective_rank_planted_spectrum():
    rng = np.random.default_rng(3)
    for r in (1, 3, 8):
        U, _ = np.linalg.qr(rng.normal(size=(40, r)))
        V, _ = np.linalg.qr(rng.normal(size=(25, r)))
        A = 2.5 * U @ V.T  # rank r, r equal singular values
        assert effective_rank(A, method="roy") == pytest.approx(r, abs=1e-9)
        assert effective_rank(A, method="rankme") == pytest.approx(r, rel=1e-4)
    # two singular values 3 and 1: p = (3/4, 1/4), erank = exp(H(p))
    A = np.diag([3.0, 1.0, 0.0])
    p = np.array([0.75, 0.25])
    assert effective_rank(A) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-12)
    # RankMe's epsilon, straight from its definition
    q = np.array([0.75, 0.25, 0.0]) + 1e-7
    assert effective_rank(A, method="rankme") == pytest.approx(np.exp(-(q * np.log(q)).sum()), rel=1e-12)
    # centring: a constant offset on a rank-1 matrix
    assert effective_rank(np.ones((6, 4)) + 0.0, center=False) == pytest.approx(1.0)


def test_effective_rank_errors():
    with pytest.raises(ValueError, match="method must be one of"):
        effective_rank(np.eye(3), method="stable")
    with pytest.raises(ValueError, match="no non-zero singular value"):
        effective_rank(np.ones((5, 3)), center=True)
    with pytest.raises(ValueError, match="contains NaN"):
        effective_rank(np.full((3, 3), np.nan))


def _planted_layers(rng, n_per=40, C=4, d=12):
    y = np.repeat(np.arange(C), n_per)
    means = rng.normal(size=(C, d)) * 3
    noisy = means[y] + rng.normal(size=(len(y), d)) * 2.0
    tight = means[y] + rng.normal(size=(len(y), d)) * 0.1
    return y, noisy, tight


def test_compression_discrimination_against_definitions():
    rng = np.random.default_rng(4)
    y, noisy, tight = _planted_layers(rng)
    out = compression_discrimination({"noisy": noisy, "tight": tight}, y)
    assert list(out) == ["noisy", "tight"]
    for name, H in (("noisy", noisy), ("tight", tight)):
        mus = np.stack([H[y == c].mean(0) for c in range(4)])
        Sw = sum(np.outer(h - mus[c], h - mus[c]) for h, c in zip(H, y)) / len(H)
        mg = mus.mean(0)
        Sb = sum(np.outer(m - mg, m - mg) for m in mus) / 4
        cos = [
            mus[i] @ mus[j] / np.linalg.norm(mus[i]) / np.linalg.norm(mus[j])
            for i in range(4)
            for j in range(4)
            if i != j
        ]
        assert out[name]["compression"] == pytest.approx(np.trace(Sw) / np.trace(Sb), rel=1e-10)
        assert out[name]["discrimination"] == pytest.approx(max(cos), rel=1e-10)
    assert out["tight"]["compression"] < 0.01 < out["noisy"]["compression"]
    as_list = compression_discrimination([noisy, tight], y)
    assert as_list[1]["compression"] == pytest.approx(out["tight"]["compression"])


def test_compression_discrimination_errors():
    rng = np.random.default_rng(5)
    y, noisy, _ = _planted_layers(rng)
    with pytest.raises(ValueError, match="at least 2 classes"):
        compression_discrimination({"a": noisy}, np.zeros(len(y)))
    with pytest.raises(ValueError, match="one label per row"):
        compression_discrimination({"a": noisy}, y[:-1])
    with pytest.raises(TypeError, match="features_by_layer must be"):
        compression_discrimination(noisy, y)


def test_linear_probe_planted():
    rng = np.random.default_rng(6)
    y, noisy, tight = _planted_layers(rng, n_per=50)
    assert linear_probe(tight, y) == 1.0
    # random labels: the probe is near chance (1/4) on held-out rows
    y_rand = rng.permutation(y)
    assert linear_probe(rng.normal(size=noisy.shape), y_rand) < 0.5
    # the same split and model by hand
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    Xtr, Xte, ytr, yte = train_test_split(noisy, y, test_size=0.25, random_state=3, stratify=y)
    sc = StandardScaler().fit(Xtr)
    acc = np.mean(LogisticRegression(max_iter=1000).fit(sc.transform(Xtr), ytr).predict(sc.transform(Xte)) == yte)
    assert linear_probe(noisy, y, seed=3) == pytest.approx(acc)
    with pytest.raises(ValueError, match="test_size"):
        linear_probe(noisy, y, test_size=1.5)
    with pytest.raises(ValueError, match="at least 2 classes"):
        linear_probe(noisy, np.ones(len(y)))


def test_public_names():
    # Every fl.learning name the README and the guides (docs/guides/*.md) promise is exported, and
    # every export resolves to a function or class of the featurelens.learning package (the old
    # test asserted ``scipy.stats is not None``, which could not fail).
    import inspect
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    docs = [root / "README.md", *sorted((root / "docs" / "guides").glob("*.md"))]
    promised = set(re.findall(r"fl\.learning\.(\w+)", "\n".join(p.read_text() for p in docs)))
    assert {"cka", "CKAAccumulator", "nfa", "RFMRegressor"} <= promised
    assert promised <= set(fl.learning.__all__), promised - set(fl.learning.__all__)
    for name in fl.learning.__all__:
        obj = getattr(fl.learning, name)
        assert inspect.isfunction(obj) or inspect.isclass(obj), name
        assert obj.__module__.startswith("featurelens.learning."), (name, obj.__module__)
    assert fl.learning.cka is cka


def test_debiased_cka_is_bounded_even_for_tiny_n():
    # The unbiased HSIC is an inner product of U-centred Gram matrices: |CKA| <= 1 (Cauchy-Schwarz).
    rng = np.random.default_rng(7)
    values = []
    for n in (4, 5, 6, 9):
        for _ in range(25):
            A, B = rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
            values.append(cka(A, B, debiased=True))
    values = np.array(values)
    assert np.all(np.abs(values) <= 1 + 1e-12)
    assert values.min() < -0.3  # debiased CKA does go negative (biased CKA cannot)
