"""The "trees" section of ``bench_scale.py`` (issue 34): exact TreeSHAP of large boosters,
featurelens ``tree_shap`` against shap's ``TreeExplainer`` and the libraries' own TreeSHAP.

Data: 200,000 x 100 float32 rows, ``numpy.random.default_rng(0).standard_normal``; a binary
label drawn as ``Bernoulli(sigmoid(m(x)))`` from a planted nonlinear margin (:func:`planted_margin`:
sines, products, a threshold interaction and a linear part on the first 20 columns; the other 80
are noise). Models (raw Boosters, ``lgb.train`` / ``xgb.train``, binary logistic objective, 2
threads, seed 0): LightGBM with 500 trees, ``max_depth=8``, ``num_leaves=255``,
``learning_rate=0.05``; XGBoost with 500 trees, ``max_depth=8``, ``eta=0.05``, ``tree_method="hist"``.
They are trained once and cached under ``benchmarks/.cache/scale_trees/`` (ignored by git), with
the training time beside them; rows report it (``train_s``) and whether it came from the cache.

Rows (``section="trees"``), each model:

- ``tree_shap values``: path-dependent TreeSHAP values of 10,000 rows (other draws of the same
  generator), the margin (log-odds) of class 1. featurelens: ``fl.explainer("tree_shap",
  booster).explain(X, target=1)`` (an Explanation); shap: ``shap.TreeExplainer(booster)(X,
  check_additivity=False)`` (an Explanation; shap calls the library's own TreeSHAP here, see below);
  a second row compares with that native call itself (``peer="lightgbm pred_contrib"`` /
  ``"xgboost pred_contribs"``, ``method`` suffixed ``(native)``);
- ``tree_shap interactions``: SHAP interaction values of 100 rows, ``interactions=True``
  (``Explanation.extra["interactions"]``) against ``TreeExplainer(booster)(X, interactions=True)``
  (shap's single-threaded C++ for LightGBM, which has no native interactions; XGBoost's own
  ``pred_interactions`` for XGBoost, also as a native row);
- ``tree_shap interventional``: interventional TreeSHAP of 100 rows against a background of
  1,000 other rows (``fl.explainer("tree_shap", booster, background=bg,
  feature_perturbation="interventional")`` against ``shap.TreeExplainer(booster,
  shap.maskers.Independent(bg, max_samples=1000), feature_perturbation="interventional")``,
  shap's single-threaded C++; neither library has a native interventional TreeSHAP). The masker
  is explicit because shap, given the bare array, keeps a random 100 of its rows (the masker's
  default ``max_samples=100``), which is a different game.

Rows explained: the issue asks for interactions of 1,000 rows and leaves the interventional rows
open; the peers' calls grow linearly in the rows, and shap's single-threaded C++ interaction values
of a LightGBM Booster (TreeSHAP run once more per feature of each tree) cost seconds per row on 500
trees of 255 leaves, XGBoost's ``pred_interactions`` likewise, and shap's interventional C++ a
fraction of a second per row against 1,000 background rows: one peer call on 1,000 rows would take
from tens of minutes to over an hour on the 2 threads used here, so these rows explain 100.

Peak memory: :func:`_timed` keeps each call's result (the previous one freed inside the call) and
trims the freed heap after it, and :func:`_release_heap` fixes glibc's mmap threshold after
training, so a call's peak is what it adds to the resident set (otherwise blocks freed during
training are reused unseen and every peak reads 0).

Every row: best wall time over ``repeats`` alternating calls (:func:`_scale_common.time_alternating`;
the warm-up call of each configuration runs on 200 rows, 2 for the interactions: it loads the compiled kernels and packs
the trees, and costs no full call), the peak resident memory each call added, the largest absolute
difference from the peer's values with the tolerance ``1e-6 * max(1, max |peer values|)``, and the
model-call floor: the Booster's own ``predict`` of the margin for the same rows (one leaf per tree
and row; TreeSHAP visits every leaf of every tree).

Threads: featurelens runs on 2 numba threads, LightGBM and XGBoost on 2 OpenMP threads (the
Boosters' ``num_threads`` / ``nthread``); shap's own C++ TreeSHAP (LightGBM interactions, every
interventional row) is single-threaded and has no thread option, which each such row's note states.

``run(quick=True)``: 20,000 x 20 rows, 50 trees, 1,000 / 200 / 200 rows explained against 100
background rows, one timed call each (a smoke test of well under a minute after training).
Standalone: ``python benchmarks/_scale_trees.py [--quick] [--model=LightGBM|XGBoost ...]`` prints
the rows as JSON and writes them to ``/tmp/scale_trees_rows.json`` (or ``$SCALE_TREES_JSON``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _scale_common import max_abs_diff, row, time_alternating, warm_small as _warm_small  # noqa: E402

SECTION = "trees"
THREADS = 2
CACHE = Path(__file__).parent / ".cache" / "scale_trees"
ROWS_JSON = Path(os.environ.get("SCALE_TREES_JSON", "/tmp/scale_trees_rows.json"))
WARM_ROWS = 200

FULL = {"rows": 200_000, "features": 100, "trees": 500, "depth": 8, "leaves": 255, "explain": 10_000,
        "interactions": 100, "interventional": 100, "background": 1_000, "repeats": 1}
QUICK = {"rows": 20_000, "features": 20, "trees": 50, "depth": 8, "leaves": 255, "explain": 1_000,
         "interactions": 200, "interventional": 200, "background": 100, "repeats": 1}


# ------------------------------------------------------------------------------------ data, models


def planted_margin(X: np.ndarray) -> np.ndarray:
    """The planted log-odds of the label: a nonlinear function of the first 20 columns.

    Parameters
    ----------
    X : ndarray, shape (n, d), d >= 20
        Standard normal rows.

    Returns
    -------
    ndarray, shape (n,)
        ``1.5 sin(2 x0) + x1 x2 + 0.8 |x3| - 0.6 + 1[x4 > 0.5] x5 + 0.5 x6^2 - 0.5 + x7 x8 x9 / 2
        + 0.3 sum_{j=10..19} (-1)^j x_j``.
    """
    X = np.asarray(X, dtype=np.float64)
    signs = np.where(np.arange(10) % 2 == 0, 0.3, -0.3)
    return (1.5 * np.sin(2.0 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.8 * np.abs(X[:, 3]) - 0.6
            + (X[:, 4] > 0.5) * X[:, 5] + 0.5 * X[:, 6] ** 2 - 0.5 + 0.5 * X[:, 7] * X[:, 8] * X[:, 9]
            + X[:, 10:20] @ signs)


def make_data(rows: int, features: int, extra: int, seed: int = 0):
    """``(X_train, y_train, X_other)``: ``rows`` training rows with their labels and ``extra`` more
    rows of the same generator (explained rows and backgrounds), float32.

    Parameters
    ----------
    rows, features, extra : int
        Training rows, columns (at least 20), further rows.
    seed : int
        The generator's seed (``numpy.random.default_rng``).

    Returns
    -------
    tuple of ndarray
        ``X_train`` (rows, features), ``y_train`` (rows,) in {0, 1}, ``X_other`` (extra, features).
    """
    if features < 20:
        raise ValueError(f"the planted margin uses 20 columns; got features={features}")
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows + extra, features), dtype=np.float32)
    p = 1.0 / (1.0 + np.exp(-planted_margin(X[:rows])))
    y = (rng.random(rows) < p).astype(np.float32)
    return X[:rows], y, X[rows:]


def _key(cfg: dict, library: str, version: str) -> str:
    return (f"{library}-{version}-r{cfg['rows']}-f{cfg['features']}-t{cfg['trees']}-d{cfg['depth']}"
            f"-l{cfg['leaves']}-s0")


def lightgbm_model(cfg: dict, X, y):
    """The LightGBM Booster of ``cfg`` (trained, or loaded from the cache) and its training
    seconds and whether it came from the cache."""
    import lightgbm as lgb

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / (_key(cfg, "lightgbm", lgb.__version__) + ".txt")
    params = {"objective": "binary", "max_depth": cfg["depth"], "num_leaves": cfg["leaves"],
              "learning_rate": 0.05, "num_threads": THREADS, "seed": 0, "deterministic": True,
              "verbose": -1}
    return _cached(path, lambda: lgb.train(params, lgb.Dataset(X, y), num_boost_round=cfg["trees"]),
                   lambda p: lgb.Booster(model_file=str(p)),  # the file keeps num_threads
                   lambda b, p: b.save_model(str(p)))


def xgboost_model(cfg: dict, X, y):
    """The XGBoost Booster of ``cfg`` (trained, or loaded from the cache) and its training
    seconds and whether it came from the cache."""
    import xgboost as xgb

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / (_key(cfg, "xgboost", xgb.__version__) + ".ubj")
    params = {"objective": "binary:logistic", "max_depth": cfg["depth"], "eta": 0.05, "nthread": THREADS,
              "tree_method": "hist", "seed": 0}

    def load(p):
        booster = xgb.Booster(params={"nthread": THREADS}, model_file=str(p))
        return booster

    return _cached(path, lambda: xgb.train(params, xgb.DMatrix(X, y), num_boost_round=cfg["trees"]),
                   load, lambda b, p: b.save_model(str(p)))


def _cached(path: Path, train, load, save):
    meta = path.with_suffix(path.suffix + ".json")
    if path.exists() and meta.exists():
        return load(path), json.loads(meta.read_text())["train_s"], True
    start = time.perf_counter()
    booster = train()
    seconds = time.perf_counter() - start
    save(booster, path)
    meta.write_text(json.dumps({"train_s": seconds}))
    return load(path), seconds, False


# ------------------------------------------------------------------------------------------- calls




def _timed(configs: dict, repeats: int) -> dict:
    """:func:`time_alternating` of ``configs``, each call keeping its result (the previous one
    freed inside the call, where it was part of the resident set the call started from) and
    handing the freed heap pages back to the OS (``malloc_trim``) before it returns, so that the
    next call's peak starts from what is really held; ``"last"`` holds the results."""
    held = {}

    def holding(name, fn):
        def call():
            held[name] = fn()
            _trim()

        return call

    timing = time_alternating({name: holding(name, fn) for name, fn in configs.items()}, repeats=repeats)
    timing["last"] = held
    return timing


def _trim() -> None:
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc():
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only
        return libc
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None


_LIBC = _libc()


def _shap_class1(values) -> np.ndarray:
    """shap's values (an Explanation or arrays) as (n, d) or (n, d, d): class 1's for a
    two-column output."""
    v = getattr(values, "values", values)
    if isinstance(v, list):
        v = v[-1]
    v = np.asarray(v, dtype=np.float64)
    return v[..., 1] if v.ndim >= 3 and v.shape[-1] == 2 and v.shape[1] != 2 else v


def _native(booster, library: str, what: str):
    """The library's own call on rows X: ``what`` one of "margin", "contrib", "interactions"."""
    if library == "lightgbm":
        kw = {"margin": {"raw_score": True}, "contrib": {"pred_contrib": True}}[what]
        return lambda X: booster.predict(X, **kw)
    import xgboost as xgb

    kw = {"margin": {"output_margin": True}, "contrib": {"pred_contribs": True},
          "interactions": {"pred_interactions": True}}[what]
    return lambda X: booster.predict(xgb.DMatrix(X), **kw)


def _tolerance(peer_values) -> float:
    return 1e-6 * max(1.0, float(np.max(np.abs(peer_values))))


def _timed_build(fn):
    start = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - start, 3)


def _rows_for(name: str, library: str, booster, cfg: dict, X_all: np.ndarray, train: dict) -> list[dict]:
    import shap

    import featurelens as fl

    n_exp, n_int, n_iv, n_bg = cfg["explain"], cfg["interactions"], cfg["interventional"], cfg["background"]
    X_exp = X_all[:n_exp]
    X_int = X_all[:n_int]
    X_iv = X_all[:n_iv]
    bg = X_all[n_exp:n_exp + n_bg]
    margin = _native(booster, library, "margin")
    repeats = cfg["repeats"]
    common = dict(train, trees=cfg["trees"], max_depth=cfg["depth"], data_rows=cfg["rows"],
                  features=cfg["features"], threads=THREADS, repeats=repeats)
    native_name = "lightgbm pred_contrib" if library == "lightgbm" else "xgboost pred_contribs"
    out = []

    # ---- path-dependent values
    ex, fl_build = _timed_build(lambda: fl.explainer("tree_shap", booster))
    se, shap_build = _timed_build(lambda: shap.TreeExplainer(booster))
    contrib = _native(booster, library, "contrib")
    w = X_exp[:WARM_ROWS]
    timing = _timed({
        "featurelens": _warm_small(lambda: ex.explain(w, target=1), lambda: ex.explain(X_exp, target=1)),
        "shap": _warm_small(lambda: se(w, check_additivity=False), lambda: se(X_exp, check_additivity=False)),
        "native": _warm_small(lambda: contrib(w), lambda: contrib(X_exp)),
        "predict": _warm_small(lambda: margin(w), lambda: margin(X_exp)),
    }, repeats=repeats)
    fl_v = timing["last"]["featurelens"].values
    shap_v = _shap_class1(timing["last"]["shap"])
    nat_v = np.asarray(timing["last"]["native"])[:, :-1]  # the last column is the bias
    floor = timing["best_s"]["predict"]
    floor_text = f"{library} predict (margin) of the same {n_exp} rows, {THREADS} threads"
    extra = dict(common, rows=n_exp, fl_build_s=fl_build, peer_build_s=shap_build)
    out.append(row(SECTION, name, "tree_shap values", "shap", timing, "featurelens", "shap",
                   max_abs_diff(fl_v, shap_v), _tolerance(shap_v), floor, floor_text,
                   note=f"shap's TreeExplainer calls {native_name} for path-dependent values of a "
                        f"{library} Booster ({THREADS} threads); "
                        + _floor_note(timing, "featurelens"), **extra))
    out.append(row(SECTION, name, "tree_shap values (native)", native_name, timing, "featurelens", "native",
                   max_abs_diff(fl_v, nat_v), _tolerance(nat_v), floor, floor_text,
                   note=f"the library's own C++ TreeSHAP ({THREADS} OpenMP threads), the strongest peer; "
                        + _floor_note(timing, "featurelens"), **extra))
    _log_rows(out)
    del timing, fl_v, shap_v, nat_v

    # ---- interaction values (path-dependent)
    exi, fl_build = _timed_build(lambda: fl.explainer("tree_shap", booster, interactions=True))
    wi = X_int[:2]  # interactions cost about d times the values: a short warm-up
    configs = {
        "featurelens": _warm_small(lambda: exi.explain(wi, target=1), lambda: exi.explain(X_int, target=1)),
        "shap": _warm_small(lambda: se(wi, interactions=True), lambda: se(X_int, interactions=True)),
    }
    if library == "xgboost":
        inter = _native(booster, library, "interactions")
        configs["native"] = _warm_small(lambda: inter(wi), lambda: inter(X_int))
    configs["predict"] = _warm_small(lambda: margin(wi), lambda: margin(X_int))
    timing = _timed(configs, repeats=repeats)
    fl_i = timing["last"]["featurelens"].extra["interactions"]
    shap_i = _shap_class1(timing["last"]["shap"])
    floor = timing["best_s"]["predict"]
    floor_text = f"{library} predict (margin) of the same {n_int} rows, {THREADS} threads"
    extra = dict(common, rows=n_int, fl_build_s=fl_build, peer_build_s=shap_build)
    peer_how = ("shap's own C++ TreeSHAP interactions, single-threaded (no thread option; LightGBM has "
                "no native interaction values)" if library == "lightgbm" else
                f"shap's TreeExplainer calls xgboost pred_interactions ({THREADS} threads)")
    out.append(row(SECTION, name, "tree_shap interactions", "shap", timing, "featurelens", "shap",
                   max_abs_diff(fl_i, shap_i), _tolerance(shap_i), floor, floor_text,
                   note=f"{peer_how}; featurelens {THREADS} numba threads; "
                        + _floor_note(timing, "featurelens"), **extra))
    if library == "xgboost":
        nat_i = np.asarray(timing["last"]["native"])[:, :-1, :-1]
        out.append(row(SECTION, name, "tree_shap interactions (native)", "xgboost pred_interactions", timing,
                       "featurelens", "native", max_abs_diff(fl_i, nat_i), _tolerance(nat_i), floor, floor_text,
                       note=f"XGBoost's own C++ interaction values ({THREADS} OpenMP threads); "
                            + _floor_note(timing, "featurelens"), **extra))
    _log_rows(out)
    del timing, fl_i, shap_i

    # ---- interventional values
    exv, fl_build = _timed_build(lambda: fl.explainer("tree_shap", booster, background=bg,
                                                      feature_perturbation="interventional"))
    # The background as a masker keeping all its rows: given a bare array, shap wraps it in
    # ``maskers.Independent(bg)``, whose default ``max_samples=100`` keeps a random 100 of the
    # 1,000 rows (its base value is then the mean margin of those 100).
    sev, shap_build = _timed_build(lambda: shap.TreeExplainer(
        booster, shap.maskers.Independent(bg, max_samples=len(bg)), feature_perturbation="interventional"))
    wv = X_iv[:min(WARM_ROWS, 5)]
    timing = _timed({
        "featurelens": _warm_small(lambda: exv.explain(wv, target=1), lambda: exv.explain(X_iv, target=1)),
        "shap": _warm_small(lambda: sev(wv, check_additivity=False), lambda: sev(X_iv, check_additivity=False)),
        "predict": _warm_small(lambda: margin(wv), lambda: margin(X_iv)),
    }, repeats=repeats)
    fl_v = timing["last"]["featurelens"].values
    shap_v = _shap_class1(timing["last"]["shap"])
    floor = timing["best_s"]["predict"]
    # both against the model itself: the values of each row sum to f(x) - mean f(background)
    gap = margin(X_iv) - margin(bg).mean()
    fl_add = float(np.max(np.abs(fl_v.sum(axis=1) - gap)))
    peer_add = float(np.max(np.abs(shap_v.sum(axis=1) - gap)))
    extra = dict(common, rows=n_iv, background_rows=n_bg, fl_build_s=fl_build, peer_build_s=shap_build,
                 fl_additivity=float(f"{fl_add:.3g}"), peer_additivity=float(f"{peer_add:.3g}"))
    off = ""
    if peer_add > _tolerance(shap_v):
        off = (f"shap's values miss additivity by {peer_add:.3g} (they do not sum to f(x) minus the mean "
               f"margin of the background), featurelens's by {fl_add:.3g}: the difference is shap's; ")
    out.append(row(SECTION, name, "tree_shap interventional", "shap", timing, "featurelens", "shap",
                   max_abs_diff(fl_v, shap_v), _tolerance(shap_v), floor,
                   f"{library} predict (margin) of the same {n_iv} rows, {THREADS} threads",
                   note=off + f"{n_iv} rows against {n_bg} background rows; shap's own C++ interventional "
                        f"TreeSHAP, single-threaded (no thread option; neither library has a native "
                        f"one); featurelens {THREADS} numba threads; "
                        + _floor_note(timing, "featurelens"), **extra))
    _log_rows(out)
    return out


def _log_rows(rows: list) -> None:
    """Print the figures of the rows not printed yet to stderr (progress of a long run)."""
    for r in rows:
        if id(r) not in _LOGGED:
            _LOGGED.add(id(r))
            _logged(r)


_LOGGED: set = set()


def _logged(r: dict) -> None:
    """Print one row's figures to stderr."""
    print(f"[trees] {r['model']} {r['method']}: featurelens {r['fl_s']} s, {r['peer']} {r['peer_s']} s "
          f"(ratio {r['ratio']}), peak {r['fl_peak_mb']} / {r['peer_peak_mb']} MB, max diff "
          f"{r['max_abs_diff']}, floor {r['floor_s']} s", file=sys.stderr, flush=True)


def _floor_note(timing: dict, key: str) -> str:
    """The gap to the model-call floor, in words."""
    ratio = timing["best_s"][key] / max(timing["best_s"]["predict"], 1e-12)
    return (f"featurelens is {ratio:.0f}x the predict floor: predict follows one root-to-leaf path "
            "per tree and row, TreeSHAP visits every leaf's path of every tree (up to 255 per tree) "
            "and evaluates a degree-(depth-1) polynomial per path element, so the floor bounds "
            "no exact TreeSHAP")


# --------------------------------------------------------------------------------------------- run


def _release_heap() -> None:
    """Make the per-call peak memory of :func:`time_alternating` see numpy's and the libraries'
    large allocations: glibc's malloc raises its mmap threshold as large blocks are freed, so after
    training (gigabytes allocated and freed) arrays of tens of MB come from heap pages that stay
    resident, and a call's resident-set peak reads 0. A fixed threshold of 128 KiB
    (``mallopt(M_MMAP_THRESHOLD)``, which also stops the adjustment) maps every large block afresh
    and returns it when freed, for every configuration alike; ``malloc_trim(0)`` hands the free heap
    pages back first (and :func:`_timed` after every call). Not glibc: nothing."""
    if _LIBC is not None:
        _LIBC.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
        _LIBC.malloc_trim(0)


def run(quick: bool, models: tuple = ("LightGBM", "XGBoost")) -> list[dict]:
    """The section's rows (see the module docstring).

    Parameters
    ----------
    quick : bool
        The small configuration (:data:`QUICK`) instead of the full one (:data:`FULL`).
    models : tuple of str
        Which of "LightGBM" and "XGBoost" to run (default both).

    Returns
    -------
    list of dict
        One row per model and method (and per native peer), built by :func:`_scale_common.row`.
    """
    import lightgbm
    import xgboost

    try:
        import numba

        numba.set_num_threads(min(THREADS, numba.config.NUMBA_NUM_THREADS))
    except ImportError:  # the numpy engine runs
        pass
    cfg = QUICK if quick else FULL
    extra_rows = cfg["explain"] + cfg["background"]
    X, y, X_all = make_data(cfg["rows"], cfg["features"], extra_rows)
    out = []
    unknown = set(models) - {"LightGBM", "XGBoost"}
    if unknown:
        raise ValueError(f"models are 'LightGBM' and 'XGBoost'; got {sorted(unknown)}")
    for name, library, build in (("LightGBM", "lightgbm", lightgbm_model), ("XGBoost", "xgboost", xgboost_model)):
        if name not in models:
            continue
        booster, train_s, cached = build(cfg, X, y)
        _release_heap()
        version = lightgbm.__version__ if library == "lightgbm" else xgboost.__version__
        train = {"train_s": round(train_s, 1), "train_cached": cached, "library_version": version}
        print(f"[trees] {name}: trained in {train_s:.1f} s{' (cached)' if cached else ''}", file=sys.stderr, flush=True)
        out.extend(_rows_for(name, library, booster, cfg, X_all, train))
        del booster
    return out


def main(argv=None) -> int:
    """Run the section and print its rows as JSON (also written to ``/tmp/scale_trees_rows.json``)."""
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    models = tuple(a.split("=", 1)[1] for a in argv if a.startswith("--model="))
    rows = run(quick, models or ("LightGBM", "XGBoost"))
    text = json.dumps(rows, indent=1)
    print(text)
    ROWS_JSON.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    raise SystemExit(main())
