"""featurelens at scale against its peers: vision models at 224x224, text transformers, large tree
ensembles; time, peak memory, the values' agreement and the model-call floor of every row.

Sections (each a module exposing ``run(quick) -> list[dict]`` of :func:`_scale_common.row` rows):

- ``vision`` (``_scale_vision.py``): torchvision's ResNet-18, ResNet-50 and ViT-B/16 (random
  weights, ``weights=None``) at 224x224 against Captum: saliency, integrated gradients, SmoothGrad,
  Grad-CAM, DeepLift, feature ablation, occlusion, KernelSHAP (the module docstring states every
  setting and the image counts);
- ``text`` (``_scale_text.py``, when present): the MiniLM encoder at 128/256/512 tokens and GPT-2
  small from its config, against Captum's LLMAttribution / shap;
- ``trees`` (``_scale_trees.py``, when present): LightGBM and XGBoost with 500 trees on 200k x 100,
  against shap.

A section whose module is absent, or whose peer library or model is not installed, is skipped and
recorded as skipped with the reason. Every row: featurelens' and the peer's time (best timed call
after one warm-up, the two alternating so load on the shared machine hits both alike), their peak
memory (the resident set a call adds on top of the loaded model and data, sampled every
millisecond), the ratio, the largest absolute difference of the values with the method's tolerance,
and the model-call floor: the method's number of forward/backward passes times one plain batched
pass, measured. A ratio over 1.0 is flagged in the table; the row's note says where the gap is.

Usage: .venv/bin/python benchmarks/bench_scale.py [--sections vision,text,trees] [--quick] [--out DIR] [--resume]
[--repeats N]
``--resume``: the vision rows an interrupted run saved (``results/.bench_scale.partial.jsonl``, one
row per line, written as each is measured) are kept, not measured again; ``--compose-partial``
writes the results from those rows alone (the sections' status says the run stopped early).
``--quick``: the sections' small runs, printed, nothing written. Writes
benchmarks/results/bench_scale.md and bench_scale.json; the rows of sections not run this time are
kept from the file already there (marked with the date of their run).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from pathlib import Path

import torch

from _common import environment, load_average, write_results

RESULTS = Path(__file__).resolve().parent / "results"
NAME = "bench_scale"
SECTIONS = ("vision", "text", "trees")

#: Why a row is over 1.0 (time) where the cause is known (or what was measured where it is not),
#: read into the table's notes. Written after the quiet run of 2026-12-03 20:17-20:40 UTC.
_FORWARD = ("both send the whole batch of 8 images per forward (featurelens since the forward-only "
            "8-row floor, _batching.FORWARD_MIN_ROWS; before it, 3 a call and 1.61x); featurelens is {fl} "
            "the measured floor of {passes} plain forward passes, Captum {peer}: the rest is building each "
            "masked batch and reading the outputs back, not isolated further")
NOTES = {
    ("vision", "feature_ablation"): _FORWARD.format(fl="1.17x", passes=65, peer="1.08x"),
    ("vision", "occlusion"): _FORWARD.format(fl="1.19x", passes=50, peer="1.10x")
    + "; its peak (88 MB against 65) is the masked batch held beside the window masks",
    ("vision", "saliency"): (
        "one forward and one backward of the batch for both; featurelens is 1.04x the measured floor of that "
        "pass and Captum 0.99x: the difference (17 ms) is the explainer's bookkeeping (input and target "
        "checks, the Explanation), within the spread of sub-second calls"),
    ("vision", "gradcam"): (
        "both make one forward of the batch and one backward to layer4's output; CPU-time ratio 1.00, the "
        "wall-time gap (5 ms) is within the spread of sub-second calls"),
    ("vision", "integrated_gradients"): (
        "featurelens makes the floor's passes (32 chunks of 8 path points, about 200 MB) plus one forward of "
        "the images and the baseline for its completeness gap; Captum sends all 256 path points in one batch "
        "(over 5 GB)"),
    ("vision", "smoothgrad"): (
        "featurelens makes the floor's passes (16 chunks of 8 noisy copies) and draws its noise from one seeded "
        "stream per row (reproducible in any row split; about 1 s of CPU for these 19 million draws, against "
        "0.2 s for one torch.randn); Captum sends all 128 noisy copies in one batch (2.7 GB)"),
}


def annotate(rows: list[dict]) -> list[dict]:
    """Give each row over 1.0 without a note of its own the known cause from :data:`NOTES`."""
    for r in rows:
        if r["ratio"] > 1.0 and not r.get("note"):
            r["note"] = NOTES.get((r["section"], r["method"]), "")
    return rows


def _peer_versions() -> dict:
    versions = {}
    for name in ("captum", "shap", "transformers", "lightgbm", "xgboost"):
        try:
            versions[name] = importlib.import_module(name).__version__
        except Exception:  # noqa: BLE001 - absent or broken: not recorded
            pass
    return versions


def run_sections(names, quick: bool, log=print, partial: Path | None = None,
                 repeats: int | None = None) -> tuple[list[dict], dict]:
    """Run the named sections; returns their rows and ``{section: "ran" | "skipped: why"}``.

    ``partial``: a JSON-lines file of rows measured by an interrupted run of the same sections;
    a section that takes ``done=`` and ``save=`` (vision) skips the rows found there and appends
    each new row to it as soon as it is measured. ``repeats``: the timed rounds of the sections
    whose ``Settings`` has a ``repeats`` field (None: their default)."""
    import inspect
    import json

    rows, status = [], {}
    done = {}
    if partial is not None and partial.exists():
        for line in partial.read_text().splitlines():
            r = json.loads(line)
            done.setdefault(r["section"], {})[(r["model"], r["method"])] = r

    def save(r):
        if partial is not None:
            with open(partial, "a") as fh:
                fh.write(json.dumps(r) + "\n")

    for name in names:
        try:
            module = importlib.import_module(f"_scale_{name}")
        except ModuleNotFoundError as err:
            status[name] = f"skipped: {err}"
            log(f"section {name}: {status[name]}", flush=True)
            continue
        log(f"section {name}", flush=True)
        start = time.perf_counter()
        try:
            kwargs = {}
            if repeats is not None and hasattr(module, "Settings") and "settings" in inspect.signature(module.run).parameters:
                import dataclasses

                kwargs["settings"] = dataclasses.replace(module.QUICK if quick else module.Settings(), repeats=repeats)
            if "save" in inspect.signature(module.run).parameters:
                got = module.run(quick, done=done.get(name), save=save, **kwargs)
            elif kwargs:
                got = module.run(quick, **kwargs)
            else:
                got = module.run(quick)
        except ImportError as err:  # a peer library or model not installed here
            status[name] = f"skipped: {err}"
            log(f"section {name}: {status[name]}", flush=True)
            continue
        except Exception:  # noqa: BLE001 - one section's failure does not lose the others' rows
            status[name] = "failed: " + traceback.format_exc(limit=3).strip().splitlines()[-1]
            log(traceback.format_exc(), flush=True)
            continue
        rows += got
        status[name] = f"ran ({time.perf_counter() - start:.0f} s)"
    return rows, status


def _fmt_s(v) -> str:
    return "" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def _fmt_ratio(v) -> str:
    return "" if v is None else f"{v:.2f}"


def markdown(rows: list[dict], env: dict, meta: dict) -> str:
    lines = [
        "# featurelens at scale: time, memory and values against the peer libraries",
        "",
        f"torch {env['torch']}, featurelens {env['featurelens']}, Python {env['python']}; peers: "
        + ", ".join(f"{k} {v}" for k, v in env.get("peers", {}).items())
        + f". {env['threads']} torch threads on {env['cpu']} ({env['logical_cpus']} logical CPUs, shared with "
        f"other work: load average {meta['load_before']} before, {meta['load_after']} after); total "
        f"{meta['seconds']:.0f} s. Models with random weights (torchvision `weights=None`, seed 0; "
        "configs for the text models): the timings and the agreement do not depend on training. "
        "Sections: " + "; ".join(f"{k} {v}" for k, v in meta["sections"].items()) + ".",
        "",
        "Time: the best timed call after one warm-up, featurelens and the peer alternating; peak: the "
        "memory a call adds to the process, sampled every millisecond (vision: glibc's live malloc bytes, "
        "`mallinfo2`; the resident set is in the JSON file). Floor: the method's "
        "model passes times one plain batched pass of the same rows, measured (how it was counted in the "
        "floor column). CPU-time ratio (where a section records it): the same calls' process CPU time, "
        "less disturbed than the wall time by other work on the machine. Max abs diff against the peer's values, within the tolerance shown (vision: 1e-4 "
        "of the largest magnitude); the settings of every row are in the JSON file.",
        "",
        "| section | model | method | featurelens s | peer s | ratio | CPU-time ratio | featurelens MB | peer MB "
        "| max abs diff (tol) | floor s (passes) | featurelens / floor | over 1.0 |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|:-:|",
    ]
    for r in rows:
        over = "**yes**" if r["ratio"] > 1.0 else ""
        fl_mb, peer_mb = r.get("fl_peak_mb"), r.get("peer_peak_mb")
        if fl_mb is None or peer_mb is None:  # a row whose memory was not measured validly
            fl_cell, peer_cell = "n/a", "n/a"
        else:
            fl_cell = f"{fl_mb:.0f}" + ("" if fl_mb <= peer_mb else " (over)")
            peer_cell = f"{peer_mb:.0f}"
        tol, within = r.get("tolerance"), r.get("within_tolerance")
        diff = f"{r['max_abs_diff']:.2g}" + ("" if tol is None else f" ({tol:.2g})") + (" **over**" if within is False else "")
        lines.append(
            f"| {r['section']} | {r['model']} | {r['method']} vs {r['peer']} | {_fmt_s(r['fl_s'])} "
            f"| {_fmt_s(r['peer_s'])} | {r['ratio']:.2f} | {_fmt_ratio(r.get('cpu_ratio'))} | {fl_cell} | {peer_cell} "
            f"| {diff} | {_fmt_s(r.get('floor_s'))} ({r.get('floor', '')}) | "
            f"{'' if r.get('fl_over_floor') is None else format(r['fl_over_floor'], '.2f')} | {over} |")
    notes = [r for r in rows if r.get("note")]
    if notes:
        lines += ["", "Notes (every row over 1.0 has one):", ""]
        lines += [f"- {r['model']} / {r['method']}: {r['note']}" for r in notes]
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated: vision,text,trees")
    parser.add_argument("--quick", action="store_true", help="small runs, printed only")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows an interrupted run saved (results/.bench_scale.partial.jsonl)")
    parser.add_argument("--compose-partial", action="store_true",
                        help="write the results from the rows an interrupted run saved, measuring nothing")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed rounds after the warm-up, for the sections that take it (default: theirs)")
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {SECTIONS}")

    torch.set_num_threads(2)
    env = environment(peers=_peer_versions(), random_weights=True)
    load_before = load_average()
    start = time.perf_counter()
    partial = None if args.quick else args.out / f".{NAME}.partial.jsonl"
    if partial is not None and not (args.resume or args.compose_partial) and partial.exists():
        partial.unlink()
    if args.compose_partial:  # write what an interrupted run saved, measuring nothing
        rows = [json.loads(line) for line in partial.read_text().splitlines()] if partial.exists() else []
        rows = [r for r in rows if r["section"] in names]
        status = {n: f"stopped before the end: {sum(r['section'] == n for r in rows)} rows measured"
                  for n in names}
    else:
        rows, status = run_sections(names, args.quick, partial=partial, repeats=args.repeats)
    meta = {"sections": status, "quick": args.quick, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": load_before, "load_after": load_average(),
            "seconds": time.perf_counter() - start}
    rows = annotate(ordered(rows))
    if not args.quick:
        rows, meta = merge_earlier(args.out / f"{NAME}.json", rows, meta, names)
    table = markdown(rows, env, meta)
    print()
    print(table)
    if not args.quick:
        write_results(args.out, NAME, table, {"environment": env, "run": meta, "rows": rows})
        partial.unlink(missing_ok=True)
    return 0


def ordered(rows: list[dict]) -> list[dict]:
    """Rows by section (``SECTIONS`` order), model (first appearance) and method (the vision
    section's ``ALL_METHODS`` order, else first appearance): a resumed run measures out of order."""
    methods = {}
    try:
        methods = {m: i for i, m in enumerate(importlib.import_module("_scale_vision").ALL_METHODS)}
    except ImportError:
        pass
    first_model = {}
    for i, r in enumerate(rows):
        first_model.setdefault((r["section"], r["model"]), i)
    section = {name: i for i, name in enumerate(SECTIONS)}
    return sorted(rows, key=lambda r: (section.get(r["section"], len(section)), first_model[(r["section"], r["model"])],
                                       methods.get(r["method"], len(methods))))


def merge_earlier(path: Path, rows: list[dict], meta: dict, ran: list[str]) -> tuple[list[dict], dict]:
    """Keep the rows of the sections not run now from the results file already there (each marked
    with the date of its run), so that ``--sections vision`` does not drop the trees rows."""
    import json

    if not path.exists():
        return rows, meta
    earlier = json.loads(path.read_text())
    when = earlier.get("run", {}).get("date", "an earlier run")
    kept = [dict(r, run=r.get("run", when)) for r in earlier.get("rows", []) if r["section"] not in ran]
    sections = {k: v for k, v in earlier.get("run", {}).get("sections", {}).items() if k not in ran}
    sections = {k: (v if ("earlier run" in v or "in the run of" in v) else f"{v}, in the run of {when}")
                for k, v in sections.items()}
    meta = dict(meta, sections={**sections, **meta["sections"]})
    order = {name: i for i, name in enumerate(SECTIONS)}
    return sorted(kept + rows, key=lambda r: order.get(r["section"], len(order))), meta


if __name__ == "__main__":
    sys.exit(main())
