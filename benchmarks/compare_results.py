"""Compare a fresh benchmark results JSON with the committed one, field by field.

Every leaf of the two JSON trees is classified by its key name (the rules are in ``RULES``, printed
by ``--rules`` and written into the report) as one of

- ``value``: what the library computes (agreement with the reference library, errors, counts,
  scores, strings). Must match: ints, bools and strings exactly, floats to ``--rel-tol``
  (default 1e-9 relative) plus ``--abs-tol`` (default 1e-15); every difference is listed with
  its size;
- ``ratio``: featurelens' time against another time (``ratio*``, ``time_vs_*``, ``speedup*``).
  Reported old vs new, not required to match; a ratio that got slower by more than the run-to-run
  noise the old JSON records (the spread of that ratio over the old file's repeated ``runs``, or
  else the spread of the row's own per-round times) is flagged; 10% when the old file records no
  noise for it. Ratios in a row whose ``method`` names a reference library (``REFERENCE_ROW``:
  shap's time against the floor, say) are reported and never flagged;
- ``timing``: seconds, milliseconds, per-round time lists, which configuration was fastest,
  calls repeated within a round, time-based verdicts (``meets_target``);
- ``memory``: peak memory (MiB); reported;
- ``environment``: versions, platform, threads, load averages, output folders, dates;
- ``setting``: how many rounds/runs were timed, which methods were selected (a rerun may
  choose fewer; reported so that a differing value can be traced to a differing setting).

Only ``value`` differences make the exit status non-zero.

Rows (lists of dicts) are matched by their identifying fields (``ID_KEYS``: model, method, case,
metric, ...), so a rerun of a subset of methods compares the rows it has; rows only in one file
are listed as missing / new, not as differences.

Usage::

    .venv/bin/python benchmarks/compare_results.py NEW.json [--old OLD.json | --rev HEAD] [--name NAME]
    .venv/bin/python benchmarks/compare_results.py --round "label=DIR" [--round ...] \\
        --report benchmarks/results/rerun_after_redesign   # writes .md and .json
    .venv/bin/python benchmarks/compare_results.py --round "A/B=NEW_DIR@OLD_DIR:metrics,wam"

A round folder holds ``<name>.json`` files and optionally ``runs.json`` (per benchmark: command,
commit, load average before/after, wall seconds), as written by a runner; without ``--old`` or
``@OLD_DIR`` the old file is ``git show <rev>:benchmarks/results/<name>.json``. ``@OLD_DIR``
compares two fresh runs instead (two commits on one machine); ``:NAMES`` keeps only those files.
``--rules`` prints the classification and exits.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

VALUE, RATIO, TIMING, MEMORY, ENV, SETTING = "value", "ratio", "timing", "memory", "environment", "setting"

# (regex that must match a whole key, scope, category, why). Scope "any": the key may be the leaf
# or any key above it (a whole subtree); "leaf": only the leaf's own key. First match wins; a key
# matching no rule is a value.
RULES: list[tuple[str, str, str, str]] = [
    (r"environment", "any", ENV, "versions, platform, CPU, threads of the run"),
    (r"load_(before|after|average)", "any", ENV, "load average of the machine"),
    (r"out|platform|date|timestamp|started.*", "leaf", ENV, "where/when it ran"),
    (r"all_times_s|.*_by_setting|floor_by_setting|timing|calls_per_sample", "any", TIMING,
     "per-round times, times per configuration, calls repeated within a round"),
    (r"speedup_bound_.*", "leaf", TIMING, "a ratio of two reference times (no featurelens time in it)"),
    (r"speedup.*|ratio.*|time_ratio.*|time_vs_.*", "leaf", RATIO, "featurelens' time against another time"),
    (r".*_peak_mib", "leaf", MEMORY, "peak memory"),
    (r".*_s|.*_seconds|seconds.*|.*_ms|ms_per_.*|.*_times_s|all_seconds_per_instance|all_wall_s|min|median",
     "any", TIMING, "seconds / milliseconds"),
    (r"captum_best_setting|floor_best_setting|shap_fastest|meets_target|meets_20x", "leaf", TIMING,
     "which configuration was fastest / a verdict on a time"),
    (r"repeats|quantus_repeats|runs|rounds|methods|quick|skip", "leaf", SETTING,
     "how many rounds were timed / which methods were chosen"),
]

# Ratios whose larger value means featurelens is faster (the rest: larger = featurelens slower).
HIGHER_IS_FASTER = [(r".*", r"speedup.*"), (r"metrics", r"ratio")]  # metrics: Quantus s / featurelens s

# Fields that identify a row in a list of dicts.
ID_KEYS = ("data", "model", "size", "case", "metric", "setting", "method", "n", "n_terms", "noise", "budget", "layer")

# Lists of per-round featurelens times inside a row: their spread is the row's recorded noise.
NOISE_LISTS = ("featurelens_times_s", "all_seconds_per_instance", "all_wall_s", "fit_times_s")

DEFAULT_NOISE = 0.10

# A row whose "method" starts with a reference library's name holds that library's own ratios
# (e.g. shap's time against the floor): reported, never flagged as a featurelens slowdown.
REFERENCE_ROW = r"(shap|shapiq|captum|quantus|xrfm|sklearn|scikit-learn)\b"


def classify(path: tuple) -> tuple[str, str, str]:
    """(category, rule, key that decided) for a leaf at ``path`` (keys; list positions are not str).

    The deciding key is the leaf's own key, or ``"<key>/*"`` when a rule matched a key above it.
    """
    keys = [k for k in path if isinstance(k, str)]
    leaf = keys[-1] if keys else ""
    for pattern, scope, category, _why in RULES:
        if re.fullmatch(pattern, leaf):
            return category, pattern, leaf
        if scope == "any":
            hit = next((k for k in keys[:-1] if re.fullmatch(pattern, k)), None)
            if hit is not None:
                return category, pattern, f"{hit}/*"
    return VALUE, "(no rule: a value)", leaf


def higher_is_faster(bench: str, key: str) -> bool:
    return any(re.fullmatch(b, bench) and re.fullmatch(k, key) for b, k in HIGHER_IS_FASTER)


def _row_id(row: dict) -> tuple | None:
    ident = tuple((k, row[k]) for k in ID_KEYS if k in row and (row[k] is None or isinstance(row[k], (str, int, float))))
    return ident or None


def _fmt_id(ident) -> str:
    if isinstance(ident, int):
        return str(ident)
    return ", ".join(f"{k}={v}" for k, v in ident)


def _pair_list(old: list, new: list):
    """Pairs (label, old_item, new_item) of two lists, matched by row identity where possible."""
    if (old or new) and all(isinstance(r, dict) for r in old + new):
        oid, nid = [_row_id(r) for r in old], [_row_id(r) for r in new]
        if None not in oid + nid and len(set(oid)) == len(oid) and len(set(nid)) == len(nid):
            nmap = dict(zip(nid, new))
            omap = dict(zip(oid, old))
            for i, r in zip(oid, old):
                yield i, r, nmap.get(i, _MISSING)
            for i, r in zip(nid, new):
                if i not in omap:
                    yield i, _MISSING, r
            return
    for i in range(max(len(old), len(new))):
        yield i, old[i] if i < len(old) else _MISSING, new[i] if i < len(new) else _MISSING


class _Missing:
    def __repr__(self):
        return "(absent)"


_MISSING = _Missing()


def leaf_pairs(old, new, path=()):
    """Every leaf position of either tree: (path, old leaf or _MISSING, new leaf or _MISSING)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in list(old) + [k for k in new if k not in old]:
            yield from leaf_pairs(old.get(k, _MISSING), new.get(k, _MISSING), path + (k,))
    elif (isinstance(old, list) and isinstance(new, list) and classify(path)[0] != VALUE
          and not any(isinstance(x, (dict, list)) for x in old + new)):
        yield path, old, new  # a list of timings / load averages / settings is one field
    elif isinstance(old, list) and isinstance(new, list):
        for ident, o, n in _pair_list(old, new):
            yield from leaf_pairs(o, n, path + (ident,))
    elif isinstance(old, (dict, list)) and new is _MISSING:
        for p, o, _ in leaf_pairs(old, old, path):
            yield p, o, _MISSING
    elif isinstance(new, (dict, list)) and old is _MISSING:
        for p, _, n in leaf_pairs(new, new, path):
            yield p, _MISSING, n
    else:
        yield path, old, new


def path_str(path: tuple) -> str:
    out = ""
    for k in path:
        if isinstance(k, str):
            out += ("." if out else "") + k
        else:
            out += f"[{_fmt_id(k)}]"
    return out


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def values_equal(a, b, rel_tol: float, abs_tol: float) -> tuple[bool, float | None]:
    """(equal, |a - b| for numbers)."""
    if _is_num(a) and _is_num(b):
        if isinstance(a, int) and isinstance(b, int):
            return a == b, float(abs(a - b))
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b), None
        if math.isinf(a) or math.isinf(b):
            return a == b, None
        d = abs(a - b)
        return d <= rel_tol * max(abs(a), abs(b)) + abs_tol, d
    return type(a) is type(b) and a == b, None


def _spread(xs) -> float | None:
    xs = [x for x in xs if _is_num(x) and x > 0]
    if len(xs) < 2:
        return None
    return max(xs) / min(xs) - 1.0


def _lookup(tree, path):
    for k in path:
        if isinstance(tree, dict) and isinstance(k, str):
            tree = tree.get(k, _MISSING)
        elif isinstance(tree, list):
            if isinstance(k, int):
                tree = tree[k] if k < len(tree) else _MISSING
            else:
                tree = next((r for r in tree if isinstance(r, dict) and _row_id(r) == k), _MISSING)
        else:
            return _MISSING
    return tree


def recorded_noise(old: dict, path: tuple) -> tuple[float, str]:
    """Run-to-run noise of the ratio at ``path`` as the old JSON records it, and where it came from."""
    key = path[-1]
    # 1. The same row in the old file's repeated whole runs (bench_gradients --runs N).
    runs = old.get("runs") if isinstance(old, dict) else None
    if isinstance(runs, list) and runs and all(isinstance(r, list) for r in runs):
        row_path = next(((i, p) for i, p in enumerate(path) if not isinstance(p, str)), None)
        if row_path is not None:
            ident = path[row_path[0]]
            vals = [_lookup(run, (ident, key)) for run in runs]
            s = _spread(vals)
            if s is not None:
                return s, f"spread over the old file's {len(runs)} runs"
    # 2. The spread of featurelens' own per-round times in the same row.
    row = _lookup(old, path[:-1])
    if isinstance(row, dict):
        lists = [row.get(k) for k in NOISE_LISTS if isinstance(row.get(k), list)]
        if isinstance(row.get("all_times_s"), dict) and isinstance(row["all_times_s"].get("featurelens"), list):
            lists.append(row["all_times_s"]["featurelens"])
        for xs in lists:
            s = _spread(xs)
            if s is not None:
                return s, "spread of the row's per-round times in the old file"
    return DEFAULT_NOISE, "none recorded: 10%"


def compare(old: dict, new: dict, name: str = "", rel_tol: float = 1e-9, abs_tol: float = 1e-15) -> dict:
    """Compare two results trees. Returns a dict with the classified fields and a verdict.

    ``ok`` is False when a value field differs (beyond the tolerance for floats) or a value field
    present in both runs changed type; timings never fail; ratios that got slower than the recorded
    noise are listed in ``slower_ratios``.
    """
    res = {"name": name, "rel_tol": rel_tol, "abs_tol": abs_tol, "values_equal": 0, "values_exact": 0,
           "values_max_abs_diff": 0.0, "values_max_rel_diff": 0.0, "value_diffs": [], "ratios": [],
           "slower_ratios": [], "timings": 0, "memory": [], "settings": [], "environment": [],
           "only_old": [], "only_new": [], "classification": {}}
    for path, o, n in leaf_pairs(old, new):
        cat, rule, decided_by = classify(path)
        leaf_key = next((k for k in reversed(path) if isinstance(k, str)), "")
        res["classification"].setdefault(decided_by, (cat, rule))
        p = path_str(path)
        if o is _MISSING or n is _MISSING:
            if cat == VALUE:
                (res["only_old"] if n is _MISSING else res["only_new"]).append(p)
            continue
        if cat == VALUE:
            eq, d = values_equal(o, n, rel_tol, abs_tol)
            if eq:
                res["values_equal"] += 1
                if o == n and type(o) is type(n):
                    res["values_exact"] += 1
                if d is not None:
                    res["values_max_abs_diff"] = max(res["values_max_abs_diff"], d)
                    if d:
                        res["values_max_rel_diff"] = max(res["values_max_rel_diff"], d / max(abs(o), abs(n)))
            else:
                rel = (d / max(abs(o), abs(n))) if d is not None and max(abs(o), abs(n)) else None
                res["value_diffs"].append({"field": p, "old": o, "new": n, "abs_diff": d, "rel_diff": rel})
        elif cat == RATIO:
            if o is None and n is None:
                continue  # a ratio this benchmark did not measure (an optional reference)
            if not (_is_num(o) and _is_num(n)) or o <= 0 or n <= 0:
                res["ratios"].append({"field": p, "old": o, "new": n, "change": None, "noise": None,
                                      "noise_source": "", "slower": False, "direction": ""})
                continue
            faster_up = higher_is_faster(name, leaf_key)
            slowdown = (o / n - 1.0) if faster_up else (n / o - 1.0)
            noise, src = recorded_noise(old, path)
            row = _lookup(old, path[:-1])
            method = row.get("method") if isinstance(row, dict) else None
            own = not (isinstance(method, str) and re.match(REFERENCE_ROW, method, re.I))
            entry = {"field": p, "old": o, "new": n, "change": slowdown, "noise": noise, "noise_source": src,
                     "slower": own and slowdown > noise,
                     "direction": ("a reference library's own ratio (not flagged)" if not own else
                                   "higher = featurelens faster" if faster_up else "higher = featurelens slower")}
            res["ratios"].append(entry)
            if entry["slower"]:
                res["slower_ratios"].append(entry)
        elif cat == TIMING:
            res["timings"] += 1
        elif cat == MEMORY:
            res["memory"].append({"field": p, "old": o, "new": n})
        elif cat == SETTING:
            if o != n:
                res["settings"].append({"field": p, "old": o, "new": n})
        elif cat == ENV:
            if o != n:
                res["environment"].append({"field": p, "old": o, "new": n})
    res["ok"] = not res["value_diffs"]
    return res


# ----------------------------------------------------------------------------------------- report

def _g(x, digits=4) -> str:
    if _is_num(x):
        if isinstance(x, int):
            return str(x)
        return f"{x:.{digits}g}"
    s = json.dumps(x) if not isinstance(x, str) else x
    return s if len(s) <= 60 else s[:57] + "..."


def rules_markdown() -> str:
    lines = ["| key pattern (whole key) | applies to | category | why |", "|---|---|---|---|"]
    for pattern, scope, cat, why in RULES:
        lines.append(f"| `{pattern}` | {'the key or any key above it' if scope == 'any' else 'the leaf key'} "
                     f"| {cat} | {why} |")
    lines.append("| anything else | | value | computed by the library: must match |")
    lines.append("")
    lines.append("Ratios where a larger number means featurelens is faster: "
                 + "; ".join(f"`{k}` in {'every benchmark' if b == '.*' else b}" for b, k in HIGHER_IS_FASTER)
                 + ". All other ratios are featurelens' time over another time (larger = slower).")
    return "\n".join(lines)


def benchmark_markdown(res: dict, meta: dict | None) -> str:
    md = [f"### {res['name']}" + (f" ({res['round']})" if res.get("round") else ""), ""]
    if res.get("old_file"):
        md.append(f"Old: `{res['old_file']}`; new: `{res.get('new_file', '')}`.")
        md.append("")
    if meta:
        md.append(f"Command: `{meta.get('command', '?')}` on commit {meta.get('head', '?')}; "
                  f"exit status {meta.get('rc', '?')}; wall {meta.get('wall_s', '?')} s; "
                  f"started {meta.get('started_utc', '?')}; load average {meta.get('load_before')} before, "
                  f"{meta.get('load_after')} after (os.getloadavg; 2 cores shared with other agents).")
        md.append("")
    n_val = res["values_equal"] + len(res["value_diffs"])
    verdict = "**values equal**" if res["ok"] else f"**{len(res['value_diffs'])} value field(s) differ**"
    md.append(f"{verdict}: {res['values_equal']} of {n_val} value fields equal ({res['values_exact']} bit for bit; "
              f"largest difference among the equal ones {res['values_max_abs_diff']:.3g} absolute, "
              f"{res['values_max_rel_diff']:.3g} relative; tolerance {res['rel_tol']:g} relative + "
              f"{res['abs_tol']:g}); {res['timings']} timing fields not compared; "
              f"{len(res['slower_ratios'])} of {len(res['ratios'])} ratios slower than the recorded noise.")
    if res["only_old"] or res["only_new"]:
        md.append(f"Value fields only in the old file (rows not rerun): {len(res['only_old'])}; "
                  f"only in the new file: {len(res['only_new'])}"
                  + (f" (e.g. `{res['only_new'][0]}`)" if res["only_new"] else "") + ".")
    if res["settings"]:
        md.append("Settings that differ from the committed run: "
                  + "; ".join(f"`{s['field']}` {_g(s['old'])} -> {_g(s['new'])}" for s in res["settings"][:8])
                  + (f" (+{len(res['settings']) - 8} more)" if len(res["settings"]) > 8 else "") + ".")
    md.append("")
    if res["value_diffs"]:
        md += ["| value field | old | new | abs diff | rel diff |", "|---|---:|---:|---:|---:|"]
        for d in res["value_diffs"]:
            md.append(f"| `{d['field']}` | {_g(d['old'], 10)} | {_g(d['new'], 10)} | "
                      f"{_g(d['abs_diff'], 3) if d['abs_diff'] is not None else ''} | "
                      f"{_g(d['rel_diff'], 3) if d['rel_diff'] is not None else ''} |")
        md.append("")
    if res["ratios"]:
        md += ["| ratio | old | new | slower by | noise (source) | flag |", "|---|---:|---:|---:|---|:-:|"]
        for r in res["ratios"]:
            ch = f"{100 * r['change']:+.0f}%" if r["change"] is not None else ""
            nz = f"{100 * r['noise']:.0f}% ({r['noise_source']})" if r["noise"] is not None else ""
            flag = "SLOWER" if r["slower"] else ("reference's own" if r["direction"].startswith("a reference") else "")
            md.append(f"| `{r['field']}` | {_g(r['old'], 3)} | {_g(r['new'], 3)} | {ch} | {nz} | {flag} |")
        md.append("")
    if res["memory"]:
        changed = [m for m in res["memory"] if m["old"] != m["new"]]
        md.append(f"Peak memory: {len(res['memory']) - len(changed)} of {len(res['memory'])} fields unchanged"
                  + ("" if not changed else "; changed (MiB, old -> new): " + "; ".join(
                      f"`{m['field']}` {_g(m['old'], 4)} -> {_g(m['new'], 4)}" for m in changed)) + ".")
        md.append("")
    return "\n".join(md)


def classification_markdown(results: list[dict]) -> str:
    seen: dict[str, tuple[str, str]] = {}
    for r in results:
        for k, v in r["classification"].items():
            seen.setdefault(k, v)
    by_cat: dict[str, list[str]] = {}
    for k, (cat, _rule) in sorted(seen.items()):
        by_cat.setdefault(cat, []).append(k)
    lines = ["Every leaf key seen in these files, by category:", ""]
    for cat in (VALUE, RATIO, TIMING, MEMORY, SETTING, ENV):
        if cat in by_cat:
            lines.append(f"- **{cat}** ({len(by_cat[cat])}): " + ", ".join(f"`{k}`" for k in by_cat[cat]))
    return "\n".join(lines)


def _jsonable(res: dict) -> dict:
    out = dict(res)
    out["classification"] = {k: {"category": c, "rule": r} for k, (c, r) in res["classification"].items()}
    return out


def git_show_json(rev: str, name: str) -> dict:
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:benchmarks/results/{name}.json"],
                          capture_output=True, text=True, check=True).stdout
    return json.loads(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("new", nargs="*", type=Path, help="fresh results JSON file(s)")
    ap.add_argument("--old", type=Path, help="old JSON (default: git show REV:benchmarks/results/NAME.json)")
    ap.add_argument("--rev", default="HEAD", help="revision holding the committed results (default HEAD)")
    ap.add_argument("--name", help="benchmark name (default: the new file's stem)")
    ap.add_argument("--round", action="append", default=[], metavar="LABEL=DIR[@OLD_DIR][:NAME,...]",
                    help="a folder of fresh results (and runs.json), optionally compared with the files of "
                         "another folder instead of the committed ones, optionally only some names; repeatable")
    ap.add_argument("--only", nargs="*", default=None, help="benchmark names to compare in each round")
    ap.add_argument("--rel-tol", type=float, default=1e-9)
    ap.add_argument("--abs-tol", type=float, default=1e-15)
    ap.add_argument("--report", type=Path, help="write REPORT.md and REPORT.json")
    ap.add_argument("--preamble", type=Path, help="Markdown put at the top of the report")
    ap.add_argument("--rules", action="store_true", help="print the classification rules and exit")
    args = ap.parse_args(argv)

    print("Classification of fields by key name:\n" + rules_markdown() + "\n")
    if args.rules:
        return 0
    jobs = []  # (round label, name, new path, meta)
    for f in args.new:
        jobs.append(("", args.name or f.stem, f, None))
    for spec in args.round:
        label, _, rest = spec.partition("=")
        rest, _, names = rest.partition(":")
        folder, _, old_folder = rest.partition("@")
        folder = Path(folder)
        meta = json.loads((folder / "runs.json").read_text()) if (folder / "runs.json").exists() else {}
        for f in sorted(folder.glob("*.json")):
            if f.name == "runs.json" or (args.only and f.stem not in args.only):
                continue
            if names and f.stem not in names.split(","):
                continue
            old_file = Path(old_folder) / f.name if old_folder else args.old
            jobs.append((label, f.stem, f, meta.get(f.stem), old_file))
    jobs = [j if len(j) == 5 else j + (args.old,) for j in jobs]
    results = []
    for label, name, f, meta, old_file in jobs:
        old = json.loads(old_file.read_text()) if old_file else git_show_json(args.rev, name)
        res = compare(old, json.loads(f.read_text()), name, args.rel_tol, args.abs_tol)
        res["round"], res["new_file"], res["run"] = label, str(f), meta
        res["old_file"] = str(old_file) if old_file else f"{args.rev}:benchmarks/results/{name}.json"
        results.append(res)
        print(benchmark_markdown(res, meta))
    print(classification_markdown(results))
    if args.report:
        md = []
        if args.preamble:
            md.append(args.preamble.read_text().rstrip() + "\n")
        md += ["## Per benchmark", ""] + [benchmark_markdown(r, r["run"]) for r in results]
        md += ["## How fields were classified", "", rules_markdown(), "", classification_markdown(results), ""]
        args.report.with_suffix(".md").write_text("\n".join(md))
        args.report.with_suffix(".json").write_text(json.dumps(
            {"rel_tol": args.rel_tol, "abs_tol": args.abs_tol,
             "rules": [dict(zip(("pattern", "scope", "category", "why"), r)) for r in RULES],
             "results": [_jsonable(r) for r in results]}, indent=1, default=str))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
