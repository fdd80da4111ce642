"""The tree IR: root-to-leaf paths with merged features (:class:`Paths`), the ensemble of them
(:class:`Ensemble`) and the checks of the rows it explains (:func:`prepare_rows`).

Every reader (:mod:`.ensemble` for scikit-learn, :mod:`.boosters` for LightGBM and XGBoost) turns
a model into these arrays; the engine (:mod:`.engine`) computes TreeSHAP values from them only.
"""

from __future__ import annotations

import numpy as np

from featurelens._validation import as_numpy


# --------------------------------------------------------------------------------------------------
# the tree IR: one array set per tree, one row per root-to-leaf path


class Paths:
    """Root-to-leaf paths of one tree with repeated features merged.

    ``feature`` (P, D) int (padding: feature 0 with ``valid`` False), ``lower``/``upper`` (P, D):
    x satisfies a numerical element iff lower < x <= upper; ``nan_ok`` (P, D): whether NaN
    satisfies it; ``zero`` (P, D): product of cover ratios of its splits (1 for padding);
    ``value`` (P, K): leaf value times the tree's scale.

    Categorical splits (LightGBM, XGBoost, HistGradientBoosting with categorical features):
    ``is_cat`` (P, D) marks categorical elements and ``cats`` (P, D, C + 1) says which values
    satisfy them: ``cats[p, j, c]`` for a category c in 0..C-1 and ``cats[p, j, C]`` for any other
    non-NaN value (negative, non-integer or >= C). ``cats`` has C = 0 when the tree has no
    categorical split (then ``is_cat`` is all False).
    """

    __slots__ = ("feature", "lower", "upper", "nan_ok", "zero", "valid", "value", "is_cat", "cats")

    def __init__(self, feature, lower, upper, nan_ok, zero, valid, value, is_cat=None, cats=None):
        self.feature, self.lower, self.upper = feature, lower, upper
        self.nan_ok, self.zero, self.valid, self.value = nan_ok, zero, valid, value
        self.is_cat = np.zeros(feature.shape, dtype=bool) if is_cat is None else is_cat
        self.cats = np.zeros(feature.shape + (1,), dtype=bool) if cats is None else cats

    @property
    def has_categories(self) -> bool:
        return bool(self.is_cat.any())


def extract_paths(left, right, feature, threshold, nan_left, cover, leaf_value, scale,
                   categorical=None) -> Paths:
    """Walk a tree (arrays indexed by node; ``left[n] < 0`` at leaves) into merged paths.

    Going left means ``x <= threshold`` (or NaN with ``nan_left``); going right ``x > threshold``.
    ``leaf_value`` is (n_nodes, K); ``cover`` (n_nodes,) the training weight at each node.

    ``categorical``: None, or a dict ``{node: (left_categories, other_left)}`` for the nodes that
    split on a category: x goes left iff it is a non-negative integer in ``left_categories`` (a
    set of ints), or, for any other non-NaN value (a category not listed, negative, non-integer),
    iff ``other_left``; NaN follows ``nan_left`` as for numerical splits. Category values must be
    below ``2**20``. A third item ``listed_left=False`` (``(categories, other_left, False)``)
    reverses the listed set: the listed categories go right and every other category (also the
    ones above the largest listed) goes left, as XGBoost stores its splits (the right set).
    """
    categorical = categorical or {}
    if not categorical:
        fast = _numeric_paths(left, right, feature, threshold, nan_left, cover, leaf_value, scale)
        if fast is not None:
            return fast
    # an element: (lo, hi, nan_ok, zero, cats); cats None for numerical splits, else a category
    # condition (set, other_ok, listed) of _intersect_cats
    rows = []
    stack = [(0, {})]
    max_cat = -1
    while stack:
        node, elems = stack.pop()
        if left[node] < 0:
            rows.append((elems, leaf_value[node] * scale))
            continue
        f = int(feature[node])
        t = float(threshold[node])
        parent = float(cover[node])
        split = categorical.get(node)
        if split is not None:
            left_set = frozenset(int(c) for c in split[0])
            other_left = bool(split[1])
            listed_left = bool(split[2]) if len(split) > 2 else True
            if left_set:
                max_cat = max(max_cat, max(left_set))
        for child, is_left in ((int(left[node]), True), (int(right[node]), False)):
            ratio = float(cover[child]) / parent if parent > 0 else 0.0
            lo, hi, nan_ok, zero, cats = elems.get(f, (-np.inf, np.inf, True, 1.0, None))
            nan_ok = nan_ok and (bool(nan_left[node]) if is_left else not bool(nan_left[node]))
            if split is not None:
                # the categories going this way, as (set, other_ok, listed): the set itself on
                # the left, every category but the set on the right (see _intersect_cats)
                # (with listed_left False the set is the right one: the sides swap)
                step = (left_set, other_left if is_left else not other_left, is_left == listed_left)
                cats = step if cats is None else _intersect_cats(cats, step)
            elif is_left:
                hi = min(hi, t)
            else:
                lo = max(lo, t)
            new = dict(elems)
            new[f] = (lo, hi, nan_ok, zero * ratio, cats)
            stack.append((child, new))
    n_paths = len(rows)
    depth = max(1, max(len(e) for e, _ in rows))
    k = np.asarray(rows[0][1]).size
    feat = np.zeros((n_paths, depth), dtype=np.int64)
    lower = np.full((n_paths, depth), -np.inf)
    upper = np.full((n_paths, depth), np.inf)
    nan_ok = np.ones((n_paths, depth), dtype=bool)
    zero = np.ones((n_paths, depth))
    valid = np.zeros((n_paths, depth), dtype=bool)
    value = np.zeros((n_paths, k))
    n_cat = max_cat + 1
    if n_cat >= 2**20:
        raise ValueError(f"a categorical split uses category {max_cat}; at most 2**20 - 1 is supported")
    is_cat = np.zeros((n_paths, depth), dtype=bool)
    cat_ok = np.zeros((n_paths, depth, n_cat + 1), dtype=bool)
    for p, (elems, val) in enumerate(rows):
        value[p] = np.ravel(val)
        for j, (f, (lo, hi, ok, z, cats)) in enumerate(sorted(elems.items())):
            feat[p, j], lower[p, j], upper[p, j], nan_ok[p, j], zero[p, j] = f, lo, hi, ok, z
            valid[p, j] = True
            if cats is not None:
                allowed, other_ok, listed = cats
                is_cat[p, j] = True
                if listed:  # allowed categories are exactly the set
                    cat_ok[p, j, [c for c in allowed if c < n_cat]] = True
                else:  # every category except the set
                    cat_ok[p, j, :n_cat] = True
                    cat_ok[p, j, [c for c in allowed if c < n_cat]] = False
                cat_ok[p, j, n_cat] = other_ok
    return Paths(feat, lower, upper, nan_ok, zero, valid, value, is_cat, cat_ok)


def _numeric_paths(left, right, feature, threshold, nan_left, cover, leaf_value, scale):
    """The paths of a tree with numerical splits only, walked by the compiled walker (None
    without numba: the Python walk of :func:`extract_paths` runs)."""
    from . import numba_kernels

    if not numba_kernels.HAVE_NUMBA:
        return None
    from .numba_walk import walk_numeric_tree

    f, lo, hi, nan_ok, zero, length, leaf_node = walk_numeric_tree(
        left, right, feature, threshold, nan_left, cover)
    width = max(1, int(length.max()))
    valid = np.arange(width)[None, :] < length[:, None]
    value = np.asarray(leaf_value, dtype=np.float64)[leaf_node] * scale
    return Paths(f[:, :width].copy(), lo[:, :width].copy(), hi[:, :width].copy(),
                 nan_ok[:, :width].copy(), zero[:, :width].copy(), valid,
                 value.reshape(len(leaf_node), -1))


def _intersect_cats(a, b):
    """The intersection of two category conditions ``(set, other_ok, listed)``: the categories
    satisfying one are ``set`` when ``listed``, else every category not in ``set``; ``other_ok``
    says whether values that are no category (negative, non-integer, beyond the tree's largest)
    satisfy it."""
    set_a, other_a, listed_a = a
    set_b, other_b, listed_b = b
    other = other_a and other_b
    if listed_a and listed_b:
        return (set_a & set_b, other, True)
    if listed_a:
        return (set_a - set_b, other, True)
    if listed_b:
        return (set_b - set_a, other, True)
    return (set_a | set_b, other, False)


def forest_paths(trees):
    """The paths of many trees with numerical splits only, read by one compiled walk
    (:func:`.numba_walk.walk_forest`), or None without numba (then :func:`extract_paths` reads
    each tree in Python).

    Parameters
    ----------
    trees : list of tuple
        Per tree ``(left, right, feature, threshold, nan_left, cover, leaf_value, scale)`` as
        :func:`extract_paths` takes them (``leaf_value`` (n_nodes, K), the same K for every tree).

    Returns
    -------
    tuple or None
        ``(paths, packed)``: a function returning one :class:`Paths` per tree (views of the
        forest's arrays; the numpy engine's input, built only when it runs) and the compiled
        engine's arrays (:func:`.numba_kernels.pack_arrays`).
    """
    from . import numba_kernels

    if not numba_kernels.HAVE_NUMBA or not trees:
        return None
    from .numba_walk import walk_forest

    f, lo, hi, nan_ok, zero, length, leaf_node, leaf_start, nodes, node_start = walk_forest(
        [t[:6] for t in trees])
    sizes = np.diff(node_start)
    k = np.asarray(trees[0][6]).reshape(sizes[0], -1).shape[1]
    scale = np.array([float(t[7]) for t in trees])
    # every node's value times its tree's scale (the walk of numba_walk.walk_values reads leaves)
    node_value = np.concatenate([np.asarray(t[6], dtype=np.float64).reshape(-1, k) for t in trees])
    node_value *= np.repeat(scale, sizes)[:, None]
    tree_of = np.repeat(np.arange(len(trees)), np.diff(leaf_start))
    value = node_value[node_start[tree_of] + leaf_node]
    depth = f.shape[1]  # the deepest tree's depth (levels below the root)
    width = max(1, int(length.max()))
    f, lo, hi = f[:, :width], lo[:, :width], hi[:, :width]
    nan_ok, zero = nan_ok[:, :width], zero[:, :width]
    packed = numba_kernels.pack_arrays(f, lo, hi, nan_ok, zero, length, value,
                                       nodes=nodes + (node_value, node_start, int(depth)))

    def per_tree():
        out = []
        for t in range(len(trees)):
            a, b = leaf_start[t], leaf_start[t + 1]
            w = max(1, int(length[a:b].max()))
            valid = np.arange(w)[None, :] < length[a:b, None]
            out.append(Paths(f[a:b, :w], lo[a:b, :w], hi[a:b, :w], nan_ok[a:b, :w], zero[a:b, :w],
                             valid, value[a:b]))
        return out

    return per_tree, packed


class Ensemble:
    """Paths of every tree, the constant added to the sum of trees, the output layout.

    ``paths`` is a list of :class:`Paths` (one per tree), or a function returning it, called on
    first use of :attr:`paths` (:func:`forest_paths`: the compiled engine reads ``packed`` and
    never needs them).
    """

    def __init__(self, paths, offset, n_out, squeeze, float32, allow_nan, n_features, input_map=None,
                 preprocess=None, tree_columns=None):
        self._paths = paths
        self.offset = np.asarray(offset, dtype=np.float64).reshape(n_out)
        self.n_out = n_out
        self.squeeze = squeeze  # return (n, d) and a float when True
        self.float32 = float32  # scikit-learn trees compare float32(x) <= threshold
        self.allow_nan = allow_nan
        self.n_features = n_features
        # None, or a function applied by prepare_rows to the checked (and float32-rounded) float64 rows
        # before the engine sees them: how a library reads a value before comparing it (LightGBM
        # truncates categories to integers and reads zeros as missing on "Zero" features; XGBoost
        # reads its ``missing`` value as missing). The engine itself never needs to know.
        self.input_map = input_map
        # None, or the model's own preprocessing of the rows as the user gives them (a DataFrame
        # with categories, say) into the columns the trees split on, and for each of those
        # columns the input column it comes from (HistGradientBoosting's categorical features):
        # prepare_rows applies the first, the engine maps the values back with the second.
        self.preprocess = preprocess
        self.tree_columns = tree_columns
        # How a DataFrame's pandas ``category`` columns become the numbers the trees compare
        # (:func:`frame_rows`): None (the library takes no categories: refused), "codes" (the
        # column's own ``cat.codes``), ("lightgbm", [categories per category column, in order])
        # or ("xgboost", {column index: categories}): the codes the library itself computes.
        self.frame_categories = None
        # What the trees' sum is in: "raw" (a regression output), "probability" (class fractions
        # of tree and forest classifiers, predict_proba itself), "log_odds" (the one margin of a
        # binary booster with a logistic link: predict_proba[:, 1] = sigmoid of it) or "margin"
        # (per-class margins of a multi-class booster, softmax logits, or a margin without a known
        # probability link). The builders set it; unknown models stay "raw".
        self.units = "raw"
        # What the trees' sum is, where "raw" alone would not say it: None (the model's own raw
        # output), or "expected_path_length" (an IsolationForest: the mean over its trees of the
        # depth at which x is isolated, E[h(x)], not its score_samples / decision_function); and,
        # for an IsolationForest, ``isolation`` = {"c_max_samples", "offset"}: the constants of
        # score_samples = -2 ** (-E[h(x)] / c_max_samples), decision_function = score_samples - offset.
        self.explained = None
        self.isolation = None
        # The compiled engine's arrays for this ensemble (:func:`.numba_kernels.pack`), built on
        # first use by :mod:`.engine` and kept here; None until then.
        self.packed = None
        # What NaN is refused with when ``allow_nan`` is False (the library's own rule).
        self.nan_reason = ("only HistGradientBoosting, LightGBM, XGBoost and scikit-learn trees "
                           "and forests that accept missing values route them")

    @property
    def paths(self) -> list:
        """One :class:`Paths` per tree."""
        if callable(self._paths):
            self._paths = self._paths()
        return self._paths

    @paths.setter
    def paths(self, value):
        self._paths = value


def frame_rows(frame, name, ens: Ensemble) -> np.ndarray:
    """A DataFrame as the float64 rows the trees compare, one rule for every library: float, int
    and bool columns (pandas' nullable ones too, ``pd.NA`` as NaN) as their numbers; pandas
    ``category`` columns as the codes the library itself computes (LightGBM: the categories it
    saw in training, ``pandas_categorical``, unseen values NaN; XGBoost: the categories stored in
    the model, unseen values an invalid category; HistGradientBoosting: its own preprocessor, see
    ``Ensemble.preprocess``); object and string columns are refused (no library here splits on
    strings: encode them, or explain a Pipeline that does)."""
    import pandas as pd

    n, d = frame.shape
    out = np.empty((n, d), dtype=np.float64)
    spec = ens.frame_categories
    cat_seen = 0  # LightGBM zips its category lists with the frame's category columns in order
    for j in range(d):
        column, dtype = frame.columns[j], frame.dtypes.iloc[j]
        series = frame.iloc[:, j]
        if isinstance(dtype, pd.CategoricalDtype):
            if spec is None:
                raise TypeError(
                    f"{name} column {column!r} is a pandas category column, and this model type takes "
                    "no categories (it was fitted on numbers): give the numbers it was fitted on"
                )
            if spec == "codes":
                codes = series.cat.codes.to_numpy().astype(np.float64)
                codes[codes < 0] = np.nan
            else:
                library, table = spec
                if library == "lightgbm":
                    if cat_seen >= len(table):
                        raise ValueError(f"{name} has more category columns than the LightGBM model was "
                                         f"fitted with ({len(table)}); column {column!r} is one too many")
                    cats = table[cat_seen]
                else:
                    cats = table.get(j)
                cat_seen += 1
                # position of each value among the library's categories (-1: unseen or missing)
                codes = pd.Index(cats).get_indexer(series.astype(object).to_numpy()).astype(np.float64)
                unseen = (codes < 0) & series.notna().to_numpy()
                codes[codes < 0] = np.nan
                if library == "xgboost":
                    codes[unseen] = -1.0  # an invalid category, as XGBoost reads an unseen one
            out[:, j] = codes
        elif getattr(dtype, "kind", "O") in "biuf":
            out[:, j] = series.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            raise TypeError(
                f"{name} column {column!r} has dtype {dtype}; tree models split on numbers: give "
                "numbers, bools or pandas category columns (LightGBM, XGBoost, HistGradientBoosting), "
                "or explain a scikit-learn Pipeline that encodes the column (fl.explainer('tree_shap', "
                "pipeline))"
            )
    if spec is not None and spec != "codes" and spec[0] == "lightgbm" and cat_seen != len(spec[1]):
        raise ValueError(f"{name} has {cat_seen} pandas category column(s); the LightGBM model was "
                         f"fitted with {len(spec[1])}")
    return out


def prepare_rows(X, name, ens: Ensemble, allow_empty=False):
    """``X`` (array-like or DataFrame, (n, d) or (d,)) as the rows ``ens`` compares (float64, or
    float32 as given when no value map applies): run
    through the model's own preprocessing (``ens.preprocess``) and :func:`frame_rows` where they
    apply, checked (numbers, ``d`` columns, at least one row unless ``allow_empty``, no inf, NaN
    only where the library routes it), float32-rounded where the library compares in float32 and
    read as the library reads values (``ens.input_map``). Errors name ``name``."""
    if ens.preprocess is not None:
        try:
            X = ens.preprocess(X)
        except Exception as err:  # the model's own preprocessor: wrong columns, unknown dtype
            raise ValueError(f"{name} could not be preprocessed as the model's categorical features "
                             f"({type(err).__name__}: {err})") from err
    if type(X).__module__.split(".")[0] == "pandas" and hasattr(X, "dtypes") and getattr(X, "ndim", 0) == 2:
        X = frame_rows(X, name, ens)
    arr = as_numpy(X, name)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be a numeric array; got dtype {arr.dtype}")
    # float32 rows stay float32 (half the memory of a float64 copy; the kernels compare them
    # with the float64 thresholds after an exact promotion), unless a value map must read them.
    keep32 = arr.dtype == np.float32 and ens.input_map is None
    arr = np.asarray(arr, dtype=np.float32 if keep32 else np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != ens.n_features:
        raise ValueError(
            f"{name} must have shape (n_rows, {ens.n_features}) (the model was fitted on "
            f"{ens.n_features} features); got shape {tuple(as_numpy(X, name).shape)}"
        )
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name} must have at least one row; got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains inf values; expected finite numbers")
    if np.isnan(arr).any() and not ens.allow_nan:
        raise ValueError(f"{name} contains NaN values; expected finite numbers ({ens.nan_reason})")
    if ens.float32 and arr.dtype != np.float32:  # float32 rows are already what it compares
        arr = arr.astype(np.float32).astype(np.float64)
    if ens.input_map is not None:
        arr = ens.input_map(arr)
    return arr
