import numpy as np
import pandas as pd
import pytest
from scipy.linalg import eigvalsh
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection import NBSE, DegenerateDataWarning
from featurelens.selection.nbse import _couplings, bethe_hessian, nishimori_embedding, spin_glass_beta


def planted_groups(k, g, noise, seed, n=300):
    """k groups of g redundant features (one latent factor each plus noise), columns shuffled."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, k))
    X = np.repeat(latent, g, axis=1) + noise * rng.normal(size=(n, k * g))
    perm = rng.permutation(k * g)
    return X[:, perm], np.repeat(np.arange(k), g)[perm]


@pytest.mark.parametrize(
    "k,g,noise,seed", [(2, 5, 0.3, 0), (3, 5, 0.8, 1), (4, 5, 0.5, 2), (6, 6, 0.8, 3), (8, 4, 1.2, 4), (5, 3, 0.3, 5)]
)
def test_one_representative_per_planted_group(k, g, noise, seed):
    X, group = planted_groups(k, g, noise, seed)
    s = NBSE(k=k).fit(X)
    chosen = np.flatnonzero(s.get_support())
    assert len(chosen) == k
    assert sorted(group[chosen]) == list(range(k))  # exactly one feature from every group
    # the balanced bins are the planted groups
    for b in range(k):
        assert len(set(group[s.bins_ == b])) == 1 and (s.bins_ == b).sum() == g
    np.testing.assert_array_equal(s.representatives_, chosen)


def test_representative_is_the_most_central_member_and_scores_order():
    X, group = planted_groups(3, 4, 0.5, 7)
    X[:, 0] = X[:, 0] + 3.0 * np.random.default_rng(0).normal(size=len(X))  # a weakly tied member
    s = NBSE(k=3).fit(X)
    C = np.abs(np.corrcoef(X, rowvar=False))
    for b in range(3):
        mem = np.flatnonzero(s.bins_ == b)
        cent = (C[np.ix_(mem, mem)].sum(axis=1) - 1.0) / (len(mem) - 1)
        rep = mem[np.argmax(cent)]
        assert s.get_support()[rep]
        np.testing.assert_allclose(s.scores_[mem], 1.0 + cent + 2.0 * (mem == rep), rtol=1e-10)
    assert not s.get_support()[0]
    assert (s.scores_[s.get_support()] >= 3).all() and (s.scores_[~s.get_support()] < 3).all()


def test_bethe_hessian_reduces_to_the_unweighted_form():
    rng = np.random.default_rng(0)
    A = np.triu(rng.random((12, 12)) < 0.3, 1)
    A = (A | A.T).astype(float)
    beta = 0.37
    r = 1.0 / np.tanh(beta)
    H_unweighted = (r**2 - 1) * np.eye(12) - r * A + np.diag(A.sum(axis=1))
    np.testing.assert_allclose(bethe_hessian(A, beta) / np.sinh(beta) ** 2, H_unweighted, atol=1e-12)


def test_nishimori_temperature_is_a_singular_point():
    X, _ = planted_groups(4, 5, 0.8, 0)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    C = np.abs(Z.T @ Z) / len(Z)
    np.fill_diagonal(C, 0.0)
    J = _couplings(C, 10)
    np.testing.assert_allclose(J, J.T)
    b_sg = spin_glass_beta(J)
    M = J != 0
    deg = M.sum(axis=1)
    lhs = deg.mean() * (deg**2).mean() / deg.mean() ** 2 * np.mean(np.tanh(b_sg * J[M]) ** 2)
    assert lhs == pytest.approx(1.0, abs=1e-9)
    v, beta_n, found = nishimori_embedding(J)
    assert found and beta_n > b_sg
    lam = eigvalsh(bethe_hessian(J, beta_n))[0]
    scale = np.abs(eigvalsh(bethe_hessian(J, b_sg))).max()
    assert abs(lam) < 1e-3 * scale  # lambda_min(H(beta_N)) = 0 up to the bisection width
    assert eigvalsh(bethe_hessian(J, b_sg))[0] < 0  # negative below beta_N, at beta_SG


def test_constant_features_dataframe_and_y_ignored():
    X, group = planted_groups(3, 4, 0.5, 3)
    X = np.hstack([X, np.full((len(X), 1), 4.0)])
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(13)])
    s = NBSE(k=3).fit(df, np.arange(len(X)))
    assert s.scores_[12] == 0.0 and s.ranking_[12] == 13 and s.bins_[12] == -1
    assert np.isfinite(s.scores_).all()
    out = s.transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(s.get_feature_names_out())
    s2 = NBSE(k=3).fit(X)
    np.testing.assert_array_equal(s.scores_, s2.scores_)
    # k above the number of non-constant columns: the constant one fills the last place, with a warning
    with pytest.warns(DegenerateDataWarning, match="only 12 of the 13 columns of X vary"):
        s3 = NBSE(k=13).fit(X)
    assert s3.get_support().all()
    # k = None: ceil(sqrt(12)) = 4 bins
    assert NBSE().fit(X).get_support().sum() == 4


def test_errors():
    X, _ = planted_groups(2, 3, 0.5, 0)
    with pytest.raises(ValueError, match="k=7 is larger than the number of features"):
        NBSE(k=7).fit(X)
    with pytest.raises(ValueError, match="n_neighbors must be an int >= 1; got 0"):
        NBSE(k=2, n_neighbors=0).fit(X)
    Xn = X.copy()
    Xn[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        NBSE(k=2).fit(Xn)
    Xn[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        NBSE(k=2).fit(Xn)


@parametrize_with_checks([NBSE()])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("d,k", [(23, 7), (40, 9), (17, 16)])
def test_bins_are_balanced(d, k):
    X = np.random.default_rng(d).normal(size=(80, d)) @ np.random.default_rng(k).normal(size=(d, d))
    s = NBSE(k=k).fit(X)
    sizes = np.bincount(s.bins_, minlength=k)
    assert len(sizes) == k and sizes.max() - sizes.min() <= 1
    assert s.get_support().sum() == k and len(set(s.bins_[s.get_support()])) == k


def test_nishimori_search_stops_before_sinh_overflows(monkeypatch):
    """When the smallest eigenvalue never turns positive as beta is stepped up, the search must
    stop before sinh(2 beta J) overflows (inf - inf = NaN in the Hessian made eigh raise), and
    keep beta_SG."""
    from featurelens.selection import nbse

    rng = np.random.default_rng(0)
    A = 0.05 * (rng.random((30, 30)) < 0.3)  # weak couplings set beta_SG high ...
    A[0, 1] = 10.0  # ... and one strong coupling makes sinh(2 beta J) overflow a few steps above it
    J = np.triu(A, 1)
    J = J + J.T
    real = nbse._smallest
    seen = []

    def never_crosses(H):
        assert np.isfinite(H).all()  # every Hessian the search builds is finite
        w, v = real(H)
        seen.append(w)
        return -1.0, v

    monkeypatch.setattr(nbse, "_smallest", never_crosses)
    b_sg = nbse.spin_glass_beta(J)
    v, beta_n, crossed = nbse.nishimori_embedding(J)
    assert not crossed and beta_n == b_sg and np.isfinite(v).all()


def test_identical_columns_are_named_in_a_warning():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 6))
    X[:, 4] = X[:, 1]
    X[:, 5] = X[:, 1]
    with pytest.warns(DegenerateDataWarning, match=r"columns 1, 4, 5 are identical"):
        sel = NBSE(k=2).fit(X)
    assert [g.tolist() for g in sel.duplicate_groups_] == [[1, 4, 5]]
    frame = pd.DataFrame(X[:, :5], columns=["a", "b", "c", "d", "b_copy"])
    with pytest.warns(DegenerateDataWarning, match=r"columns 'b', 'b_copy' are identical"):
        NBSE(k=2).fit(frame)
    # Distinct columns (even perfectly correlated ones) raise no such warning.
    X2 = rng.standard_normal((60, 5))
    X2[:, 4] = 2 * X2[:, 0]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateDataWarning)
        assert NBSE(k=2).fit(X2).duplicate_groups_ == []
