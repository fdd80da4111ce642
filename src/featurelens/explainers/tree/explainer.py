"""The registered explainer ``tree_shap`` (:class:`TreeShap`): exact TreeSHAP of a fitted tree model
through the :class:`~featurelens.models.Model` adapter, its units, targets and background resolved
as for every explainer; the values come from :mod:`.engine` (and :mod:`.pipeline` for a
scikit-learn Pipeline)."""

from __future__ import annotations

import dataclasses

import numpy as np

from featurelens._validation import check_bool, check_option

from ...games import split_background
from .._base import Explainer, Requires, register
from .engine import interaction_values, shap_values
from .ensemble import build_ensemble, supported_tree_models
from .fast import fast_explanation
from .functions import probability_refusal, probability_shap
from .paths import prepare_rows
from .pipeline import explain_pipeline_final_step
from .raw_boosters import RawBooster, booster_estimator, is_raw_booster

__all__ = ["TreeShap"]


@dataclasses.dataclass(frozen=True)
class _TreeRequires(Requires):
    """:class:`Requires` that also takes a raw LightGBM / XGBoost Booster seen as an estimator
    (:class:`~featurelens.explainers.tree.raw_boosters.RawBooster`), which is no scikit-learn
    estimator class of the listed names."""

    def why_not(self, model, input_shape: tuple, n_players: int | None = None) -> str | None:
        """The reason ``tree_shap`` does not apply to ``model``, or None (see :class:`Requires`)."""
        estimator = getattr(model, "estimator", None)
        if isinstance(estimator, RawBooster) or is_raw_booster(estimator):
            return Requires.why_not(dataclasses.replace(self, estimators=None), model, input_shape, n_players)
        return super().why_not(model, input_shape, n_players)


def _booster_as_estimator(model):
    """A raw Booster (or a Model around one) as the estimator the Model adapter calls
    (:func:`~featurelens.explainers.tree.raw_boosters.booster_estimator`); anything else as it is.
    For a raw Booster the "raw" output is its raw score, the margin the trees sum to: a Model
    asked for ``output="raw"`` becomes one in the default units."""
    if is_raw_booster(model):
        return booster_estimator(model)
    estimator = getattr(model, "estimator", None)
    if is_raw_booster(estimator) and hasattr(model, "with_output"):
        from ...models import Model

        asked = model.output if model.output_asked and model.output != "raw" else None
        return Model.wrap(booster_estimator(estimator), batch_size=None if model.auto_batch else model.batch_size,
                          output=asked)
    return model


@register("tree_shap")
class TreeShap(Explainer):
    """Exact TreeSHAP (Lundberg et al. 2020) of a fitted tree model; the algorithm is
    ``functions.tree_shap_values`` (per-path products evaluated with Gauss-Legendre nodes, after
    GPUTreeShap, Mitchell et al. 2022, and Linear TreeShap, Yu et al. 2022).

    ``feature_perturbation`` (as shap spells it): ``"tree_path_dependent"`` (coalitions valued by
    the trees' training cover; takes no background) or ``"interventional"`` (the mean of the
    single-reference values over ``background`` rows, Janzing et al. 2020; needs ``background``).
    None (default) follows ``background``: path-dependent without it, interventional with it.
    ``background`` may be weighted (a :class:`~featurelens.games.Background` from
    :func:`~featurelens.games.summarize_background`, or a ``(rows, weights)`` pair): the values
    are then the weighted sum of the single-reference values, exact for any weights (one pass per
    background row; ``params["background_weighted"]``).
    ``batch_size``: rows per model call (target resolution) and rows (times background rows) per
    vectorised step of the tree computation.

    Units (recorded in ``Explanation.output`` and ``params["output"]``, truthfully):

    - regressors: ``"raw"`` (``predict``; the margin for gradient boosting regressors);
    - tree and forest classifiers: their class fractions, ``predict_proba`` itself, recorded as
      asked (``"raw"`` or ``"probability"``); ``"log_odds"`` of averaged fractions is no sum over
      trees and is refused;
    - binary boosting classifiers (GradientBoosting, HistGradientBoosting, LGBM, XGB with a
      logistic link): the trees sum to the log-odds margin. Without ``output=`` (or with
      ``output="log_odds"``) that margin is explained and recorded as ``"log_odds"`` (target 1:
      the margin; target 0: its negative, the log-odds of class 0). ``output="probability"`` (and
      an explicit ``"raw"``, which for a scikit-learn-style classifier means ``predict_proba``)
      explains ``predict_proba[:, target]`` exactly with interventional TreeSHAP
      (``functions.probability_shap``; needs ``background``, refused clearly without it);
    - multi-class boosting classifiers: the per-class margins (``decision_function``, softmax
      logits), recorded as ``"margin"``; probabilities and log-odds of a softmax are no sums over
      trees and are refused;
    - IsolationForest: by default (and with ``output="raw"``) the expected path length
      ``E[h(x)]`` (the mean over trees of the leaf depth plus c(samples in the leaf); what shap's
      TreeExplainer explains), exact path-dependent or interventional, recorded as ``"raw"``
      with ``params["explained"] = "expected_path_length"``. It is not the Model's own output
      (``decision_function``), a monotone increasing function of it: ``score_samples =
      -2 ** (-E[h(x)] / params["c_max_samples"])`` and ``decision_function = score_samples -
      params["offset"]`` (``offset_``); higher values in both mean more normal. For attributions
      of ``decision_function`` itself use a black-box explainer (kernel_shap on the model).

    ``params["base_values"]`` holds one base value per row, so ``base_values + values.sum(axis=1)``
    equals that output (additivity).

    Missing values: NaN in ``x`` and the background is routed exactly as the model's own
    ``predict`` routes it (HistGradientBoosting, LightGBM, XGBoost, and scikit-learn trees and
    forests that accept NaN: each split's stored default direction), so only this explainer's
    Model takes NaN (``featurelens.models.Model.with_missing_values``); inf is refused, and
    models whose library refuses NaN (GradientBoosting*) refuse it here too.

    DataFrames: bool, int and float columns are numbers; pandas ``category`` columns are coded as
    the library codes them (``featurelens.explainers.tree.paths.frame_rows``); object and
    string columns are refused unless the model is a scikit-learn Pipeline that encodes them.

    A fitted scikit-learn ``Pipeline`` whose final step is a tree model is explained on the
    transformed features (``pipeline.explain_pipeline_final_step``): ``feature_names`` from
    ``pipeline[:-1].get_feature_names_out()``, ``data`` the transformed rows.

    ``interactions=True`` also computes the SHAP interaction values of the same output
    (``functions.tree_shap_interaction_values``, Lundberg et al. 2020) into
    ``Explanation.extra["interactions"]``, shape (n, d, d), each row summing to ``values``
    (not for the probability units).

    Raw boosters: a ``lightgbm.Booster`` or ``xgboost.Booster`` (what ``lgb.train`` /
    ``xgb.train`` return, or a saved model file loads into) is explained as its scikit-learn
    wrapper would be, in the units of its objective: binary logistic objectives in ``"log_odds"``,
    multi-class ones in ``"margin"`` (one per class), every other objective in ``"raw"`` (its raw
    score, e.g. the log of a Poisson mean); the values equal the library's own ``pred_contrib`` /
    ``pred_contribs``. The Model calls the Booster through
    ``featurelens.explainers.tree.booster_estimator``; to ask for other units (``output=``) pass
    ``booster_estimator(booster)`` itself.

    Model calls: the trees are read directly, once, when the explainer is built. With a given
    ``target``, rows of numbers take a short path (``explainers/tree/fast.py``) that calls the model not at all
    (``model_calls`` 0); ``target=None`` (the predicted class) costs one pass over the rows.

    Compiled kernels: where numba is installed the values come from compiled kernels, cached on
    disk the first time they run (one compile per machine, see
    ``featurelens.explainers.tree.numba_kernels``); without numba a numpy engine gives the same
    values, more slowly.
    """

    audit_default = "reads the trees of a fitted tree model and explains in its own units; request it with methods="
    requires = _TreeRequires(gradients=False, estimators=supported_tree_models())
    numpy_inputs = True  # the trees are read in numpy: no torch on this path
    accepts: frozenset = frozenset()  # no shared harness options (no seed, baseline or groups)

    outputs = ("raw", "probability", "log_odds")  # which ones apply depends on the trees (above)

    @classmethod
    def model_for_explaining(cls, model):
        """A raw LightGBM/XGBoost Booster (or a Model around one) as the classifier or regressor
        its objective makes it (:func:`_booster_as_estimator`); any other model as it is.

        Parameters
        ----------
        model : object
            The model given to ``fl.explainer("tree_shap", model, ...)``.

        Returns
        -------
        object
            What the explainer's Model wraps.

        Examples
        --------
        >>> TreeShap.model_for_explaining(gradient_boosting) is gradient_boosting
        True
        """
        return _booster_as_estimator(model)

    def __init__(self, model, background=None, batch_size: int | None = None,
                 interactions: bool = False, feature_perturbation: str | None = None):
        super().__init__(_booster_as_estimator(model), batch_size=batch_size)
        explicit = getattr(self.model, "output_asked", False)  # output="raw" asked, not the default
        self.interactions = check_bool(interactions, "interactions")
        fp = check_option(feature_perturbation, "feature_perturbation",
                          (None, "interventional", "tree_path_dependent"))
        if fp == "interventional" and background is None:
            raise ValueError("feature_perturbation='interventional' averages over background rows; "
                             "pass background= (rows like x), or use feature_perturbation="
                             "'tree_path_dependent' (no background)")
        if fp == "tree_path_dependent" and background is not None:
            raise ValueError("feature_perturbation='tree_path_dependent' values coalitions by the trees' "
                             "training cover and takes no background; drop background= or pass "
                             "feature_perturbation='interventional'")
        est = self.model.estimator
        self._pipeline = None
        if type(est).__name__ == "Pipeline" and type(est).__module__.startswith("sklearn."):
            self._pipeline = est
            self._ensemble = build_ensemble(est.steps[-1][1])  # TypeError naming the supported models
            self._pipeline_background = background
        else:
            reason = self.requires.why_not(self.model, (est.n_features_in_,)
                                           if hasattr(est, "n_features_in_") else (1,))
            if reason is not None:
                raise TypeError(f"explainer 'tree_shap' {reason}")
            self._ensemble = build_ensemble(est)
            if self._ensemble.allow_nan:  # the trees route NaN as the model's predict does
                self.model = self.model.with_missing_values()
        self._mode, self._units = self._resolve_units(explicit, background)
        if self._mode == "probability" and self.interactions:
            raise ValueError("interactions=True explains the trees' own output; the probability of a "
                             "booster is explained by rescaled interventional values, which have no "
                             "interaction matrix: use output='log_odds' for interactions")
        if self._pipeline is not None and self._mode == "probability":
            raise ValueError("output='probability' of a Pipeline's booster is not supported; explain the "
                             "margin (output='log_odds'), or the final step on pipeline[:-1].transform(X)")
        self.feature_perturbation = "tree_path_dependent" if background is None else "interventional"
        self._background_rows = None if background is None else int(np.shape(split_background(background)[0])[0])
        self.background_weights = None
        if background is None or self._pipeline is not None:
            self.background = None
        else:
            # weighted rows (summarize_background's centres, or a (rows, weights) pair)
            background, weights = split_background(background)
            if weights is not None and not np.allclose(weights, weights[0], rtol=0, atol=1e-15):
                self.background_weights = np.asarray(weights, dtype=np.float64)
            bg = self.model.to_tensor(background, "background")
            bg = bg.detach().cpu().numpy() if hasattr(bg, "detach") else np.asarray(bg)
            self.background = self._rows(bg.reshape(bg.shape[0], -1), "background")

    def _resolve_units(self, explicit, background):
        """``(mode, units)``: what is computed ("trees": the trees' own sum; "probability": the
        rescaled interventional values of sigmoid(margin)) and the units recorded."""
        ens, asked = self._ensemble, self.model.output
        name = type(self.model.estimator).__name__
        # "raw" of a Model called through decision_function is the margin itself
        raw_is_margin = not explicit or self.model.returns == "margin"
        if ens.units == "raw":
            return "trees", "raw"  # a regressor (the Model refuses other units for it)
        if ens.units == "probability":
            if asked == "log_odds":
                raise ValueError(f"explainer 'tree_shap' explains {name}'s class fractions (predict_proba), "
                                 "a sum over its trees; their log-odds are not, so output='log_odds' is "
                                 "not exact here: use output='probability' (or 'raw'), or a black-box "
                                 "explainer (kernel_shap) with output='log_odds'")
            return "trees", asked
        if ens.units == "log_odds":
            if asked == "log_odds" or (asked == "raw" and raw_is_margin):
                return "trees", "log_odds"
            reason = probability_refusal(ens, name, background)
            if reason is not None:
                what = ("output='raw' is predict_proba for this classifier, and " if asked == "raw"
                        else "output='probability': ")
                raise ValueError(f"explainer 'tree_shap': {what}{reason}")
            return "probability", asked
        # "margin": multi-class (softmax) margins
        if asked == "raw" and raw_is_margin:
            return "trees", "margin"
        what = "output='raw' is predict_proba for this classifier" if asked == "raw" else f"output={asked!r}"
        raise ValueError(f"explainer 'tree_shap': {what}, and {probability_refusal(ens, name, None)}; "
                         "without output= the margins are explained (recorded as 'margin')")

    def _rows(self, arr, name):
        """Rows from the Model (numbers, category codes) prepared for the trees. A model with its
        own preprocessing (HistGradientBoosting's categorical features) or with categorical
        columns gets them as it takes them (the Model decodes its codes back to the values
        first), so the trees see the codes the library itself computes."""
        if isinstance(self.model.estimator, RawBooster) and self.model.categories:
            raise TypeError(f"{name} has non-numeric column(s) {list(self.model.categories)[:5]}; a raw "
                            "Booster takes numbers (category codes as numbers, as booster.predict takes "
                            "them): give the codes, or fit the library's scikit-learn wrapper")
        if self._ensemble.preprocess is not None or (self.model.categories and self.model.feature_names):
            arr = self.model.decode(arr)
        return prepare_rows(arr, name, self._ensemble)

    def params(self) -> dict:
        params = super().params()
        params["output"] = self._units
        params["feature_perturbation"] = self.feature_perturbation
        params["background_rows"] = self._background_rows
        params["background_weighted"] = self.background_weights is not None
        params["interactions"] = self.interactions
        if self._ensemble.explained is not None:  # what "raw" is here (an IsolationForest)
            params["explained"] = self._ensemble.explained
        if self._ensemble.isolation is not None:
            params.update(self._ensemble.isolation)
        return params

    def explain(self, x, target=None, feature_names=None, *args, **kwargs):
        """Explain the rows ``x`` for ``target``, as :meth:`Explainer.explain
        <featurelens.explainers.Explainer.explain>`; a Pipeline's rows are explained on its
        transformed features.

        Rows of numbers (a float array, a DataFrame of numeric columns) with a given ``target``
        take a short path (``explainers/tree/fast.py``) that reads the trees only: the same
        explanation, no model call. ``target=None`` (the predicted class) costs one model pass over the rows.

        Parameters
        ----------
        x : array-like or DataFrame, (n, d)
            The rows to explain.
        target : None, int or array-like of int
            The output explained per row (see :class:`TreeShap` for the binary boosters' targets).
        feature_names : list of str, optional
            One name per column (default: a DataFrame's columns).
        *args, **kwargs
            The other arguments of :meth:`Explainer.explain <featurelens.explainers.Explainer.explain>`.

        Returns
        -------
        Explanation
            Values (n, d), base values per row, units in ``output``; interaction values in
            ``extra["interactions"]`` with ``interactions=True``.
        """
        if self._pipeline is not None:
            if args or kwargs.get("executor") is not None:
                raise TypeError("tree_shap of a Pipeline explains its rows in one call (no executor)")
            return self._explain_pipeline(x, target, feature_names)
        e = fast_explanation(self, x, target, feature_names, args, kwargs)
        if e is not None:
            return e
        if isinstance(self.model.estimator, RawBooster) and hasattr(x, "dtypes") and getattr(x, "ndim", 0) == 2:
            odd = [str(c) for c, dt in zip(x.columns, x.dtypes) if getattr(dt, "kind", "O") not in "biuf"]
            if odd:
                raise TypeError(f"x has non-numeric column(s) {odd[:5]}; a raw Booster takes numbers "
                                "(category codes as numbers, as booster.predict takes them): give the "
                                "codes, or fit the library's scikit-learn wrapper")
        if not self._ensemble.allow_nan:  # the library's own rule, named (before any model call)
            try:
                missing = bool(np.isnan(np.asarray(x, dtype=np.float64)).any())
            except (TypeError, ValueError):  # categorical columns: the Model checks them
                missing = False
            if missing:
                raise ValueError(f"x contains NaN values; expected finite numbers ({self._ensemble.nan_reason})")
        e = super().explain(x, target, feature_names, *args, **kwargs)
        e.output = self._units
        return e

    def _select(self, values, base, inter, t, n):
        """The target's output of the trees' values: ``(values, base per row, interactions)``."""
        if values.ndim == 3:  # one column per output: pick the target's
            values = values[np.arange(n), :, t]
            base = np.asarray(base)[t]
            if inter is not None:
                inter = inter[np.arange(n), :, :, t]
        else:
            base = np.full(n, float(base))
            est = self.model.estimator
            est = est.steps[-1][1] if self._pipeline is not None else est
            through = getattr(self.model.function, "__name__", "")
            if len(getattr(est, "classes_", ())) == 2 and through != "decision_function":
                sign = np.where(t == 1, 1.0, -1.0)  # the margin is class 1's log-odds
                if (sign < 0).any():  # class 1 everywhere (the usual call): no copy of the values
                    values = values * sign[:, None]
                # the probability of class 0 is 1 - p1: its base is 1 - base
                base = base * sign + (np.where(t == 1, 0.0, 1.0) if self._mode == "probability" else 0.0)
                if inter is not None and (sign < 0).any():
                    inter = inter * sign[:, None, None]
        return values, base, inter

    def _compute(self, rows, bg, step):
        if self.background_weights is not None:
            # Interventional values are linear in the background distribution: the weighted sum
            # of the single-reference values (one background row each), exact for any weights.
            total = None
            for w, row in zip(self.background_weights, bg):
                part = self._compute_uniform(rows, row[None], step)
                total = [None if p is None else w * np.asarray(p, dtype=np.float64) for p in part] if total is None \
                    else [None if t is None else t + w * np.asarray(p, dtype=np.float64) for t, p in zip(total, part)]
            values, base, inter = total
            return values, (float(base) if np.ndim(base) == 0 else base), inter
        return self._compute_uniform(rows, bg, step)

    def _compute_uniform(self, rows, bg, step):
        if self._mode == "probability":
            values, base = probability_shap(self._ensemble, rows, bg, step)
            return values, base, None
        values, base = shap_values(self._ensemble, rows, bg, step)
        inter = None
        if self.interactions:  # the diagonal from the values just computed
            inter = interaction_values(self._ensemble, rows, bg, step, shap=(values, base))[0]
        return values, base, inter

    def _attribute(self, x, target, outputs=None, **kwargs):
        if kwargs:
            raise TypeError(f"tree_shap's explain got unknown argument(s) {', '.join(kwargs)}")
        arr = x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
        if arr.ndim != 2:
            raise ValueError(f"tree_shap explains tabular rows, shape (n, d); got x of shape {arr.shape}")
        rows = self._rows(arr, "x")
        step = 256 if self.model.auto_batch else int(self.model.batch_size)
        values, base, inter = self._compute(rows, self.background, step)
        t = np.asarray(target.detach().cpu().numpy() if hasattr(target, "detach") else target).astype(np.int64)
        values, base, inter = self._select(values, base, inter, t, rows.shape[0])
        extra = {"base_values": [float(b) for b in base]}
        if inter is not None:
            extra["arrays"] = {"interactions": inter}
        return values, extra

    def _explain_pipeline(self, x, target, feature_names):
        """The final step on the transformed rows (:func:`explain_pipeline_final_step`), the
        target's output picked as for any model (None: the pipeline's predicted class)."""
        import time

        from featurelens._validation import resolve_target
        from featurelens.explanation import Explanation

        start, calls = time.perf_counter(), self.model.calls
        e = explain_pipeline_final_step(self._pipeline, x, background=self._pipeline_background,
                                        interactions=self.interactions)
        n = e.values.shape[0]
        outputs = self.model.predict(self.model.to_tensor(x)) if target is None else None
        if target is None:
            t = np.asarray(outputs.detach().cpu().numpy() if hasattr(outputs, "detach") else outputs).argmax(axis=1)
        else:
            n_out = int(self.model.predict(self.model.to_tensor(x)[:1]).shape[1])
            t = np.asarray(resolve_target(target, n, n_out)).astype(np.int64)
        values, base = e.values, e.base_values
        inter = e.extra.get("interactions")
        if values.ndim == 3:  # (n, k, d) -> the trees' layout (n, d, k) for _select
            values, base = np.moveaxis(values, 1, -1), np.asarray(base)[0]
            inter = None if inter is None else np.moveaxis(inter, 1, -1)
        else:
            base = float(np.asarray(base)[0])
        values, base, inter = self._select(values, base, inter, t, n)
        params = dict(self.params())
        params.update(e.params)
        params["output"] = self._units
        params["base_values"] = [float(b) for b in base]
        names = e.feature_names if feature_names is None else list(feature_names)
        return Explanation(values=values, method="tree_shap", params=params, target=t,
                           model_calls=self.model.calls - calls, seconds=time.perf_counter() - start,
                           extra={} if inter is None else {"interactions": inter},
                           feature_names=names, data=e.data, base_values=np.asarray(base, dtype=np.float64),
                           output=self._units)
