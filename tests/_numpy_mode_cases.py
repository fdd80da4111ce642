"""The metric calls of tests/metrics/test_numpy_mode.py, without torch: each case scores a numpy
model (a scikit-learn classifier on rows, a numpy function on images) or, called with a torch
wrapper of it, the same function through torch. The torch-free subprocess of that test imports this
module with torch made unimportable, so nothing here imports torch.

Every case is ``(name, kind, call)``: ``kind`` says which data it takes (``"rows"`` or
``"images"``), ``call(model, data)`` returns a dict of float64 arrays (a metric's scores, its
curves). Numbers are compared by the test, never written here.
"""

from __future__ import annotations

import numpy as np

N_ROWS, N_FEATURES, N_CLASSES = 6, 8, 3
N_IMAGES, CHANNELS, SIDE = 4, 2, 6


def estimator():
    """A 3-class LogisticRegression on seeded rows (8 features), fitted on a float64 array."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, N_FEATURES))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.8)
    return LogisticRegression(max_iter=500).fit(X, y)


_W = np.random.default_rng(1).normal(size=(CHANNELS * SIDE * SIDE, N_CLASSES)) / 6


def image_function(x):
    """A nonlinear numpy classifier of (n, 2, 6, 6) images: 3 scores per image, float64."""
    flat = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    return np.tanh(flat @ _W) + 0.1 * flat[:, :N_CLASSES] ** 2


def data() -> dict:
    """The scored batches and maps: rows (6, 8) with maps and feature groups, images
    (4, 2, 6, 6) with spatial maps (4, 6, 6); seeded, float64."""
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(N_ROWS, N_FEATURES))
    images = rng.normal(size=(N_IMAGES, CHANNELS, SIDE, SIDE))
    return {
        "rows": {"x": rows, "a": rng.normal(size=rows.shape), "groups": np.array([0, 0, 1, 1, 2, 3, 3, 3])},
        "images": {"x": images, "a": rng.normal(size=(N_IMAGES, SIDE, SIDE))},
    }


def _pair(result) -> dict:
    """A metric's ``(curves, score)`` as a dict of float64 arrays."""
    curves, score = result
    return {"curves": np.asarray(curves, dtype=np.float64), "score": np.asarray(score, dtype=np.float64)}


def _one(value) -> dict:
    return {"score": np.asarray(value, dtype=np.float64)}


def _occlusion(model):
    """The explainer of the re-explaining cases: occlusion with a zero fill (deterministic, and
    numpy-capable, so it stays in numpy mode on a numpy model)."""
    import featurelens as fl

    return fl.explainer("occlusion", model, baseline=0.0)


def _cases():
    from featurelens import metrics as M

    rows, images = "rows", "images"
    return [
        # the model on perturbed copies: faithfulness
        ("deletion", rows, lambda m, d: _pair(M.deletion_curve(m, d["x"], d["a"], steps=5))),
        ("deletion_groups_mean", rows, lambda m, d: _pair(M.deletion_curve(m, d["x"], d["a"], steps=4,
                                                                           baseline="mean", groups=d["groups"]))),
        ("insertion_min_target", rows, lambda m, d: _pair(M.insertion_curve(m, d["x"], d["a"], target=1, steps=8,
                                                                            baseline="min"))),
        ("insertion_array_baseline", rows, lambda m, d: _pair(M.insertion_curve(
            m, d["x"], d["a"], steps=6, baseline=np.linspace(-1, 1, N_FEATURES)))),
        ("deletion_log_odds", rows, lambda m, d: _pair(M.deletion_curve(m, d["x"], d["a"], steps=5,
                                                                        output="log_odds"))),
        ("faithfulness_correlation", rows, lambda m, d: _one(M.faithfulness_correlation(
            m, d["x"], d["a"], n_subsets=12, subset_size=3, seed=3))),
        ("faithfulness_correlation_spearman_groups", rows, lambda m, d: _one(M.faithfulness_correlation(
            m, d["x"], d["a"], n_subsets=10, subset_size=2, groups=d["groups"], similarity="spearman"))),
        ("infidelity", rows, lambda m, d: _one(M.infidelity(m, d["x"], d["a"], n_perturbations=9, seed=4))),
        ("infidelity_absolute_normalised", rows, lambda m, d: _one(M.infidelity(
            m, d["x"], d["a"], n_perturbations=7, noise_std=0.3, relative=False, normalise=True))),
        ("irof_rows", rows, lambda m, d: _pair(M.irof(m, d["x"], d["a"], output="raw"))),
        ("selectivity_rows", rows, lambda m, d: _pair(M.selectivity(m, d["x"], d["a"], baseline=0.5))),
        ("region_perturbation_random", rows, lambda m, d: _pair(M.region_perturbation(
            m, d["x"], d["a"], steps=5, order="random", seed=5, baseline=0.0))),
        ("region_perturbation_lerf_groups", rows, lambda m, d: _pair(M.region_perturbation(
            m, d["x"], d["a"], order="lerf", groups=d["groups"], baseline=0.0))),
        ("sensitivity_n", rows, lambda m, d: _one(M.sensitivity_n(m, d["x"], d["a"], ns=[1, 3, 5], n_subsets=8))),
        ("monotonicity", rows, lambda m, d: dict(zip(("score", "curves"), map(np.asarray, M.monotonicity(
            m, d["x"], d["a"], abs=False, return_curves=True))))),
        ("monotonicity_correlation_uniform", rows, lambda m, d: _one(M.monotonicity_correlation(
            m, d["x"], d["a"], n_samples=4, seed=6))),
        ("monotonicity_correlation_mean_groups", rows, lambda m, d: _one(M.monotonicity_correlation(
            m, d["x"], d["a"], baseline="mean", groups=d["groups"]))),
        ("sufficiency", rows, lambda m, d: _one(M.sufficiency(m, d["x"], d["a"], threshold=0.9))),
        # axiomatic
        ("completeness", rows, lambda m, d: _one(M.completeness(m, d["x"], d["a"], baseline="mean"))),
        ("non_sensitivity_symmetric", rows, lambda m, d: _one(M.non_sensitivity(
            m, d["x"], np.where(np.abs(d["a"]) < 0.5, 0.0, d["a"]), atol=1e-3, count="symmetric"))),
        # images: patches, blur, imputation
        ("deletion_blur", images, lambda m, d: _pair(M.deletion_curve(m, d["x"], d["a"], steps=6, baseline="blur"))),
        ("insertion_blur_replicate", images, lambda m, d: _pair(M.insertion_curve(
            m, d["x"], d["a"], steps=4, baseline="blur", blur_sigma=2.5))),
        ("road", images, lambda m, d: _pair(M.road(m, d["x"], d["a"], percentages=[10, 40, 70], seed=7))),
        ("road_lerf_groups", images, lambda m, d: _pair(M.road(
            m, d["x"], d["a"], percentages=[20, 50], order="lerf", groups=np.arange(SIDE * SIDE).reshape(SIDE, SIDE) // 4))),
        ("irof_patches_probability", images, lambda m, d: _pair(M.irof(m, d["x"], d["a"], patch_size=2))),
        ("selectivity_patches", images, lambda m, d: _pair(M.selectivity(m, d["x"], d["a"], patch_size=3))),
        ("region_perturbation_patches", images, lambda m, d: _pair(M.region_perturbation(
            m, d["x"], d["a"], patch_size=2, steps=4))),
        # re-explaining (the explainer on the same model, numpy mode for a numpy model)
        ("avg_sensitivity", rows, lambda m, d: _one(M.avg_sensitivity(_occlusion(m), d["x"], n_samples=3, seed=8))),
        ("max_sensitivity_absolute", rows, lambda m, d: _one(M.max_sensitivity(
            _occlusion(m), d["x"], n_samples=3, radius=0.05, relative=False))),
        ("local_lipschitz", rows, lambda m, d: _one(M.local_lipschitz(_occlusion(m), d["x"], target=2, n_samples=3))),
        ("consistency", rows, lambda m, d: _one(M.consistency(_occlusion(m), d["x"], k=2))),
        ("relative_input_stability", rows, lambda m, d: _one(M.relative_input_stability(
            _occlusion(m), d["x"], n_samples=3, same_prediction=False))),
        ("relative_output_stability", rows, lambda m, d: _one(M.relative_output_stability(
            _occlusion(m), d["x"], n_samples=3))),
        ("random_logit", rows, lambda m, d: _one(M.random_logit(_occlusion(m), d["x"], seed=9, similarity="pearson"))),
        ("random_logit_ssim_by_name", rows, lambda m, d: _one(M.random_logit(
            "occlusion", d["x"], model=m, explainer_params={"baseline": 0.0}))),
        ("continuity", images, lambda m, d: _one(M.continuity(_occlusion(m), d["x"], steps=4, same_prediction=True))),
    ]


#: ``[(name, kind, call)]``: every numpy-capable metric, some in more than one setting.
CASES = _cases()
