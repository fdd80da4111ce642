"""The helpers of benchmarks/bench_selection_protocols.py (NBSE, SIOFS and FS-MWK++ on their papers'
protocols): the verdict rules on planted numbers, the ADMHC and blob generators' planted structure,
ReliefF, the decile binning and the seed-claims records (the script itself is run by `make bench`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("bench_selection_protocols")


# -- verdict rules ----------------------------------------------------------------------------------
def test_nbse_retention_verdict(bench):
    assert bench.nbse_retention_verdict({"a": 0.004, "b": -0.002}) == "reproduced"  # a gain is not a drop
    assert bench.nbse_retention_verdict({"a": 0.004, "b": 0.03}) == "partly"
    assert bench.nbse_retention_verdict({"a": 0.05, "b": 0.03}) == "not"
    # "< 1%": a drop of exactly one point is not below it.
    assert bench.nbse_retention_verdict({"a": 0.01}) == "not"
    with pytest.raises(ValueError):
        bench.nbse_retention_verdict({})


def test_nbse_gap_verdict(bench):
    assert bench.nbse_gap_verdict({"a": {"ANOVA F": 0.01, "random": 0.02}, "b": {"ANOVA F": 0.003, "random": 0.1}}) \
        == "reproduced"
    # Above random but below the F-test: partly.
    assert bench.nbse_gap_verdict({"a": {"ANOVA F": -0.05, "random": 0.02}}) == "partly"
    # A zero gap is not a win.
    assert bench.nbse_gap_verdict({"a": {"ANOVA F": 0.0, "random": -0.01}, "b": {"ANOVA F": -0.1, "random": 0.0}}) \
        == "not"


def test_siofs_verdict(bench):
    tie = bench.SIOFS_TIE
    # One setting tied within the tolerance, one clearly won, none lost.
    assert bench.siofs_verdict({"x": -tie / 2, "y": 3 * tie}) == "reproduced"
    # Ties everywhere: nothing lost, nothing beaten -> partly.
    assert bench.siofs_verdict({"x": tie / 2, "y": -tie / 2}) == "partly"
    # A clear win and a loss -> partly.
    assert bench.siofs_verdict({"x": -4 * tie, "y": 2 * tie}) == "partly"
    # Ties and a loss, no clear win: "beats" is not shown -> not.
    assert bench.siofs_verdict({"x": -4 * tie, "y": tie / 2, "z": -tie / 2}) == "not"
    assert bench.siofs_verdict({"x": -4 * tie, "y": -2 * tie}) == "not"
    with pytest.raises(ValueError):
        bench.siofs_verdict({})


def test_add_verdicts_reads_the_stored_numbers(bench):
    tie = bench.SIOFS_TIE
    st = {"a": {"kind": "ADMHC", "diff_default": 3 * tie, "diff_oracle": 3 * tie, "nmi_diff_default": -3 * tie},
          "b": {"kind": "ADMHC", "diff_default": 0.0, "diff_oracle": 0.0, "nmi_diff_default": 0.0},
          "wine": {"kind": "bundled", "diff_default": -3 * tie, "diff_oracle": 0.0, "nmi_diff_default": 0.0}}
    out = {"siofs": {"settings": st},
           "nbse": {"datasets": {"x": {"drop_at_30": 0.02, "gap": {"ANOVA F": -0.01, "random": 0.01}}}},
           "fsmwk": {"settings": {"s": {"proportion": {"FS-MWK++ (default grid)": 0.97, "FS-MWK++ (paper grid)": 0.5,
                                                       "Gaussian noise: FS-MWK++ z-scored": 0.99}}}}}
    bench.add_verdicts(out)
    assert (out["siofs"]["verdict"], out["siofs"]["verdict_bundled"], out["siofs"]["verdict_nmi"]) == \
        ("reproduced", "not", "not")
    assert (out["nbse"]["verdict_drop"], out["nbse"]["verdict_gap"]) == ("not", "partly")
    assert (out["fsmwk"]["verdict"], out["fsmwk"]["verdict_paper_grid"], out["fsmwk"]["verdict_gaussian_noise"]) == \
        ("reproduced", "not", "reproduced")


def test_fsmwk_verdict(bench):
    assert bench.fsmwk_verdict({"a": 0.97, "b": 1.0}) == "reproduced"
    assert bench.fsmwk_verdict({"a": 0.97, "b": 0.60}) == "partly"  # one setting reaches 96%
    assert bench.fsmwk_verdict({"a": 0.92, "b": 0.91}) == "partly"  # none does, the mean is >= 0.9
    assert bench.fsmwk_verdict({"a": 0.80, "b": 0.95}) == "not"  # mean 0.875
    assert bench.fsmwk_verdict({"a": 0.96}) == "reproduced"  # the target is inclusive


def test_overall_verdict(bench):
    assert bench.overall_verdict(["reproduced", "reproduced"]) == "reproduced"
    assert bench.overall_verdict(["not", "not"]) == "not"
    assert bench.overall_verdict(["reproduced", "not"]) == "partly"
    assert bench.overall_verdict(["partly", "partly"]) == "partly"


# -- small helpers ----------------------------------------------------------------------------------
def test_top_k_nan_last_and_ties_to_lower_index(bench):
    s = np.array([0.5, np.nan, 2.0, 0.5, -1.0])
    assert bench.top_k(s, 3).tolist() == [2, 0, 3]
    assert bench.top_k(s, 5).tolist() == [2, 0, 3, 4, 1]


def test_relevant_fraction(bench):
    assert bench.relevant_fraction([0, 1, 7], [0, 1, 2]) == pytest.approx(2 / 3)
    assert bench.relevant_fraction(np.array([5, 6]), [0, 1]) == 0.0


def test_quantile_bins_are_deciles(bench):
    x = np.random.default_rng(0).standard_normal((1000, 3))
    b = bench.quantile_bins(x)
    assert b.min() == 0 and b.max() == 9
    for j in range(3):
        assert np.bincount(b[:, j], minlength=10).tolist() == [100] * 10
    # The bins keep the order of the values.
    o = np.argsort(x[:, 0])
    assert np.all(np.diff(b[o, 0]) >= 0)


def test_relieff_ranks_the_planted_feature_first(bench):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 4))
    y = (X[:, 2] > 0).astype(int)  # only column 2 decides the class
    w = bench.relieff(X, y, n_neighbors=5)
    assert int(np.argmax(w)) == 2
    assert w[2] > 0 and all(w[j] < w[2] / 3 for j in (0, 1, 3))


# -- the ADMHC generator's planted structure --------------------------------------------------------
def test_admhc_planted_structure(bench):
    n, c, s, d = 900, 3, 8, 40
    X, y, info = bench.admhc(n=n, n_classes=c, n_informative=s, n_features=d, modes=(2, 3), tail=0.0, sep=2.0, seed=3)
    assert X.shape == (n, d) and sorted(np.unique(y).tolist()) == list(range(c))
    inf = info["informative"]
    assert len(inf) == s and len(set(inf.tolist())) == s and np.all(np.diff(inf) > 0)
    noise = np.setdiff1d(np.arange(d), inf)
    # Noise columns: N(0, 1) whatever the class (class means within 4 standard errors of 0).
    for k in range(c):
        Xk = X[y == k][:, noise]
        assert np.all(np.abs(Xk.mean(axis=0)) < 4 / np.sqrt(len(Xk)))
        assert np.all(np.abs(Xk.std(axis=0) - 1) < 0.25)
    for k in range(c):
        M = info["n_modes"][k]
        assert 2 <= M <= 3
        mk = info["mode"][y == k]
        assert sorted(np.unique(mk).tolist()) == list(range(M))
        sizes = np.bincount(mk)
        assert np.all(np.diff(sizes) <= 0)  # mode j holds a share ~ 2^-j: the first is the largest
        assert sizes[0] >= 1.5 * sizes[1]
        # Each mode is a unit-variance Gaussian around its planted centre (empirical means within
        # 4 standard errors), and the modes are distinct high-density clusters: their centres lie
        # further apart than the within-mode spread (sqrt(2 s) ~ distance between two rows of a mode).
        Xi = X[y == k][:, inf]
        C = info["centres"][k]
        for j in range(M):
            rows = Xi[mk == j]
            assert np.all(np.abs(rows.mean(axis=0) - C[j]) < 4 / np.sqrt(len(rows)))
            assert np.allclose(rows.std(axis=0), 1.0, atol=0.35)
        gaps = [np.linalg.norm(C[a] - C[b]) for a in range(M) for b in range(a + 1, M)]
        assert min(gaps) > np.sqrt(2 * s)
        assert np.all(info["tail_direction"][k] == 0)  # no tail asked for


def test_admhc_tail_skews_the_class_along_its_direction(bench):
    s = 6
    X, y, info = bench.admhc(n=1500, n_classes=2, n_informative=s, n_features=20, modes=(1, 1), tail=3.0, seed=5)
    inf = info["informative"]
    for k in range(2):
        u = info["tail_direction"][k]
        assert np.linalg.norm(u) == pytest.approx(1.0)
        r = X[y == k][:, inf] - info["centres"][k][0]  # one mode: the residual is noise + tail
        along = r @ u
        # Exp(1) * 3 + N(0, 1): mean 3, positive skew; orthogonal directions stay symmetric N(0, 1).
        assert along.mean() == pytest.approx(3.0, abs=0.35)
        assert stats.skew(along) > 0.8
        v = np.linalg.svd(np.eye(s) - np.outer(u, u))[0][:, 0]  # a unit vector orthogonal to u
        assert abs(stats.skew(r @ v)) < 0.3


def test_admhc_informative_columns_carry_the_class(bench):
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    X, y, info = bench.admhc(n=300, n_classes=3, n_informative=10, n_features=60, seed=0)
    noise = np.setdiff1d(np.arange(60), info["informative"])
    knn = KNeighborsClassifier(5)
    good = cross_val_score(knn, X[:, info["informative"]], y, cv=3).mean()
    bad = cross_val_score(knn, X[:, noise[:10]], y, cv=3).mean()
    assert good > 0.8 and bad < 0.55


def test_blobs_with_noise_structure(bench):
    N, V, K, m = 1200, 5, 3, 4
    X, lab, rel = bench.blobs_with_noise(N, V, K, m, seed=2)
    assert X.shape == (N, V + m) and rel.tolist() == list(range(V)) and len(np.unique(lab)) == K
    # Range-normalised: mean 0 and max - min = 1 in every column.
    assert np.allclose(X.mean(axis=0), 0, atol=1e-12) and np.allclose(np.ptp(X, axis=0), 1.0)
    # Uniform noise columns (excess kurtosis -1.2), independent of the clusters; relevant columns
    # are cluster-driven (a one-way ANOVA on the labels is huge for every relevant column).
    assert np.all(stats.kurtosis(X[:, V:], axis=0) < -1.0)
    F = np.array([stats.f_oneway(*[X[lab == k, j] for k in range(K)]).statistic for j in range(V + m)])
    assert F[:V].min() > 50 and F[V:].max() < 10
    Xg, _, _ = bench.blobs_with_noise(N, V, K, m, seed=2, noise="gaussian")
    assert np.all(np.abs(stats.kurtosis(Xg[:, V:], axis=0)) < 0.5)
    assert np.allclose(Xg[:, :V], X[:, :V])  # same relevant columns for the same seed
    with pytest.raises(ValueError):
        bench.blobs_with_noise(10, 2, 2, 1, noise="pink")


# -- the seed-claims records ------------------------------------------------------------------------
KEYS = {"method", "paper", "claim", "verdict", "measured", "protocol", "paper_protocol", "differences"}


def test_seed_claims_records(bench):
    fracs = [0.1, 0.3]
    acc = {"NBSE": {"0.1": 0.8, "0.3": 0.9}, "ANOVA F": {"0.1": 0.7, "0.3": 0.85}, "random": {"0.1": 0.6, "0.3": 0.8}}
    ds = {"x": {"full": 0.905, "acc": acc, "drop_at_30": 0.005, "gap": {"ANOVA F": 0.075, "random": 0.15},
                "max_gap": {"ANOVA F": 0.1, "random": 0.2}}}
    prop = {"FS-MWK++ (default grid)": 0.97, "FS-MWK++ (paper grid)": 1.0, "Gaussian noise: FS-MWK++ z-scored": 0.9,
            "smallest variance": 1.0}
    out = {"nbse": {"datasets": ds, "fractions": fracs, "seeds": 2, "verdict_drop": "reproduced",
                    "verdict_gap": "reproduced"},
           "fsmwk": {"settings": {"100x2-2 +1NF": {"proportion": prop, "chance": 2 / 3, "draws": 2,
                                                   "paper_grid_draws": 1}},
                     "paper_replications": 25, "verdict": "reproduced"}}
    claims = bench.seed_claims(out)
    assert [c["method"] for c in claims] == ["NBSE", "NBSE", "FS-MWK++ (MinkowskiWeightedSelector)"]
    for c in claims:
        assert set(c) == KEYS
        assert c["verdict"] in ("reproduced", "partly", "not")
        assert all(isinstance(c[k], str) and c[k] for k in KEYS)
    assert "drop +0.5 points" in claims[0]["measured"]
    assert "vs ANOVA F +7.5" in claims[1]["measured"]
    assert "100x2-2 +1NF: 0.970" in claims[2]["measured"]


def _nbse_ds(full, nbse30, rand30, n=100, d=10, dead=0):
    acc = {"NBSE": {"0.1": nbse30, "0.3": nbse30}, "ANOVA F": {"0.1": nbse30, "0.3": nbse30},
           "random": {"0.1": rand30 - 0.1, "0.3": rand30}}
    return {"full": full, "acc": acc, "n": n, "d": d, "dead_units": dead}


def test_nbse_reading_follows_the_numbers(bench):
    r = {"fractions": [0.1, 0.3], "datasets": {"a": _nbse_ds(0.90, 0.85, 0.86)}}
    t = bench.nbse_reading(r)
    assert "drop at 30% NBSE +5.0" in t and "random +4.0" in t
    assert "random choice loses about as much (within 2 points)" in t
    r = {"fractions": [0.1, 0.3], "datasets": {"a": _nbse_ds(0.90, 0.80, 0.86)}}
    assert "random choice loses less on a" in bench.nbse_reading(r)
    # No drop of a point or more: no sentence about it; dead units: their share of random picks.
    r = {"fractions": [0.1, 0.3], "datasets": {"cnn-digits": _nbse_ds(0.90, 0.899, 0.89, d=8, dead=2)}}
    t = bench.nbse_reading(r)
    assert "loses a point or more" not in t
    assert "2 of 8 units are dead" in t and "25% of random choice's picks" in t
    assert "NBSE - random +10.9 points there" in t
