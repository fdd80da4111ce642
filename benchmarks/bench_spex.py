"""SPEX on planted Moebius-sparse games: featurelens against shapiq's SPEX approximator.

Games: ``fl.datasets.sparse_game(n, n_terms, max_degree=3, basis="mobius", noise, seed=0)`` on the
grid ``GRID`` of (n, n_terms), noiseless and with ``noise=0.01`` (Gaussian noise of std 0.01 x the
std of the noiseless value). Every method gets a fresh game built from the same seed, so all see the
same terms and the same noise sequence.

- featurelens: ``fl.interactions.spex(game, budget, max_order=3, seed=0)`` with ``budget=15000`` and
  ``budget=None`` (15,000 with ``b <= 8``). Wall time: median of ``--repeats`` calls.
- shapiq: ``shapiq.SPEX(n=n, index="FBII", max_order=3, degree_parameter=3, random_state=0)`` and
  ``approximate(15000, game)``, the featurelens game wrapped as a callable on a (q, n) bool coalition
  matrix. ``degree_parameter`` (the BCH correction capability ``t``, default 5) is set to 3 to match
  featurelens' ``max_order=3``. shapiq turns its Fourier transform into Moebius coefficients
  (``fourier_to_mobius``) and then into the requested index; the Moebius dict is taken just before
  that conversion (a subclass whose ``_process_moebius`` keeps a copy of its argument), so both
  libraries are scored on Moebius terms. Each shapiq call runs once, in process (its
  wall time includes its FBII conversion); n = 1000 is skipped for shapiq when its first n = 256 call
  takes more than ``SHAPIQ_SKIP_1000_AFTER`` seconds, or once the run has taken
  ``SHAPIQ_TOTAL_LIMIT`` seconds (to stay under 4 minutes). (A time limit by a child process was
  tried: forked children hung, and a spawned one pays shapiq's first-call cost each time.) One
  untimed shapiq warm-up call (n = 64, 5 terms) runs first: the first call in a process took up to
  15 s at n = 64 against about 1-3 s afterwards; its time is recorded as ``shapiq_warmup_s``.
- Measures: queries (game evaluations made); wall time; decode seconds (wall time minus the time
  spent inside the game); held-out R^2 on 1000 uniform masks (``numpy.random.default_rng(12345)``,
  spex uses seed 0) against the *noiseless* game, of the Moebius surrogate
  ``v(S) = sum_{T subset S} a(T)``; recovered: the fraction of planted terms ``T`` with
  ``|a(T) - c_T| <= 1e-3 |c_T|``; support: the fraction of planted terms present at all (any value);
  spurious: terms outside the planted support (constant excluded) with ``|a(T)| > 1e-3``.

Verdict (rule written after the run: commit 8801973, judged on the results of commit bed8328, by
``--from-json``; the claim of Kang et al., ICML 2025, arXiv 2502.13870, abstract: SPEX recovers sparse
low-degree interactions from O(s t log n) queries and scales to about 1000 inputs;
``verdict(rows)`` computes it from the JSON's rows, written to the JSON as ``"seed_claims"``), over
featurelens' rows:

- every noiseless game: recovered >= 0.99 and no spurious term;
- queries grow like log n, not n: queries at the largest n / queries at the smallest n (noiseless) at
  most 2 ln(n_max) / ln(n_min) (linear growth would be n_max / n_min);
- every noisy game (noise 0.01): support >= 0.95 and held-out R^2 >= 0.99 (exact recovery to 1e-3 is not
  expected under noise).

Reproduced when all three hold; not when a noiseless game at the largest n is not recovered; partly
otherwise.

Usage: .venv/bin/python benchmarks/bench_spex.py [--repeats 3] [--quick]
       [--from-json benchmarks/results/spex.json]
Writes benchmarks/results/spex.md and spex.json. ``--from-json`` reruns nothing: it writes the verdict
(``"seed_claims"``) into that JSON and the verdict section into the .md beside it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

import featurelens as fl
import _claims
from _common import environment, load_average, write_results

try:
    import shapiq
except ImportError:  # pragma: no cover - optional reference
    shapiq = None

RESULTS = Path(__file__).resolve().parent / "results"
GRID = ((64, 20), (256, 40), (1000, 40), (1000, 60))
NOISES = (0.0, 0.01)
MAX_ORDER = 3
BUDGET = 15_000
R2_MASKS = 1000
R2_SEED = 12345
SPEX_SEED = 0
GAME_SEED = 0
REL_TOL = 1e-3
SPURIOUS_TOL = 1e-3
SHAPIQ_TOTAL_LIMIT = 170.0
SHAPIQ_SKIP_1000_AFTER = 30.0


def make_game(n, n_terms, noise):
    return fl.datasets.sparse_game(n, n_terms, MAX_ORDER, basis="mobius", noise=noise, seed=GAME_SEED)


class TimedGame:
    """Counts the rows and the seconds spent inside a game (the callable handed to shapiq)."""

    def __init__(self, game):
        self.game = game
        self.rows = 0
        self.seconds = 0.0

    def __call__(self, coalitions):
        masks = np.asarray(coalitions).astype(bool)
        start = time.perf_counter()
        values = np.asarray(self.game(masks), dtype=np.float64)
        self.seconds += time.perf_counter() - start
        self.rows += masks.shape[0]
        return values


def moebius_predict(terms: dict, masks: np.ndarray) -> np.ndarray:
    """``v(S) = sum_{T subset S} a(T)`` for (q, n) bool masks."""
    out = np.full(masks.shape[0], float(terms.get((), 0.0)))
    for t, a in terms.items():
        if t:
            out += a * masks[:, list(t)].all(axis=1)
    return out


def score(terms: dict, truth: dict, clean_game) -> dict:
    masks = np.random.default_rng(R2_SEED).random((R2_MASKS, clean_game.n_players)) < 0.5
    y = np.asarray(clean_game(masks), dtype=np.float64)
    resid = float(np.sum((y - moebius_predict(terms, masks)) ** 2))
    total = float(np.sum((y - y.mean()) ** 2))
    planted = {t: c for t, c in truth.items() if t}
    recovered = sum(1 for t, c in planted.items() if t in terms and abs(terms[t] - c) <= REL_TOL * abs(c))
    support = sum(1 for t in planted if t in terms)
    spurious = sum(1 for t, a in terms.items() if t and t not in planted and abs(a) > SPURIOUS_TOL)
    max_order = max((len(t) for t in terms), default=0)
    return {"r2": 1.0 - resid / total, "recovered": recovered / len(planted), "support": support / len(planted),
            "spurious": spurious, "n_terms_out": len(terms), "max_term_order": max_order}


# -- featurelens ---------------------------------------------------------------------------------
def run_featurelens(n, n_terms, noise, budget, repeats):
    walls, decodes, evals, last = [], [], [], None
    for _ in range(repeats):
        game = make_game(n, n_terms, noise)
        start = time.perf_counter()
        res = fl.interactions.spex(game, budget=budget, max_order=MAX_ORDER, seed=SPEX_SEED)
        walls.append(time.perf_counter() - start)
        decodes.append(float(res.params["decode_seconds"]))
        evals.append(float(res.params["eval_seconds"]))
        last = res
    clean = make_game(n, n_terms, 0.0)
    moebius = {tuple(int(i) for i in t): float(v) for t, v in last.to("mobius").terms.items()}
    row = {
        "queries": int(last.queries),
        "wall_s": statistics.median(walls),
        "all_wall_s": walls,
        "decode_s": statistics.median(decodes),
        "eval_s": statistics.median(evals),
        "b": int(last.params["b"]),
        "r2_featurelens_method": float(last.r2(clean, n_masks=R2_MASKS, seed=R2_SEED)),
        **score(moebius, clean.terms, clean),
    }
    return row


# -- shapiq ----------------------------------------------------------------------------------------
def run_shapiq(n, n_terms, noise, budget):
    captured = {}

    class KeepMoebius(shapiq.SPEX):
        def _process_moebius(self, moebius_transform):
            captured["moebius"] = dict(moebius_transform)
            return super()._process_moebius(moebius_transform)

    game = TimedGame(make_game(n, n_terms, noise))
    start = time.perf_counter()
    try:
        approximator = KeepMoebius(n=n, index="FBII", max_order=MAX_ORDER, degree_parameter=MAX_ORDER,
                                   random_state=SPEX_SEED)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # sparse_transform divides 0/0 on empty bins
            iv = approximator.approximate(budget, game)
    except Exception:  # noqa: BLE001 - reported in the table
        return {"status": "error", "error": traceback.format_exc(limit=3), "wall_s": time.perf_counter() - start}
    wall = time.perf_counter() - start
    terms = {tuple(int(i) for i in t): float(np.real(v)) for t, v in captured["moebius"].items()}
    clean = make_game(n, n_terms, 0.0)
    return {
        "status": "ok",
        "queries": int(game.rows),
        "estimation_budget": int(iv.estimation_budget),
        "wall_s": wall,
        "decode_s": wall - game.seconds,
        "eval_s": game.seconds,
        "degree_parameter": int(approximator.degree_parameter),
        **score(terms, clean.terms, clean),
    }


PAPER = "Kang, Butler, Agarwal, Erginbas, Pedarsani, Yu & Ramchandran, ICML 2025, arXiv 2502.13870"
RECOVERED_MIN, SUPPORT_MIN, NOISY_R2_MIN, LOG_FACTOR = 0.99, 0.95, 0.99, 2.0


def verdict(rows: list[dict]) -> dict:
    """The planted-recovery verdict (rule in the module docstring) from the rows of ``spex.json``."""
    fl_rows = [r for r in rows if r["method"] == "featurelens spex" and r.get("status", "ok") == "ok"]
    clean = [r for r in fl_rows if r["noise"] == 0]
    noisy = [r for r in fl_rows if r["noise"] > 0]
    clean_ok = [r["recovered"] >= RECOVERED_MIN and r["spurious"] == 0 for r in clean]
    n_min, n_max = min(r["n"] for r in clean), max(r["n"] for r in clean)
    q_min = max(r["queries"] for r in clean if r["n"] == n_min)
    q_max = max(r["queries"] for r in clean if r["n"] == n_max)
    ratio, log_bound = q_max / q_min, LOG_FACTOR * np.log(n_max) / np.log(n_min)
    noisy_ok = [r["support"] >= SUPPORT_MIN and r["r2"] >= NOISY_R2_MIN for r in noisy]
    largest_ok = all(ok for r, ok in zip(clean, clean_ok) if r["n"] == n_max)
    if all(clean_ok) and ratio <= log_bound and all(noisy_ok):
        v = "reproduced"
    elif not largest_ok:
        v = "not"
    else:
        v = "partly"
    return {"verdict": v, "clean_ok": clean_ok, "noisy_ok": noisy_ok, "query_ratio": ratio,
            "log_bound": log_bound, "linear_ratio": n_max / n_min, "n_min": n_min, "n_max": n_max}


FAMILY = "Interactions"


def seed_claims(doc: dict) -> list[dict]:
    rows = doc["rows"]
    v = verdict(rows)
    fl_rows = [r for r in rows if r["method"] == "featurelens spex" and r["budget"] is not None
               and r.get("status", "ok") == "ok"]
    clean = [r for r in fl_rows if r["noise"] == 0]
    noisy = [r for r in fl_rows if r["noise"] > 0]
    measured = ("noiseless: " + ", ".join(f"n={r['n']}/{r['n_terms']} terms recovered {r['recovered']:.2f}, "
                                           f"spurious {r['spurious']}, {r['queries']} queries" for r in clean)
                + f"; queries ratio n={v['n_max']} / n={v['n_min']}: {v['query_ratio']:.2f} (log bound "
                f"{v['log_bound']:.2f}, linear {v['linear_ratio']:.1f}); noise 0.01: "
                + ", ".join(f"n={r['n']}/{r['n_terms']} support {r['support']:.2f}, R^2 {r['r2']:.6f}, recovered "
                            f"{r['recovered']:.2f}, spurious {r['spurious']}" for r in noisy))
    run = doc.get("run", {})
    return [_claims.row(
        "spex (fl.interactions.spex)", PAPER,
        "SPEX recovers sparse low-degree interactions from O(s t log n) queries, up to about a thousand inputs",
        v["verdict"], measured,
        "fl.datasets.sparse_game (Moebius-sparse, degree <= 3, game seed 0), (n, terms) in "
        f"{run.get('grid', [list(g) for g in GRID])}, noiseless and noise 0.01; fl.interactions.spex(max_order=3, "
        "seed 0) at budget 15,000 and its default; one seed. Rule: every noiseless game recovered (>= 0.99 of the "
        "planted terms within 1e-3 relative, no spurious term), queries at the largest n / smallest n <= 2 ln(n_max) "
        "/ ln(n_min), every noisy game with support >= 0.95 and held-out R^2 >= 0.99: reproduced; a noiseless game "
        "at the largest n not recovered: not; partly otherwise.",
        "Planted sparse Fourier/Moebius functions of n up to ~1000 inputs (and language-model tasks), the authors' "
        "sparse-transform engine with BCH group testing, t = degree, b = 8 typically",
        "featurelens' own SPEX and generator, Moebius-sparse games of 20-60 terms; shapiq's SPEX is run beside it at "
        "the same budget; one game seed; noise 0.01 of the game's std only.", family=FAMILY)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="featurelens calls per setting (median time)")
    parser.add_argument("--quick", action="store_true", help="n = 64 and 256 only; does not write results")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="rerun nothing: write the verdict of this results JSON into it and its .md")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        _claims.rerender(seed_claims, args.from_json)
        return 0

    grid = GRID[:2] if args.quick else GRID
    versions = {"numpy": np.__version__}
    if shapiq is not None:
        versions["shapiq"] = importlib.metadata.version("shapiq")
        versions["sparse-transform"] = importlib.metadata.version("sparse-transform")
    env = environment(**versions)
    print(f"featurelens {env['featurelens']}, shapiq {env.get('shapiq', 'absent')}, {env['cpu']}", flush=True)
    load_before = load_average()
    t_start = time.perf_counter()

    # warm-up (imports, BCH tables)
    fl.interactions.spex(make_game(64, 5, 0.0), budget=2000, max_order=MAX_ORDER, seed=SPEX_SEED)

    shapiq_warmup = None
    if shapiq is not None:
        warm = run_shapiq(64, 5, 0.0, BUDGET)
        shapiq_warmup = warm["wall_s"]
        print(f"shapiq warm-up (n=64, 5 terms): {shapiq_warmup:.1f} s, status {warm['status']}", flush=True)

    rows = []
    skip_shapiq_1000 = None
    for n, n_terms in grid:
        for noise in NOISES:
            setting = {"n": n, "n_terms": n_terms, "noise": noise}
            for budget in (BUDGET, None):
                r = run_featurelens(n, n_terms, noise, budget, args.repeats)
                rows.append({**setting, "method": "featurelens spex", "budget": budget, "status": "ok", **r})
                print(f"  n={n:4d} terms={n_terms} noise={noise}: featurelens budget={budget}: {r['queries']} q, "
                      f"{r['wall_s']:.3f} s, R2 {r['r2']:.6f}, recovered {r['recovered']:.2f}, "
                      f"spurious {r['spurious']}", flush=True)
            if shapiq is None:
                continue
            if n >= 1000 and not skip_shapiq_1000 and time.perf_counter() - t_start > SHAPIQ_TOTAL_LIMIT:
                skip_shapiq_1000 = (f"skipped: the run had already taken > {SHAPIQ_TOTAL_LIMIT:.0f} s "
                                    "(keeps the script under 4 minutes)")
            if n >= 1000 and skip_shapiq_1000:
                rows.append({**setting, "method": "shapiq SPEX", "budget": BUDGET, "status": skip_shapiq_1000})
                print(f"  n={n:4d}: shapiq skipped ({skip_shapiq_1000})", flush=True)
                continue
            r = run_shapiq(n, n_terms, noise, BUDGET)
            rows.append({**setting, "method": "shapiq SPEX", "budget": BUDGET, **r})
            if n == 256 and skip_shapiq_1000 is None:
                skip_shapiq_1000 = (f"skipped: its first n=256 call took {r['wall_s']:.1f} s "
                                    f"(> {SHAPIQ_SKIP_1000_AFTER:.0f} s)") if r["wall_s"] > SHAPIQ_SKIP_1000_AFTER \
                    else False
            if r["status"] == "ok":
                print(f"  n={n:4d} terms={n_terms} noise={noise}: shapiq: {r['queries']} q, {r['wall_s']:.3f} s, "
                      f"R2 {r['r2']:.6f}, recovered {r['recovered']:.2f}, spurious {r['spurious']}", flush=True)
            else:
                print(f"  n={n:4d} terms={n_terms} noise={noise}: shapiq {r['status']} {r.get('error', '')}",
                      flush=True)

    meta = {"repeats": args.repeats, "grid": [list(g) for g in grid], "noises": list(NOISES),
            "max_order": MAX_ORDER, "budget": BUDGET, "r2_masks": R2_MASKS, "r2_seed": R2_SEED,
            "spex_seed": SPEX_SEED, "game_seed": GAME_SEED, "shapiq_total_limit_s": SHAPIQ_TOTAL_LIMIT,
            "shapiq_warmup_s": shapiq_warmup,
            "load_before": load_before, "load_after": load_average(), "seconds": time.perf_counter() - t_start}
    table = markdown(rows, env, meta)
    print()
    print(table)
    if not args.quick:
        data = {"environment": env, "run": meta, "rows": rows}
        data["seed_claims"] = seed_claims(data)
        print(_claims.section(data["seed_claims"]))
        write_results(args.out, "spex", _claims.with_section(table, data["seed_claims"]), data)
    return 0


def _fmt(r, key, spec):
    return format(r[key], spec) if r.get("status") == "ok" and key in r else "n/a"


def markdown(rows, env, meta) -> str:
    lines = [
        "# SPEX on planted Moebius-sparse games: featurelens vs shapiq",
        "",
        f"featurelens {env['featurelens']}, shapiq {env.get('shapiq', 'not installed')} (sparse-transform "
        f"{env.get('sparse-transform', 'n/a')}), NumPy {env['numpy']}, Python {env['python']}; {env['cpu']} "
        f"({env['logical_cpus']} logical CPUs). Games: `fl.datasets.sparse_game(n, terms, max_degree=3, "
        f"basis=\"mobius\", noise, seed={meta['game_seed']})`. SPEX with max_order 3 (shapiq: "
        f"`degree_parameter=3`), seed {meta['spex_seed']}; shapiq's budget {meta['budget']:,}. featurelens time: "
        f"median of {meta['repeats']} calls; shapiq: one call, in process, after an untimed "
        f"warm-up call ({meta['shapiq_warmup_s'] or 0:.1f} s; n = 1000 skipped once the run has taken "
        f"{meta['shapiq_total_limit_s']:.0f} s). Load average {meta['load_before']} before, {meta['load_after']} after; "
        f"total {meta['seconds']:.0f} s.",
        "",
        "| n | terms | noise | method | budget | queries | wall s | decode s | R² (held-out) | recovered "
        "| support | spurious |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        budget = "None" if r["budget"] is None else f"{r['budget']:,}"
        if r.get("status") == "ok":
            lines.append(
                f"| {r['n']} | {r['n_terms']} | {r['noise']} | {r['method']} | {budget} | {r['queries']:,} "
                f"| {r['wall_s']:.3f} | {r['decode_s']:.3f} | {r['r2']:.6f} | {r['recovered']:.2f} "
                f"| {r['support']:.2f} | {r['spurious']} |")
        else:
            wall = f"{r['wall_s']:.1f}" if "wall_s" in r else "n/a"
            lines.append(f"| {r['n']} | {r['n_terms']} | {r['noise']} | {r['method']} | {budget} | n/a | {wall} "
                         f"| n/a | n/a ({r['status'].splitlines()[0]}) | n/a | n/a | n/a |")
    lines += [
        "",
        "queries: game evaluations made (shapiq: rows passed to the game). decode s: wall time minus the "
        "time inside the game (featurelens: the median of its `decode_seconds`). R²: of the Moebius surrogate "
        f"`v(S) = sum_(T subset S) a(T)` on {meta['r2_masks']} uniform masks (seed {meta['r2_seed']}) against the "
        "noiseless game. recovered: share of planted terms whose estimate is within 1e-3 relative; support: "
        "share of planted terms present with any value; spurious: other nonconstant terms with |a| > 1e-3. "
        "shapiq's Moebius coefficients are those its `fourier_to_mobius` step produces, taken before its "
        "conversion to FBII (index=\"Moebius\" is not accepted by its converter). shapiq's results with the same "
        "`random_state` were seen to change from run to run in the noisy rows (its sampling is not fully seeded).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
