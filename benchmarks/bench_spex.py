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

Usage: .venv/bin/python benchmarks/bench_spex.py [--repeats 3] [--quick]
Writes benchmarks/results/spex.md and spex.json.
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="featurelens calls per setting (median time)")
    parser.add_argument("--quick", action="store_true", help="n = 64 and 256 only; does not write results")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)

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
        write_results(args.out, "spex", table, {"environment": env, "run": meta, "rows": rows})
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
