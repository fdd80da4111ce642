"""Recursive Feature Machines: gradients and AGOP against autograd, closed-form kernel ridge,
planted features (make_friedman1), every constructor argument, errors, sklearn's estimator checks
and a cross-check with xrfm."""

import math

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_wine, make_friedman1
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.learning import RFMClassifier, RFMRegressor
from featurelens.learning import _rfm_kernels as rfm_kernels


def small_problem(n=30, d=4, outputs=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    if outputs > 1:
        y = np.stack([y, np.cos(X[:, 3]) - X[:, 0]], axis=1)
    return X, y


def kernel_torch(x, z, M, kernel, L):
    """K_M(x, z) written from the definition (no expansion of the squared norm)."""
    diff = x[:, None, :] - z[None, :, :]
    q = torch.einsum("ijd,de,ije->ij", diff, M, diff)
    return torch.exp(-torch.sqrt(q) / L) if kernel == "laplace" else torch.exp(-q / (2 * L * L))


def bruteforce_agop(X, Y, kernel, L, reg, centering=False, rows=None):
    """Iteration 0 of RFM by hand: kernel ridge with M = I, then the AGOP from autograd, one
    sample at a time, each sample's own kernel term left out (no gradient at distance 0)."""
    Xt = torch.tensor(X)
    Yt = torch.tensor(Y if Y.ndim == 2 else Y[:, None])
    eye = torch.eye(X.shape[1], dtype=torch.float64)
    K = torch.eye(len(X), dtype=torch.float64)  # exact 1 on the diagonal
    off = ~torch.eye(len(X), dtype=torch.bool)
    K[off] = kernel_torch(Xt, Xt, eye, kernel, L)[off]
    alpha = torch.linalg.solve(K + reg * torch.eye(len(X), dtype=torch.float64), Yt)
    rows = range(len(X)) if rows is None else rows
    J = []
    for i in rows:
        keep = torch.arange(len(X)) != i
        x = Xt[i : i + 1].clone().requires_grad_(True)
        f = kernel_torch(x, Xt[keep], eye, kernel, L) @ alpha[keep]  # (1, outputs)
        J.append(torch.stack([torch.autograd.grad(f[0, c], x, retain_graph=True)[0][0] for c in range(f.shape[1])]))
    J = torch.stack(J)  # (n, outputs, d)
    if centering:
        J = J - J.mean(0, keepdim=True)
    return torch.einsum("ncd,nce->de", J, J).numpy() / J.shape[0]


# ---------------------------------------------------------------------------- gradients, AGOP
@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
@pytest.mark.parametrize("diag", [False, True])
def test_gradients_match_autograd(kernel, diag):
    X, y = small_problem(outputs=2)
    model = RFMRegressor(kernel=kernel, bandwidth=3.0, iters=2, diag=diag, val_size=None).fit(X, y)
    assert not np.allclose(model.M_, np.eye(4))  # a learned metric, not the identity
    X_new = np.random.default_rng(1).normal(size=(7, 4))
    ours = model.gradients(X_new)
    x = torch.tensor(X_new, requires_grad=True)
    f = kernel_torch(x, torch.tensor(model.X_fit_), torch.tensor(model.M_), kernel, 3.0) @ torch.tensor(model.alphas_)
    ref = torch.stack([torch.autograd.grad(f[:, c].sum(), x, retain_graph=True)[0] for c in range(2)], 1)
    assert ours.shape == (7, 2, 4)
    np.testing.assert_allclose(ours, ref.numpy(), rtol=1e-9, atol=1e-12)
    # and the predictions are that same f
    np.testing.assert_allclose(model.predict(X_new), f.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "kernel, centering, outputs", [("laplace", False, 1), ("laplace", True, 2), ("gaussian", False, 2), ("gaussian", True, 1)]
)
def test_agop_matches_bruteforce_autograd(kernel, centering, outputs):
    X, y = small_problem(n=25, outputs=outputs)
    model = RFMRegressor(kernel=kernel, bandwidth=2.0, reg=1e-2, iters=1, normalize=None, centering=centering,
                         val_size=None).fit(X, y)
    ref = bruteforce_agop(X, y, kernel, 2.0, 1e-2, centering=centering)
    np.testing.assert_allclose(model.M_, ref, rtol=1e-8, atol=1e-14)
    assert model.best_iter_ == 1


def test_diag_is_the_agop_diagonal():
    X, y = small_problem(n=25)
    ref = bruteforce_agop(X, y, "laplace", 2.0, 1e-3)
    model = RFMRegressor(bandwidth=2.0, iters=1, diag=True, normalize=None, val_size=None).fit(X, y)
    np.testing.assert_allclose(np.diag(model.M_), np.diag(ref), rtol=1e-8)
    assert np.count_nonzero(model.M_ - np.diag(np.diag(model.M_))) == 0
    full = RFMRegressor(bandwidth=2.0, iters=1, diag=False, normalize=None, val_size=None).fit(X, y)
    assert np.abs(full.M_ - np.diag(np.diag(full.M_))).max() > 1e-3 * np.abs(full.M_).max()
    np.testing.assert_allclose(model.feature_importances_, np.diag(ref), rtol=1e-8)


def test_power_half_is_the_matrix_square_root():
    X, y = small_problem()
    kw = dict(bandwidth=3.0, iters=1, normalize=None, val_size=None)
    G = RFMRegressor(power=1, **kw).fit(X, y).M_
    S = RFMRegressor(power=0.5, **kw).fit(X, y).M_
    np.testing.assert_allclose(S @ S, G, rtol=1e-7, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(S) > -1e-12)
    Sd = RFMRegressor(power=0.5, diag=True, **kw).fit(X, y).M_
    Gd = RFMRegressor(power=1, diag=True, **kw).fit(X, y).M_
    np.testing.assert_allclose(Sd @ Sd, Gd, rtol=1e-10)


def test_normalize_options():
    X, y = small_problem()
    kw = dict(bandwidth=3.0, iters=1, val_size=None)
    raw = RFMRegressor(normalize=None, **kw).fit(X, y).M_
    mx = RFMRegressor(normalize="max", **kw).fit(X, y).M_
    tr = RFMRegressor(normalize="trace", **kw).fit(X, y).M_
    np.testing.assert_allclose(mx, raw / np.abs(raw).max(), rtol=1e-12)
    np.testing.assert_allclose(tr, raw * 4 / np.trace(raw), rtol=1e-12)
    assert np.abs(mx).max() == pytest.approx(1.0) and np.trace(tr) == pytest.approx(4.0)
    # the scale of M changes the kernel, hence the next fit
    p = [RFMRegressor(normalize=v, bandwidth=3.0, iters=2, val_size=None).fit(X, y).predict(X[:5]) for v in ("max", "trace")]
    assert np.abs(p[0] - p[1]).max() > 1e-6


def test_centering_subtracts_the_mean_gradient():
    X, y = small_problem()
    kw = dict(bandwidth=3.0, iters=1, normalize=None, val_size=None)
    plain = RFMRegressor(centering=False, **kw).fit(X, y)
    cent = RFMRegressor(centering=True, **kw).fit(X, y)
    # G_centred = G - gbar gbar^T with gbar the mean gradient of the iteration-0 predictor at the
    # training points (own terms left out): a rank-one, positive semi-definite difference.
    diff = plain.M_ - cent.M_
    w = np.linalg.eigvalsh(diff)
    assert w[-1] > 1e-6 * np.abs(plain.M_).max() and np.all(w[:-1] > -1e-10 * w[-1])
    assert np.all(w[:-1] < 1e-8 * w[-1])


# ---------------------------------------------------------------------------- kernel ridge core
@pytest.mark.parametrize("bandwidth, reg", [(1.0, 1e-3), (4.0, 0.5)])
def test_iters_zero_is_closed_form_laplace_kernel_ridge(bandwidth, reg):
    X, y = small_problem(n=40)
    X_new = np.random.default_rng(2).normal(size=(6, 4))
    model = RFMRegressor(kernel="laplace", bandwidth=bandwidth, reg=reg, iters=0, val_size=None).fit(X, y)
    dist = lambda a, b: np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))  # noqa: E731
    alpha = np.linalg.solve(np.exp(-dist(X, X) / bandwidth) + reg * np.eye(40), y)
    np.testing.assert_allclose(model.predict(X_new), np.exp(-dist(X_new, X) / bandwidth) @ alpha, rtol=1e-9)
    np.testing.assert_array_equal(model.M_, np.eye(4))
    assert model.best_iter_ == 0 and len(model.history_) == 1


def test_gaussian_iters_zero_matches_sklearn_kernel_ridge():
    from sklearn.kernel_ridge import KernelRidge

    X, y = small_problem(n=40)
    X_new = np.random.default_rng(3).normal(size=(6, 4))
    for L, reg in [(1.5, 1e-2), (3.0, 1.0)]:
        ours = RFMRegressor(kernel="gaussian", bandwidth=L, reg=reg, iters=0, val_size=None).fit(X, y)
        ref = KernelRidge(alpha=reg, kernel="rbf", gamma=1 / (2 * L * L)).fit(X, y)
        np.testing.assert_allclose(ours.predict(X_new), ref.predict(X_new), rtol=1e-9, atol=1e-12)


def test_kernel_bandwidth_reg_change_the_fit():
    X, y = small_problem()
    base = dict(iters=1, val_size=None)
    preds = {
        name: RFMRegressor(**{**base, **kw}).fit(X, y).predict(X[:5])
        for name, kw in {"default": {}, "kernel": {"kernel": "gaussian"}, "bandwidth": {"bandwidth": 2.0},
                         "reg": {"reg": 1.0}}.items()
    }
    for name in ("kernel", "bandwidth", "reg"):
        assert np.abs(preds[name] - preds["default"]).max() > 1e-4, name


def test_iters_sets_the_number_of_updates():
    X, y = small_problem()
    for iters in (0, 1, 3):
        m = RFMRegressor(iters=iters, bandwidth=3.0, val_size=None).fit(X, y)
        assert len(m.history_) == iters + 1 and m.n_iter_ == iters and m.best_iter_ == iters
        assert [h["iter"] for h in m.history_] == list(range(iters + 1))
    one = RFMRegressor(iters=1, bandwidth=3.0, val_size=None).fit(X, y).M_
    three = RFMRegressor(iters=3, bandwidth=3.0, val_size=None).fit(X, y).M_
    assert np.abs(one - three).max() > 1e-4


# ---------------------------------------------------------------------------- validation, seed
def test_val_size_split_and_best_iterate():
    X, y = make_friedman1(120, n_features=6, noise=0.5, random_state=0)
    m = RFMRegressor(iters=4, val_size=0.25).fit(X, y)
    assert m.X_fit_.shape == (120 - math.ceil(0.25 * 120), 6) and m.val_source_ == "split"
    val = [h["val_mse"] for h in m.history_]
    assert m.best_iter_ == int(np.argmin(val))
    m_int = RFMRegressor(iters=1, val_size=20).fit(X, y)
    assert m_int.X_fit_.shape[0] == 100
    none = RFMRegressor(iters=4, val_size=None).fit(X, y)
    assert none.X_fit_.shape[0] == 120 and none.best_iter_ == 4 and "val_mse" not in none.history_[0]
    assert none.val_source_ == "none"


def test_given_validation_data_selects_the_iterate():
    X, y = make_friedman1(200, n_features=6, noise=0.5, random_state=1)
    Xv, yv = make_friedman1(80, n_features=6, noise=0.5, random_state=2)
    m = RFMRegressor(iters=3).fit(X, y, X_val=Xv, y_val=yv)
    assert m.val_source_ == "given" and m.X_fit_.shape[0] == 200
    val = [h["val_mse"] for h in m.history_]
    assert m.best_iter_ == int(np.argmin(val))
    # the kept model is the one whose validation MSE was recorded
    assert np.mean((m.predict(Xv) - yv) ** 2) == pytest.approx(min(val), rel=1e-9)
    r2 = 1 - np.mean((m.predict(Xv) - yv) ** 2) / np.var(yv)
    assert m.history_[m.best_iter_]["val_r2"] == pytest.approx(r2, rel=1e-9)


def test_seed_controls_the_split():
    X, y = small_problem(n=40)
    a = RFMRegressor(iters=1, seed=0).fit(X, y)
    b = RFMRegressor(iters=1, seed=0).fit(X, y)
    c = RFMRegressor(iters=1, seed=1).fit(X, y)
    np.testing.assert_array_equal(a.X_fit_, b.X_fit_)
    np.testing.assert_array_equal(a.M_, b.M_)
    assert not np.array_equal(a.X_fit_, c.X_fit_)


def test_agop_samples_uses_a_seeded_subset():
    X, y = small_problem(n=30)
    kw = dict(bandwidth=2.0, iters=1, normalize=None, val_size=None, seed=5)
    full = RFMRegressor(**kw).fit(X, y).M_
    np.testing.assert_allclose(RFMRegressor(agop_samples=30, **kw).fit(X, y).M_, full, rtol=1e-12)
    sub = RFMRegressor(agop_samples=10, **kw).fit(X, y).M_
    rows = np.sort(np.random.default_rng(5).choice(30, size=10, replace=False))
    np.testing.assert_allclose(sub, bruteforce_agop(X, y, "laplace", 2.0, 1e-3, rows=rows), rtol=1e-8)
    assert np.abs(sub - full).max() > 1e-6


def test_batch_size_bounds_chunks_not_results(monkeypatch):
    X, y = small_problem(n=30, outputs=2)
    ref = RFMRegressor(iters=2, bandwidth=3.0).fit(X, y)
    seen = []
    real_chunks = rfm_kernels.chunks

    def recording(total, batch_size):
        seen.append(batch_size)
        return real_chunks(total, batch_size)

    monkeypatch.setattr(rfm_kernels, "chunks", recording)
    small = RFMRegressor(iters=2, bandwidth=3.0, batch_size=4).fit(X, y)
    assert seen and set(seen) == {4}
    np.testing.assert_allclose(small.M_, ref.M_, rtol=1e-10, atol=1e-14)
    # the kernel solve amplifies float64 summation-order differences of the chunks (seen: 8e-8)
    np.testing.assert_allclose(small.predict(X), ref.predict(X), rtol=1e-6, atol=1e-9)


def test_device_argument():
    X, y = small_problem()
    a = RFMRegressor(iters=1, device="cpu").fit(X, y)
    b = RFMRegressor(iters=1, device=torch.device("cpu")).fit(X, y)
    np.testing.assert_array_equal(a.M_, b.M_)
    with pytest.raises(ValueError, match="device must name a torch device.*'gpu0'"):
        RFMRegressor(device="gpu0").fit(X, y)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda'.*CUDA is not available"):
            RFMRegressor(device="cuda").fit(X, y)


def test_float32_input_is_kept_and_close_to_float64():
    X, y = small_problem(n=40)
    m64 = RFMRegressor(iters=2, bandwidth=3.0).fit(X, y)
    m32 = RFMRegressor(iters=2, bandwidth=3.0).fit(X.astype(np.float32), y)
    assert m32.X_fit_.dtype == np.float32
    np.testing.assert_allclose(m32.predict(X.astype(np.float32)), m64.predict(X), atol=1e-3 * np.abs(y).max())


def test_zero_target_warns_and_stops():
    X, _ = small_problem()
    with pytest.warns(RuntimeWarning, match="AGOP is zero"):
        m = RFMRegressor(iters=3, val_size=None).fit(X, np.zeros(len(X)))
    assert m.n_iter_ == 0 and np.array_equal(m.M_, np.eye(4))


# ---------------------------------------------------------------------------- acceptance, data
def test_friedman1_top5_importances_are_the_informative_features():
    X, y = make_friedman1(1500, n_features=10, noise=0.1, random_state=0)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
    m = RFMRegressor(iters=3).fit(X_tr, y_tr)
    assert set(np.argsort(-m.feature_importances_)[:5]) == {0, 1, 2, 3, 4}
    assert m.feature_importances_[5:].max() < 0.1 * m.feature_importances_[:5].min()
    assert m.score(X_te, y_te) > 0.97
    # the learned metric helps: better than the same kernel with M = I
    assert m.score(X_te, y_te) > RFMRegressor(iters=0).fit(X_tr, y_tr).score(X_te, y_te) + 0.02


def test_classifier_binary_breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    sc = StandardScaler().fit(X_tr)
    clf = RFMClassifier(iters=2).fit(sc.transform(X_tr), y_tr)
    acc = clf.score(sc.transform(X_te), y_te)
    baseline = max(np.mean(y_te == 0), np.mean(y_te == 1))
    assert acc > 0.93 and acc > baseline + 0.25
    P = clf.predict_proba(sc.transform(X_te))
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_array_equal(clf.classes_[P.argmax(1)], clf.predict(sc.transform(X_te)))
    f = clf.decision_function(sc.transform(X_te))
    np.testing.assert_allclose(P[:, 1], np.clip((1 + f) / 2, 0, 1))
    assert clf.alphas_.shape[1] == 1  # one +-1 output for two classes


def test_classifier_multiclass_wine_with_string_labels():
    X, y = load_wine(return_X_y=True)
    labels = np.array(["barolo", "grignolino", "barbera"])[y]
    X_tr, X_te, y_tr, y_te = train_test_split(X, labels, test_size=0.3, random_state=0, stratify=labels)
    sc = StandardScaler().fit(X_tr)
    clf = RFMClassifier(iters=2).fit(sc.transform(X_tr), y_tr)
    assert clf.score(sc.transform(X_te), y_te) > 0.9  # majority class: 0.40
    assert list(clf.classes_) == sorted(set(labels)) and clf.alphas_.shape[1] == 3
    P = clf.predict_proba(sc.transform(X_te))
    np.testing.assert_allclose(P.sum(1), 1.0)
    assert np.all(P >= 0)
    np.testing.assert_array_equal(clf.classes_[P.argmax(1)], clf.predict(sc.transform(X_te)))
    assert "val_accuracy" in clf.history_[0]


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kernel": "rbf"}, "kernel must be one of .*got 'rbf'"),
        ({"bandwidth": -1.0}, "bandwidth must be a finite number > 0.0; got -1.0"),
        ({"bandwidth": 0}, "bandwidth must be a finite number > 0.0; got 0"),
        ({"reg": -1e-3}, "reg must be a finite number >= 0.0; got -0.001"),
        ({"iters": -1}, "iters must be an int >= 0; got -1"),
        ({"power": 2}, r"power .* must be one of 1.0, 0.5; got 2"),
        ({"normalize": "l2"}, "normalize must be one of 'max', 'trace', None; got 'l2'"),
        ({"val_size": 1.5}, r"val_size \(a fraction\) must be a finite number > 0.0 and < 1.0; got 1.5"),
        ({"val_size": 0}, r"val_size \(a number of rows\) must be an int >= 1; got 0"),
        ({"agop_samples": 0}, "agop_samples must be an int >= 1 or None; got 0"),
        ({"batch_size": -2}, "batch_size must be an int >= 1 or None; got -2"),
        ({"seed": -1}, "seed must be None, a non-negative int or a numpy.random.Generator; got -1"),
    ],
)
def test_bad_parameters(kwargs, match):
    X, y = small_problem()
    with pytest.raises(ValueError, match=match):
        RFMRegressor(**kwargs).fit(X, y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"iters": 2.5}, "iters must be an int >= 0; got 2.5"),
        ({"seed": "a"}, "seed must be None, a non-negative int or a numpy.random.Generator; got 'a'"),
        ({"bandwidth": "10"}, "bandwidth must be a finite number > 0.0; got '10'"),
    ],
)
def test_parameters_of_the_wrong_kind(kwargs, match):
    X, y = small_problem()
    with pytest.raises(TypeError, match=match):
        RFMRegressor(**kwargs).fit(X, y)


def test_bad_bool_parameters():
    X, y = small_problem()
    with pytest.raises(TypeError, match="diag must be True or False; got 'yes'"):
        RFMRegressor(diag="yes").fit(X, y)
    with pytest.raises(TypeError, match="centering must be True or False; got 1"):
        RFMRegressor(centering=1).fit(X, y)


def test_bad_data():
    X, y = small_problem()
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        RFMRegressor().fit(Xn, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        RFMRegressor().fit(X, y[:-1])
    yn = y.copy()
    yn[0] = np.inf
    with pytest.raises(ValueError, match="y contains NaN or inf|Input y contains infinity"):
        RFMRegressor().fit(X, yn)
    with pytest.raises(ValueError, match="X_val and y_val must be given together; got only X_val"):
        RFMRegressor().fit(X, y, X_val=X)
    with pytest.raises(ValueError, match=r"y_val must have one entry per row of X_val \(30\); got 29"):
        RFMRegressor().fit(X, y, X_val=X, y_val=y[:-1])
    Xv = X.copy()
    Xv[0, 0] = np.inf
    with pytest.raises(ValueError, match="X_val contains NaN or inf"):
        RFMRegressor().fit(X, y, X_val=Xv, y_val=y)
    with pytest.raises(ValueError, match="X_val has 3 features, but RFMRegressor is expecting 4"):
        RFMRegressor().fit(X, y, X_val=X[:, :3], y_val=y)
    m = RFMRegressor(iters=1).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but RFMRegressor is expecting 4"):
        m.predict(X[:, :3])
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        m.predict(Xn)
    with pytest.raises(ValueError, match="val_size=0.5 leaves no training rows.*1 sample"):
        RFMRegressor(val_size=0.5).fit(X[:1], y[:1])


def test_classifier_errors():
    X, _ = small_problem()
    with pytest.raises(ValueError, match="y must hold at least 2 classes; got 1 class"):
        RFMClassifier().fit(X, np.zeros(len(X), dtype=int))
    with pytest.raises(ValueError, match="Unknown label type"):
        RFMClassifier().fit(X, np.linspace(0, 1, len(X)))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=r"y_val holds labels not seen in y: \[7\]"):
        RFMClassifier().fit(X, y, X_val=X[:3], y_val=[0, 1, 7])


def test_constructor_stores_parameters_only():
    m = RFMRegressor(kernel="nonsense", bandwidth=-3)
    assert m.get_params()["kernel"] == "nonsense" and m.get_params()["bandwidth"] == -3
    m.set_params(kernel="gaussian", bandwidth=2.0)
    assert m.kernel == "gaussian" and m.bandwidth == 2.0


# ---------------------------------------------------------------------------- scikit-learn, xrfm
@parametrize_with_checks(
    [
        RFMRegressor(iters=1),
        RFMClassifier(iters=1),
        RFMRegressor(iters=1, kernel="gaussian", diag=True, power=0.5, normalize="trace", centering=True, val_size=None),
        RFMClassifier(iters=1, diag=True, power=0.5, agop_samples=5),
    ]
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("iters, diag, centering", [(1, False, False), (2, False, False), (2, True, False), (1, False, True)])
def test_M_matches_xrfm(iters, diag, centering):
    pytest.importorskip("xrfm")
    from xrfm.rfm_src import RFM

    X, y = make_friedman1(160, n_features=6, noise=0.1, random_state=0)
    Xv, yv = make_friedman1(40, n_features=6, noise=0.1, random_state=1)
    # xRFM's kernel is exp(-||sqrtM x - sqrtM z|| / L) with sqrtM = (G / max G)^(1/2): the
    # Mahalanobis matrix G / max G, i.e. power=1, normalize="max" here.
    ref = RFM(kernel="laplace", bandwidth=5.0, iters=iters, diag=diag, device="cpu", verbose=False, tuning_metric="mse")
    Ms = ref.fit((torch.tensor(X), torch.tensor(y)), (torch.tensor(Xv), torch.tensor(yv)), reg=1e-3,
                 return_Ms=True, early_stop_rfm=False, center_grads=centering, verbose=False)
    ours = RFMRegressor(bandwidth=5.0, iters=iters, diag=diag, centering=centering, val_size=None).fit(X, y)
    expected = Ms[-1].numpy()
    np.testing.assert_allclose(ours.M_, np.diag(expected) if diag else expected, atol=1e-6)


def test_translation_invariance_on_offset_data():
    # K_M and its gradients depend on x - z only; rows far from the origin must not lose precision
    X, y = small_problem(n=40)
    X_new = np.random.default_rng(4).normal(size=(6, 4))
    ref = RFMRegressor(iters=2, bandwidth=3.0).fit(X, y)
    off = RFMRegressor(iters=2, bandwidth=3.0).fit(X + 1e6, y)
    np.testing.assert_allclose(off.M_, ref.M_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(off.predict(X_new + 1e6), ref.predict(X_new), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(off.gradients(X_new + 1e6), ref.gradients(X_new), rtol=1e-5, atol=1e-8)


def test_modular_addition_generalises_with_block_circulant_M():
    # Case study of Mallinar et al. 2024 (arXiv 2407.20199): (a + b) mod p from concatenated one-hots,
    # Gaussian kernel, M = AGOP^(1/2), centred gradients. Plain kernel ridge (iteration 0) cannot
    # generalise; after 20 AGOP updates every held-out pair is right, and each p x p block of M
    # is circulant, M[i, j] = c((i - j) mod p).
    p = 23
    a, b = np.divmod(np.arange(p * p), p)
    X = np.zeros((p * p, 2 * p))
    X[np.arange(p * p), a] = 1.0
    X[np.arange(p * p), p + b] = 1.0
    y = (a + b) % p
    perm = np.random.default_rng(0).permutation(p * p)
    tr, te = perm[: int(0.7 * p * p)], perm[int(0.7 * p * p):]
    kw = dict(kernel="gaussian", bandwidth=2.5, reg=1e-6, power=0.5, centering=True, normalize=None, val_size=None)
    assert RFMClassifier(iters=0, **kw).fit(X[tr], y[tr]).score(X[te], y[te]) < 0.1
    rfm = RFMClassifier(iters=20, **kw).fit(X[tr], y[tr])  # 100% from about 15 updates on
    assert rfm.score(X[te], y[te]) == 1.0
    diff = (np.arange(p)[:, None] - np.arange(p)[None, :]) % p
    for block in (rfm.M_[:p, :p], rfm.M_[:p, p:], rfm.M_[p:, p:]):
        circulant = np.array([block[diff == k].mean() for k in range(p)])[diff]
        assert np.linalg.norm(block - circulant) < 0.1 * np.linalg.norm(block)
    assert np.linalg.norm(rfm.M_[:p, p:]) > 0.1 * np.linalg.norm(rfm.M_[:p, :p])  # the inputs interact


# -- inputs whose kernel distances overflow -------------------------------------------------------------
def test_inputs_near_1e200_are_refused_not_nan():
    # ||x - z||^2 of 1e200-scale rows overflows float64: the kernel was NaN and the fit ended in a
    # misleading "singular" error or NaN predictions with a "predictor is constant" warning.
    X = np.random.default_rng(0).standard_normal((40, 3))
    y = X[:, 0]
    for data in (X * 1e200, 1e200 * (1 + 1e-3 * X)):
        for kw in ({}, {"diag": True, "kernel": "gaussian"}):
            with pytest.raises(ValueError, match=r"squared distances overflow float64.*rescale X"):
                RFMRegressor(iters=2, **kw).fit(data, y)
    fitted = RFMRegressor(iters=1).fit(X, y)
    with pytest.raises(ValueError, match=r"squared distances overflow float64"):
        fitted.predict(X * 1e200)


def test_a_zero_agop_from_far_apart_rows_says_why():
    # At 1e150 the distances are finite but dwarf the bandwidth: K = I, the predictor is 0 away from
    # the training rows; the warning names the cause and the way out.
    X = np.random.default_rng(0).standard_normal((40, 3))
    with pytest.warns(RuntimeWarning, match=r"predictor is constant.*off-diagonal kernel value is 0.*raise the bandwidth"):
        model = RFMRegressor(iters=2).fit(X * 1e150, X[:, 0])
    np.testing.assert_array_equal(model.predict(X * 1e150 + 1e149), 0.0)
