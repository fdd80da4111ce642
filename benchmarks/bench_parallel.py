"""Executors side by side: what threads, processes, Ray and Dask buy on a latency-bound and a
compute-bound game, and what each backend costs to start and per call (issue 12).

Arms (every one checked to give values bitwise equal to the serial path):

- **latency-bound**: a ``FunctionGame`` over 16 players whose every chunk evaluation is one call
  of a "model behind an API" that waits ``--latency-ms`` (20 ms, ``time.sleep``) and then returns
  a deterministic value (``--latency-coalitions`` 800 masks in chunks of 4: 200 calls, 4 s
  serially). Arms: serial, ``ThreadExecutor(16)`` (goal >= 10x), ``ProcessExecutor(2)``,
  ``RayExecutor(num_workers=2)`` (goal >= 1.8x) and a Dask ``LocalCluster(n_workers=2,
  threads_per_worker=1)``.
- **compute-bound**: a ``MaskedModel`` over a torch MLP 256-1024-1024-10 (ReLU, float32, seeded
  weights) on one input with 16 background rows (the interventional game), ``--compute-coalitions``
  4096 masks in chunks of 64 masks (1,024 model rows per forward). The model is a
  ``fl.Model.from_factory`` model, so workers build it once from its recipe. One torch thread in
  every arm: this process (serial and thread arms) and every worker process (the factory sets it).
  Arms: serial, ``ThreadExecutor(2)`` (torch releases the GIL), ``ProcessExecutor(2,
  threads_per_worker=1)``, ``RayExecutor(num_workers=2)`` and Dask as above. Reported: the speed-up
  and its ratio to the 2-worker limit (speed-up / 2).
- **costs**: start-up (constructing the executor, including ``ray.init`` and the actors, the Dask
  ``LocalCluster`` and its client, the loky process pool), the first ``executor.map`` after it (a
  trivial task; loky's workers finish importing here), the first call of the MLP game (workers
  import featurelens and torch if they have not, unpickle the game and build the model from its
  factory), and the per-call overhead: ``executor.map`` of a trivial function over one item,
  median of the 20 maps after the first.

Each backend is started, measured and closed in turn, so no idle cluster runs beside another arm.
The timed game calls are repeated ``--repeats`` times (median; the serial arms too).

Usage: .venv/bin/python benchmarks/bench_parallel.py [--quick] [--backends threads processes ray dask]
Writes benchmarks/results/parallel.md and parallel.json (not in --quick mode, which runs small
sizes and prints only). Needs the ray and dask extras (part of dev).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import torch
from _common import environment, load_average, write_results

import featurelens as fl
from featurelens.games import FunctionGame, MaskedModel
from featurelens.parallel import (
    DaskExecutor,
    ProcessExecutor,
    RayExecutor,
    SerialExecutor,
    ThreadExecutor,
)

RESULTS = Path(__file__).resolve().parent / "results"
WORKERS = 2  # processes / actors / Dask workers: the cores of the machine this was written for
API_THREADS = 16
LATENCY_PLAYERS = 16
LATENCY_CHUNK = 4
TORCH_THREADS = 1
MLP_WIDTHS = (256, 1024, 1024, 10)
BACKGROUND_ROWS = 16
COMPUTE_CHUNK = 64  # masks per chunk: 64 x 16 background rows = 1,024 model rows per forward


# -- the games (module level: workers import or unpickle them by reference/value) ------------------
def api_model(masks: np.ndarray, latency: float = 0.02) -> np.ndarray:
    """One call of a model behind an API: waits ``latency`` seconds, then a deterministic value,
    sum_i (i + 1) m_i / n + 0.05 (number of players)^2 / n (nonlinear, exact in float64)."""
    time.sleep(latency)
    m = masks.astype(np.float64)
    n = masks.shape[1]
    return m @ (np.arange(1, n + 1) / n) + 0.05 * m.sum(axis=1) ** 2 / n


class ApiCall:
    """``api_model`` with a fixed latency (picklable by reference when imported, by value as main)."""

    def __init__(self, latency: float):
        self.latency = latency

    def __call__(self, masks):
        return api_model(masks, self.latency)


def build_mlp():
    """The compute-bound model: an MLP 256-1024-1024-10 with seeded weights (the same in every
    process); sets this process's torch threads, so every worker computes on one thread."""
    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(MLP_WIDTHS[:-1], MLP_WIDTHS[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(MLP_WIDTHS) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).eval()


def _trivial(shared, item):
    return item


# -- the backends ----------------------------------------------------------------------------------
class Backend:
    """Starts one executor (timed) and closes it with what it started."""

    def __init__(self, kind: str, n_threads: int):
        self.kind, self.n_threads = kind, n_threads
        self._cluster = self._client = None

    def start(self):
        if self.kind == "serial":
            return SerialExecutor()
        if self.kind == "threads":
            return ThreadExecutor(self.n_threads)
        if self.kind == "processes":
            return ProcessExecutor(WORKERS, threads_per_worker=TORCH_THREADS)
        if self.kind == "ray":
            import ray

            if ray.is_initialized():  # pragma: no cover - a leftover session would hide start-up
                ray.shutdown()
            return RayExecutor(num_workers=WORKERS, num_cpus=1, log_to_driver=False)
        if self.kind == "dask":
            import logging
            import warnings

            from distributed import Client, LocalCluster

            # Its HTTP server moves to a free port when 8787 is taken (another cluster): no matter here.
            warnings.filterwarnings("ignore", message="Port 8787 is already in use")
            self._cluster = LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                                         dashboard_address=None, silence_logs=logging.CRITICAL)
            self._client = Client(self._cluster)
            return DaskExecutor(self._client)
        raise ValueError(f"unknown backend {self.kind!r}")

    def stop(self, ex) -> None:
        ex.close()
        if self._client is not None:
            self._client.close()
            self._cluster.close()


def _label(kind: str, n_threads: int) -> str:
    return {
        "serial": "serial",
        "threads": f"ThreadExecutor({n_threads})",
        "processes": f"ProcessExecutor({WORKERS}, threads_per_worker={TORCH_THREADS})",
        "ray": f"RayExecutor(num_workers={WORKERS})",
        "dask": f"DaskExecutor (LocalCluster {WORKERS} x 1 thread)",
    }[kind]


def _timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times, out


def per_call_overhead(ex, n: int) -> tuple[float, list[float]]:
    """(the first map's seconds, the next ``n`` maps' seconds) of a trivial task over one item."""
    t = time.perf_counter()
    ex.map(_trivial, [0])  # the first map: workers may still import or unpickle their first task
    first = time.perf_counter() - t
    times = []
    for i in range(n):
        t = time.perf_counter()
        ex.map(_trivial, [i])
        times.append(time.perf_counter() - t)
    return first, times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat, prints only")
    parser.add_argument("--backends", nargs="+", default=["threads", "processes", "ray", "dask"],
                        choices=["threads", "processes", "ray", "dask"])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--latency-coalitions", type=int, default=800)
    parser.add_argument("--compute-coalitions", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.quick:
        args.latency_coalitions, args.compute_coalitions, args.repeats = 160, 512, 1
    n_overhead = 5 if args.quick else 20
    torch.set_num_threads(TORCH_THREADS)
    load_before = load_average()
    print(f"load average before: {load_before}", flush=True)

    rng = np.random.default_rng(0)
    lat_masks = rng.random((args.latency_coalitions, LATENCY_PLAYERS)) < 0.5
    api = ApiCall(args.latency_ms / 1000.0)
    d = MLP_WIDTHS[0]
    x = rng.normal(size=d).astype(np.float32)
    background = rng.normal(size=(BACKGROUND_ROWS, d)).astype(np.float32)
    comp_masks = rng.random((args.compute_coalitions, d)) < 0.5
    model = fl.Model.from_factory(build_mlp, key="bench_parallel.mlp_256_1024_1024_10",
                                  batch_size=COMPUTE_CHUNK * BACKGROUND_ROWS)

    def latency_game(ex):
        return FunctionGame(api, LATENCY_PLAYERS, batch_size=LATENCY_CHUNK, executor=ex)

    def compute_game(ex):
        return MaskedModel(model, x, background=background, target=0, executor=ex)

    n_calls = int(np.ceil(args.latency_coalitions / LATENCY_CHUNK))
    print(f"latency-bound: {args.latency_coalitions} coalitions, {n_calls} calls of {args.latency_ms:g} ms; "
          f"compute-bound: {args.compute_coalitions} coalitions x {BACKGROUND_ROWS} background rows through "
          f"MLP {'-'.join(map(str, MLP_WIDTHS))}", flush=True)

    records = []
    reference = {}
    for kind in ["serial"] + args.backends:
        rec = {"backend": kind}
        for part, n_threads in (("latency", API_THREADS), ("compute", WORKERS)):
            if kind != "threads" and part == "compute":
                continue  # one executor serves both parts; threads get a pool per part
            backend = Backend(kind, n_threads)
            t = time.perf_counter()
            ex = backend.start()
            start_s = time.perf_counter() - t
            try:
                if part == "latency":
                    rec.update(label=_label(kind, n_threads), start_s=start_s, n_workers=ex.n_workers)
                    rec["first_map_s"], overhead = per_call_overhead(ex, n_overhead)
                    rec.update(per_call_ms=1000 * statistics.median(overhead),
                               per_call_all_ms=[1000 * v for v in overhead])
                    game = latency_game(ex)
                    t = time.perf_counter()
                    game(lat_masks[:LATENCY_CHUNK])  # first game call (loads the function on workers)
                    rec["first_call_s"] = time.perf_counter() - t
                    sec, times, values = _timed(lambda g=game: g(lat_masks), args.repeats)
                    rec.update(latency_s=sec, latency_all_s=times)
                    reference.setdefault("latency", values)
                    rec["latency_equal"] = bool(np.array_equal(values, reference["latency"]))
                    if game.calls != args.latency_coalitions * (args.repeats) + LATENCY_CHUNK:
                        raise AssertionError(f"{kind}: the game counted {game.calls} coalitions")
                if kind != "threads" or part == "compute":
                    if kind == "threads":
                        rec.update(compute_label=_label(kind, n_threads), compute_start_s=start_s)
                    game = compute_game(ex)
                    t = time.perf_counter()
                    game(comp_masks[:COMPUTE_CHUNK])  # first call: workers import torch, build the MLP
                    rec["compute_first_call_s"] = time.perf_counter() - t
                    sec, times, values = _timed(lambda g=game: g(comp_masks), args.repeats)
                    rec.update(compute_s=sec, compute_all_s=times)
                    reference.setdefault("compute", values)
                    rec["compute_equal"] = bool(np.array_equal(values, reference["compute"]))
                    rec["compute_max_abs_diff"] = float(np.max(np.abs(values - reference["compute"])))
            finally:
                backend.stop(ex)
        records.append(rec)
        print(f"{rec['label']:45s} start {rec['start_s']:6.2f} s  per call {rec['per_call_ms']:7.2f} ms  "
              f"latency {rec['latency_s']:6.3f} s ({'=' if rec['latency_equal'] else 'DIFFERENT'})  "
              f"compute {rec['compute_s']:6.3f} s ({'=' if rec['compute_equal'] else 'DIFFERENT'})", flush=True)

    serial = records[0]
    for rec in records:
        rec["latency_speedup"] = serial["latency_s"] / rec["latency_s"]
        rec["compute_speedup"] = serial["compute_s"] / rec["compute_s"]
        rec["compute_of_limit"] = rec["compute_speedup"] / WORKERS
    load_after = load_average()
    print(f"load average after: {load_after}", flush=True)

    goals = {"ray": ("latency_speedup", 1.8), "threads": ("latency_speedup", 10.0)}
    verdicts = {}
    for rec in records:
        if rec["backend"] in goals:
            key, goal = goals[rec["backend"]]
            verdicts[rec["backend"]] = {"goal": goal, "measured": rec[key], "met": rec[key] >= goal}

    lines = [
        "# Executors side by side (`bench_parallel.py`)",
        "",
        f"- Latency-bound: a FunctionGame over {LATENCY_PLAYERS} players, {args.latency_coalitions} coalitions "
        f"in chunks of {LATENCY_CHUNK}: {n_calls} calls of a model behind an API that waits "
        f"{args.latency_ms:g} ms per call. Goals: RayExecutor with {WORKERS} workers >= 1.8x, "
        f"ThreadExecutor({API_THREADS}) >= 10x.",
        f"- Compute-bound: MaskedModel over a torch MLP {'-'.join(map(str, MLP_WIDTHS))} (float32), "
        f"{BACKGROUND_ROWS} background rows, {args.compute_coalitions} coalitions in chunks of {COMPUTE_CHUNK} "
        f"({COMPUTE_CHUNK * BACKGROUND_ROWS} model rows per forward), a Model.from_factory model; "
        f"{TORCH_THREADS} torch thread in every arm (this process and every worker); "
        f"ThreadExecutor({WORKERS}) here. 'of limit' = speed-up / {WORKERS} (the {WORKERS}-worker limit).",
        "- Start-up: constructing the executor (ray.init and the actors; the Dask LocalCluster and its "
        "client; the loky pool). First map: the first `executor.map` of a trivial task after that. First "
        "MLP call: the first call of the compute-bound game on a fresh executor (workers unpickle the game "
        f"and build the model from its factory; {COMPUTE_CHUNK} coalitions). Per call: `executor.map` of a "
        f"trivial function over one item, median of the {n_overhead} maps after the first.",
        f"- Game times: median of {args.repeats}. '=' : values bitwise equal to the serial path.",
        f"- Load average (1/5/15 min) before {load_before}, after {load_after}; "
        f"{environment()['logical_cpus']} logical CPUs.",
        "",
        "| backend | start-up s | first map s | first MLP call s | per call ms | latency-bound s | speed-up | = | "
        "compute-bound s | speed-up | of limit | = |",
        "|---|---:|---:|---:|---:|---:|---:|:-:|---:|---:|---:|:-:|",
    ]
    for rec in records:
        lines.append(
            f"| {rec['label']} | {rec['start_s']:.2f} | {rec['first_map_s']:.2f} | "
            f"{rec['compute_first_call_s']:.2f} | {rec['per_call_ms']:.2f} | "
            f"{rec['latency_s']:.3f} | {rec['latency_speedup']:.2f}x | {'yes' if rec['latency_equal'] else 'NO'} | "
            f"{rec['compute_s']:.3f} | {rec['compute_speedup']:.2f}x | {rec['compute_of_limit']:.2f} | "
            f"{'yes' if rec['compute_equal'] else 'NO'} |"
        )
    lines.append("")
    for kind, v in verdicts.items():
        lines.append(f"- Goal {kind}: >= {v['goal']:g}x, measured {v['measured']:.2f}x: "
                     f"{'met' if v['met'] else 'NOT met'}.")
    table = "\n".join(lines) + "\n"
    print(table)
    data = {
        "records": records, "goals": verdicts,
        "settings": {"workers": WORKERS, "api_threads": API_THREADS, "latency_ms": args.latency_ms,
                     "latency_coalitions": args.latency_coalitions, "latency_chunk": LATENCY_CHUNK,
                     "compute_coalitions": args.compute_coalitions, "compute_chunk": COMPUTE_CHUNK,
                     "mlp": MLP_WIDTHS, "background_rows": BACKGROUND_ROWS, "torch_threads": TORCH_THREADS,
                     "repeats": args.repeats},
        "environment": environment(load_average_before=load_before, load_average_after=load_after),
    }
    if not all(r["latency_equal"] and r["compute_equal"] for r in records):
        print("VALUES DIFFER from the serial path", file=sys.stderr)
    if args.quick:
        print("--quick: results not written")
    else:
        write_results(args.out, "parallel", table, data)
    return 0 if all(r["latency_equal"] and r["compute_equal"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
