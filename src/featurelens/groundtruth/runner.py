"""The ground-truth benchmark behind ``featurelens benchmark``.

For every XAI-TRIS scenario x background (Clark, Wilming, Haufe 2024, arXiv 2306.12816):

1. generate the data set (:func:`featurelens.datasets.xai_tris`) and split it 80/10/10;
2. train each reference model (:mod:`featurelens.groundtruth.models`; the LLR only on ``linear``, where a
   linear model can solve the task) with early stopping (:func:`~featurelens._training.train_model`);
3. keep the test samples that **all** models of the data set classify correctly (the XAI-TRIS
   "intersection"), at most ``n_explain`` of them;
4. explain each model's true-label logit on them with every method, and score the maps against
   the planted masks with :func:`~featurelens.metrics.precision_at_k`,
   :func:`~featurelens.metrics.iou_at_k` and :func:`~featurelens.metrics.emd_score`.

On 64x64 images the EMD score is computed on 2x2 blocks (``emd_score(..., pool=2)``, at most
0.016 from the exact score; recorded as ``settings["emd_pool"]``), since the exact transport
problem of a dense 64x64 map takes seconds.

Every (scenario, background, model, method) gets a row whose ``status`` says what happened and
whose ``reason`` says why when there are no scores: ``"ok"``, ``"not applicable"`` (decided before
running, from the explainer's declared :attr:`~featurelens.explainers.Explainer.requires`, or, for
deconvolution and guided backpropagation, because the model has no ``torch.nn.ReLU`` and the result
would be the plain gradient) or ``"failed"`` (the exception). Methods that average over reference
rows (DeepLiftSHAP, GradientSHAP: a ``background=`` argument) get
:data:`BACKGROUND_ROWS` rows drawn from the data set's training split. Warnings raised by a method
are recorded in the row's ``note`` instead of being printed. Everything is a deterministic function
of ``seed``.

Deviations from XAI-TRIS, to fit the default run into a few minutes on two CPU cores: training
stops after 50 epochs without a better validation loss and at most 250 epochs (XAI-TRIS: patience
400 and 500 epochs), and Adam runs at lr 5e-3 instead of 5e-4, so that the models converge within
that budget (:data:`~featurelens.groundtruth.settings.DEFAULT_SETTINGS`);
one run per data set instead of five; the models output logits (XAI-TRIS puts a softmax inside
``forward``; see :mod:`featurelens.groundtruth.models`). The data sets are independent, so they run in
parallel worker processes (``n_jobs``, one per core by default); the results do not depend on it.
"""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass, field

import numpy as np
from featurelens._optional import torch

from .. import _harness
from .._random import parse_seed, root_seed, seed_record
from .._validation import check_bool, check_float, check_int, check_optional_bool
from .._budgets import check_budget
from .._version import __version__
from ..datasets import BACKGROUNDS, SCENARIOS, xai_tris
from ..datasets.xai_tris import check_xai_tris_size
from ..explainers import list_explainers
from ..models import Model
from .._serialization import to_jsonable
from ..report import check_out
from .models import MODELS, build_model
from .formatting import SCENARIO_LABELS, example_figure, format_models, format_summary
from .methods import (
    FAILED, NOT_APPLICABLE, OK, background_rows, benchmark_metrics, default_methods, empty_row, method_kwargs,
    pooled_status,
    run_quietly, score_maps, score_row, why_not_here,
)
from .settings import DEFAULT_SETTINGS, QUICK_SETTINGS
from .._training import as_tensors, available_cores, limited_threads, train_model

__all__ = [
    "run_benchmark",
    "BenchmarkResult",
    "default_methods",
    "DEFAULT_SETTINGS",
    "QUICK_SETTINGS",
    "SCENARIO_LABELS",
]


@dataclass
class BenchmarkResult:
    """What :func:`run_benchmark` returns (plain lists of dicts, no DataFrame needed).

    Attributes
    ----------
    rows
        One dict per (scenario, background, model, method): ``status`` ("ok", "not applicable" or
        "failed"), ``reason`` (why there are no scores; empty for "ok"), ``n`` (samples explained), ``precision_mean``/``_std``, ``iou_mean``/``_std``,
        ``emd_mean``/``_std`` (NaN-free means; ``emd_undefined`` counts all-zero maps, whose EMD
        is undefined), ``seconds`` (explanation time) and ``note`` (warnings the method raised).
    summary
        One dict per (method, scenario): the same statistics pooled over backgrounds and models,
        with a pooled ``status`` and ``reason`` (:func:`pooled_status`; ``note`` lists the rows left
        out of an "ok" pool and why).
    models
        One dict per trained model: accuracies, epochs, best validation loss, training seconds,
        parameter count, and ``n_explained`` (size of the intersection used).
    settings, timings
        The arguments actually used, and wall-clock seconds (total and per data set).
    figures
        PNG images by file name: ``example_maps.png``, the example maps of every data set.
    examples
        One dict per data set: the example sample (``x``, ``mask``, ``label``), the ``model`` whose
        maps are shown, ``maps`` (method -> 2-D map) and ``status`` (method -> (status, reason)).
    report_path
        ``index.html`` when the run was asked to write a report (``out=``), else None.
    """

    rows: list = field(default_factory=list)
    summary: list = field(default_factory=list)
    models: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    examples: list = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    report_path: str | None = None

    @property
    def methods(self) -> list[str]:
        return list(self.settings.get("methods", []))

    @property
    def scenarios(self) -> list[str]:
        return list(self.settings.get("scenarios", []))

    def row(self, scenario, background, model, method) -> dict:
        """The row of one (scenario, background, model, method); KeyError when absent."""
        for r in self.rows:
            if (r["scenario"], r["background"], r["model"], r["method"]) == (scenario, background, model, method):
                return r
        raise KeyError((scenario, background, model, method))

    def summary_row(self, method, scenario) -> dict:
        for r in self.summary:
            if r["method"] == method and r["scenario"] == scenario:
                return r
        raise KeyError((method, scenario))

    def format_table(self, plus_minus: str = "±") -> str:
        """Plain-text tables (one per metric): method x scenario, mean ± std pooled over
        backgrounds and models; ``*`` marks the best mean of each column."""
        return format_summary(self, plus_minus=plus_minus)

    def format_models(self) -> str:
        """Plain-text table of the trained models' test accuracies."""
        return format_models(self)

    def to_dict(self) -> dict:
        """Everything but the figures' bytes, JSON-ready (NaN as None)."""
        return to_jsonable(
            {
                "rows": self.rows,
                "summary": self.summary,
                "models": self.models,
                "settings": self.settings,
                "timings": self.timings,
                "versions": self.versions,
                "figures": sorted(self.figures),
            }
        )


# ------------------------------------------------------------------------------------------------
# argument checks


def _check_names(option: str, given, valid) -> list[str]:
    valid = list(valid)
    if given is None:
        return valid
    if isinstance(given, str):
        given = [given]
    given = list(given)
    if not given:
        raise ValueError(f"{option} must name at least one of: {', '.join(valid)}")
    for name in given:
        if name not in valid:
            raise ValueError(f"unknown {option} {name!r}; valid choices: {', '.join(valid)}")
    return list(dict.fromkeys(given))  # drop repeats, keep order


def _setting(value, name: str, default, minimum: int = 1):
    return default if value is None else check_int(value, name, low=minimum)


# ------------------------------------------------------------------------------------------------
# the run


def run_benchmark(
    scenarios=None,
    backgrounds=None,
    methods=None,
    models=None,
    image_size: int = 8,
    n_samples: int | None = None,
    n_explain: int | None = None,
    seed: int = 0,
    quick: bool = False,
    out=None,
    progress: bool | None = None,
    *,
    epochs: int | None = None,
    patience: int | None = None,
    lr: float | None = None,
    batch_size: int = 512,
    threads: int | None = None,
    n_jobs: int | None = None,
    overwrite: bool = False,
) -> BenchmarkResult:
    """Run the XAI-TRIS ground-truth benchmark (see the module docstring for the protocol).

    Parameters
    ----------
    scenarios, backgrounds
        Subsets of :data:`featurelens.datasets.SCENARIOS` / ``BACKGROUNDS`` (default: all).
    methods
        Registered explainer names (default :func:`default_methods`: every gradient and AGOP
        explainer plus ``random``).
    models
        Subset of ("llr", "mlp", "cnn") (default: all; the LLR runs only on ``linear``).
    image_size
        8 or 64.
    n_samples, n_explain, epochs, patience, lr
        Samples per data set (split 80/10/10), most test samples explained per data set, and the
        training settings; None takes :data:`DEFAULT_SETTINGS` (or :data:`QUICK_SETTINGS` with
        ``quick=True``).
    seed
        Seeds data, model initialisation, training order and every stochastic explainer: a
        non-negative int, or None / a numpy Generator, from which one int is drawn first (and
        recorded in ``settings["seed_root"]``, so the run can be repeated exactly;
        ``settings["seed"]`` is then None or ``"generator"``: :func:`featurelens._random.seed_record`).
    out
        A folder: write the HTML report, CSV, JSON and figures there (:mod:`featurelens.groundtruth.report`).
        Checked before any work; the report is built beside it and moved into place at the end.
    overwrite
        Write into ``out`` even when it holds files and is not an earlier benchmark report
        (otherwise refused with a ValueError before any work).
    progress
        tqdm progress bars; None: only when stderr is a terminal.
    threads
        torch threads per job (default 1 for 8x8 images, whose tiny models run fastest on one
        thread; for 64x64 the available cores divided among the jobs).
    n_jobs
        Data sets processed in parallel, each in its own process (default: one per available core,
        at most one per data set; 1 runs everything in this process). Results do not depend on it.
    """
    scenarios = _check_names("scenario", scenarios, SCENARIOS)
    backgrounds = _check_names("background", backgrounds, BACKGROUNDS)
    model_names = _check_names("model", models, MODELS)
    methods = _check_names("method", methods, list_explainers()) if methods is not None else default_methods()
    if isinstance(image_size, bool) or image_size not in (8, 64):
        raise ValueError(f"image_size must be 8 or 64; got {image_size!r}")
    # An int: the data, the models and every worker process derive their streams from it.
    given = parse_seed(seed)
    seed = root_seed(given, high=2**31 - 1)
    quick = check_bool(quick, "quick")
    progress = check_optional_bool(progress, "progress")
    overwrite = check_bool(overwrite, "overwrite")
    defaults = QUICK_SETTINGS if quick else DEFAULT_SETTINGS
    n_samples = _setting(n_samples, "n_samples", defaults["n_samples"], minimum=40)
    if n_samples % 4:
        raise ValueError(f"n_samples must be divisible by 4 (XAI-TRIS XOR uses quarters); got {n_samples}")
    check_xai_tris_size(n_samples, image_size)  # the data sets' memory, before anything runs
    n_explain = _setting(n_explain, "n_explain", defaults["n_explain"])
    epochs = _setting(epochs, "epochs", defaults["epochs"])
    # Each epoch passes the training rows (80 % of n_samples) through every model: bounded up front.
    check_budget(epochs, "epochs", per=n_samples, unit="training rows", what=f"per model ({n_samples} samples)")
    patience = _setting(patience, "patience", defaults["patience"])
    lr = defaults["lr"] if lr is None else check_float(lr, "lr", low=0.0, low_inclusive=False)
    plan = [
        (scenario, background, [m for m in model_names if m != "llr" or scenario == "linear"])
        for scenario in scenarios
        for background in backgrounds
    ]
    plan = [p for p in plan if p[2]]
    if not plan:
        raise ValueError(
            f"models={model_names} train only on the linear scenario (the LLR cannot solve the others), "
            f"and scenarios={scenarios} leave nothing to run; add 'mlp' or 'cnn', or the linear scenario"
        )
    if out is not None:  # before the minutes of training: a bad folder fails at once
        check_out(out, "benchmark", overwrite)
    if progress is None:
        progress = sys.stderr.isatty()
    if n_jobs is not None:
        n_jobs = _setting(n_jobs, "n_jobs", 1)
    if threads is not None:
        threads = _setting(threads, "threads", 1)

    result = BenchmarkResult()
    result.settings = {
        "scenarios": scenarios,
        "backgrounds": backgrounds,
        "models": model_names,
        "methods": methods,
        "image_size": int(image_size),
        "n_samples": n_samples,
        "split": [0.8, 0.1, 0.1],
        "n_explain": n_explain,
        "epochs": epochs,
        "patience": patience,
        "lr": lr,
        "batch_size": batch_size,
        **seed_record(given, seed),
        "quick": bool(quick),
        "target": "true label",
        "samples": "test samples classified correctly by every model of the data set",
    }
    result.versions = {
        "featurelens": __version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    pooled: dict = {}  # (method, scenario) -> {metric: [arrays]}
    start = time.perf_counter()
    cpu_start = time.process_time()
    if n_jobs is None:
        n_jobs = min(available_cores(), len(plan))
    n_jobs = max(1, min(int(n_jobs), len(plan)))
    if threads is None:
        # The 8x8 models are so small that one thread beats several (measured: 2 threads ran a
        # CNN training step several times slower); 64x64 shares the cores among the jobs.
        threads = 1 if image_size == 8 else max(1, available_cores() // n_jobs)
    result.settings["n_jobs"] = n_jobs
    result.settings["threads_per_job"] = threads
    # Exact EMD on dense 64x64 maps takes seconds per map; 2x2 blocks bring it to ~25 ms with a
    # score error of at most 0.016 (see emd_score's ``pool``). 8x8 maps are scored exactly.
    emd_pool = 1 if image_size == 8 else 2
    result.settings["emd_pool"] = emd_pool
    common = {
        "emd_pool": emd_pool,
        "image_size": int(image_size), "n_samples": n_samples, "n_explain": n_explain, "epochs": epochs,
        "patience": patience, "lr": lr, "batch_size": batch_size, "seed": seed, "methods": methods,
        "threads": threads,
    }
    tasks = [dict(common, scenario=sc, background=bg, models=names) for sc, bg, names in plan]

    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), desc="benchmark", disable=not progress, unit="dataset")
    outputs: list = [None] * len(tasks)
    if n_jobs == 1:
        for i, task in enumerate(tasks):
            outputs[i] = _run_dataset(task, bar=bar if progress else None)
            bar.update(1)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawn: a fresh interpreter per worker, safe with torch's thread pools (fork is not).
        with ProcessPoolExecutor(n_jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_run_dataset, task): i for i, task in enumerate(tasks)}
            for future in as_completed(futures):
                i = futures[future]
                outputs[i] = future.result()
                bar.set_description(f"benchmark ({tasks[i]['scenario']}/{tasks[i]['background']} done)")
                bar.update(1)
    bar.close()

    dataset_timings = []
    for task, output in zip(tasks, outputs):
        result.models.extend(output["models"])
        result.rows.extend(output["rows"])
        dataset_timings.append(output["timings"])
        result.examples.append(output["example"])
        for method, scores in output["scores"].items():
            bucket = pooled.setdefault((method, task["scenario"]), {m: [] for m in benchmark_metrics()})
            for metric in benchmark_metrics():
                bucket[metric].append(scores[metric])
    t0 = time.perf_counter()
    result.figures["example_maps.png"] = example_figure(result.examples, methods)
    figure_seconds = time.perf_counter() - t0

    for method in methods:
        for scenario in scenarios:
            if not any(p[0] == scenario for p in plan):
                continue
            bucket = pooled.get((method, scenario))
            group = [r for r in result.rows if r["method"] == method and r["scenario"] == scenario]
            st, reason, note = pooled_status(group)
            base = {"method": method, "scenario": scenario, "status": st, "reason": reason, "note": note}
            if bucket is None:
                result.summary.append(empty_row({**base, "n": 0}))
                continue
            scores = {m: np.concatenate(v) for m, v in bucket.items()}
            result.summary.append(score_row({**base, "n": int(scores["precision"].size)}, scores))

    result.timings = {
        "total_seconds": time.perf_counter() - start,
        "main_process_cpu_seconds": time.process_time() - cpu_start,
        "figure_seconds": figure_seconds,
        "datasets": dataset_timings,
        "train_seconds": sum(t["train_seconds"] for t in dataset_timings),
        "explain_seconds": sum(t["explain_seconds"] for t in dataset_timings),
        "score_seconds": sum(t["score_seconds"] for t in dataset_timings),
        "cpu_seconds": sum(t["cpu_seconds"] for t in dataset_timings),
    }
    if out is not None:
        from .report import write_benchmark_report

        result.report_path = write_benchmark_report(result, out, overwrite)
    return result


def _run_dataset(task: dict, bar=None) -> dict:
    """Everything for one scenario x background: data, training, intersection, explanations and
    scores. A top-level function so that worker processes can run it; returns plain data."""
    scenario, background, names = task["scenario"], task["background"], task["models"]
    seed, methods = task["seed"], task["methods"]
    label = f"{scenario}/{background}"
    progress = bar is not None
    out: dict = {"models": [], "rows": [], "scores": {}}
    t = {"scenario": scenario, "background": background}

    def status(text):
        if bar is not None:
            bar.set_description(f"{label}: {text}")

    with limited_threads(task["threads"]):
        cpu0 = time.process_time()
        status("data")
        t0 = time.perf_counter()
        data = xai_tris(
            scenario, background, image_size=task["image_size"], n_samples=task["n_samples"], seed=seed
        )
        train, val, test = data.split((0.8, 0.1, 0.1))
        t["generate_seconds"] = time.perf_counter() - t0

        trained = {}
        t0 = time.perf_counter()
        for name in names:
            status(f"training {name}")
            model = build_model(name, task["image_size"], seed)
            model, history = train_model(
                model, train, val, test, epochs=task["epochs"], lr=task["lr"],
                batch_size=task["batch_size"], patience=task["patience"], seed=seed,
                progress=progress, description=f"{label} {name}", threads=task["threads"],
            )
            trained[name] = model
            out["models"].append(
                {
                    "scenario": scenario,
                    "background": background,
                    "model": name,
                    "parameters": sum(p.numel() for p in model.parameters()),
                    "epochs": history["epochs"],
                    "best_epoch": history["best_epoch"],
                    "best_val_loss": history["best_val_loss"],
                    "train_accuracy": history["train_accuracy"],
                    "val_accuracy": history["val_accuracy"],
                    "test_accuracy": history["test_accuracy"],
                    "train_seconds": history["seconds"],
                }
            )
        t["train_seconds"] = time.perf_counter() - t0

        # The XAI-TRIS intersection: the test samples that every model of this data set gets right.
        Xte, yte = as_tensors(test, "test")
        correct = torch.ones(len(yte), dtype=torch.bool)
        with torch.no_grad():
            for model in trained.values():
                correct &= model(Xte).argmax(1) == yte
        idx = np.flatnonzero(correct.numpy())[: task["n_explain"]]
        for rec in out["models"]:
            rec["n_correct_all"] = int(correct.sum())
            rec["n_explained"] = int(idx.size)
        x, y, masks = test.X[idx], test.y[idx], test.ground_truth[idx]

        fig_model = "cnn" if "cnn" in trained else names[0]
        example = {"scenario": scenario, "background": background, "model": fig_model, "x": None, "mask": None,
                   "label": None, "maps": {}, "status": {}}
        if idx.size:
            example.update(x=np.array(x[0, 0]), mask=np.array(masks[0]), label=int(y[0]))
        t_explain = t_score = 0.0
        references = background_rows(train.X, seed)
        for name, model in trained.items():
            # What applies is each explainer's declared requirements, read by the shared harness.
            _, not_applicable = _harness.applicable(methods, Model(model), tuple(x.shape[1:]))
            for method in methods:
                status(f"{name} {method}")
                base = {"scenario": scenario, "background": background, "model": name, "method": method}
                reason = not_applicable.get(method) or why_not_here(method, model)
                kind = NOT_APPLICABLE
                if reason is None and idx.size == 0:
                    reason, kind = "no test sample is classified correctly by every model of the data set", FAILED
                if reason is not None:
                    row = {**base, "status": kind, "reason": reason, "n": 0, "seconds": 0.0, "note": ""}
                    out["rows"].append(empty_row(row))
                    if name == fig_model:
                        example["status"][method] = (kind, reason)
                    continue
                kwargs = method_kwargs(method, seed, train.X, references)
                run, warned = run_quietly(method, model, x, y, kwargs)
                values, seconds = run.values, run.seconds
                t_explain += seconds
                note = "; ".join(warned)
                if run.status != "ok" or values.shape != x.shape:
                    reason = run.error or (f"its maps have shape {values.shape[1:]}, not the input's "
                                           f"{x.shape[1:]}, so they cannot be scored against the pattern")
                    kind = FAILED if run.error else NOT_APPLICABLE
                    row = {**base, "status": kind, "reason": reason, "n": 0, "seconds": seconds, "note": note}
                    out["rows"].append(empty_row(row))
                    if name == fig_model:
                        example["status"][method] = (kind, reason)
                    continue
                t0 = time.perf_counter()
                scores = score_maps(values, masks, task["emd_pool"])
                t_score += time.perf_counter() - t0
                row = {**base, "status": OK, "reason": "", "n": int(idx.size), "seconds": seconds, "note": note}
                out["rows"].append(score_row(row, scores))
                bucket = out["scores"].setdefault(method, {m: [] for m in benchmark_metrics()})
                for metric in benchmark_metrics():
                    bucket[metric].append(scores[metric])
                if name == fig_model:
                    example["maps"][method] = values[0].sum(axis=0)
                    example["status"][method] = (OK, "")
        t["explain_seconds"] = t_explain
        t["score_seconds"] = t_score
        t["cpu_seconds"] = time.process_time() - cpu0
    out["scores"] = {m: {k: np.concatenate(v) for k, v in b.items()} for m, b in out["scores"].items()}
    out["example"] = example
    out["timings"] = t
    return out
