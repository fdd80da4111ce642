"""Peak memory (resident set) of the streaming estimators: SPEX at n = 1,000 with budget 400,000 and
KernelSHAP on one 3x32x32 input (3,072 players) with a small CNN.

Each case runs in a fresh interpreter; its peak resident set (``VmHWM`` from /proc, else
``resource.getrusage``'s ``ru_maxrss``) is reported, minus the peak of an idle interpreter that
imported the same featurelens modules (the baseline). Both must stay under 1 GB (issue 10; before
the refactor SPEX peaked at about 4.3 GB and KernelSHAP added about 0.9 GB at 3,072 players).

    python benchmarks/bench_memory.py [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, load_average, write_results  # noqa: E402

LIMIT_MB = 1000.0

_PRELUDE = r"""
import json, resource, sys, time
import numpy as np, torch
import featurelens as fl
fl.explainers; fl.interactions; fl.datasets; fl.approximators

def peak_mb():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

CASES = {
    "idle": r"""
result = {}
""",
    "spex_n1000_budget400k": r"""
game = fl.datasets.sparse_game(n=1000, n_terms=40, max_degree=3, basis="fourier", seed=0)
t = time.perf_counter()
inter = fl.interactions.spex(game, budget=400_000, seed=0)
seconds = time.perf_counter() - t
planted = {k for k in game.terms if k}
found = {k for k, v in inter.terms.items() if k and abs(v) > 1e-6}
result = {"queries": inter.queries, "b": inter.params["b"], "planted_terms": len(planted),
          "recovered_planted": len(planted & found), "spurious": len(found - planted), "seconds": seconds}
""",
    "kernel_shap_3x32x32": r"""
torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
    torch.nn.Flatten(), torch.nn.Linear(16 * 16, 10),
)
x = torch.rand(1, 3, 32, 32)
t = time.perf_counter()
e = fl.explainer("kernel_shap", net, seed=0).explain(x)
seconds = time.perf_counter() - t
phi = e.values.reshape(-1)
delta = e.params["full_values"][0] - e.params["base_values"][0]
result = {"n_players": e.params["n_players"], "game_evaluations": e.params["game_evaluations"][0],
          "efficiency_gap": float(abs(phi.sum() - delta)), "seconds": seconds}
""",
}


def run_case(name: str) -> dict:
    code = _PRELUDE + "\nstart = peak_mb()\n" + CASES[name] + (
        "\nresult['peak_mb'] = peak_mb(); result['after_import_mb'] = start\nprint(json.dumps(result))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"case {name} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    load_before = load_average()
    t0 = time.perf_counter()
    idle = run_case("idle")
    rows = {}
    for name in CASES:
        if name == "idle":
            continue
        r = run_case(name)
        r["above_idle_mb"] = r["peak_mb"] - idle["peak_mb"]
        r["under_1gb"] = bool(r["above_idle_mb"] < LIMIT_MB)
        rows[name] = r
        print(name, json.dumps(r))
    data = {
        "environment": environment(),
        "load_before": load_before,
        "load_after": load_average(),
        "total_seconds": time.perf_counter() - t0,
        "idle_peak_mb": idle["peak_mb"],
        "limit_mb": LIMIT_MB,
        "cases": rows,
        "before_refactor_mb": {"spex_n1000_budget400k": 4300.0, "kernel_shap_3x32x32": "+900 (issue 10)"},
    }
    env = data["environment"]
    lines = [
        "# Peak memory of the streaming estimators (resident set, fresh interpreter per case)",
        "",
        f"torch {env['torch']}, featurelens {env['featurelens']}, Python {env['python']}; {env['threads']} torch "
        f"threads on {env['cpu']} ({env['logical_cpus']} logical CPUs). Peak resident set (VmHWM) of each case, "
        f"minus the {idle['peak_mb']:.0f} MiB peak of an idle interpreter that imported featurelens (torch "
        f"included). Load average {load_before} before, {data['load_after']} after; total "
        f"{data['total_seconds']:.0f} s.",
        "",
        "| case | peak MiB | above idle MiB | < 1 GB | before the refactor | details |",
        "|---|---:|---:|:-:|---|---|",
    ]
    spex = rows["spex_n1000_budget400k"]
    lines.append(
        f"| SPEX, n = 1,000, budget 400,000 (planted sparse game) | {spex['peak_mb']:.0f} | {spex['above_idle_mb']:.0f} | "
        f"{'yes' if spex['under_1gb'] else 'NO'} | about 4.3 GB (all masks in float64) | {spex['queries']} queries, "
        f"b = {spex['b']}; {spex['recovered_planted']}/{spex['planted_terms']} planted terms recovered, "
        f"{spex['spurious']} spurious |"
    )
    ks = rows["kernel_shap_3x32x32"]
    lines.append(
        f"| KernelSHAP, one 3x32x32 input, small CNN | {ks['peak_mb']:.0f} | {ks['above_idle_mb']:.0f} | "
        f"{'yes' if ks['under_1gb'] else 'NO'} | about +0.9 GB (the (budget, n) design and its copies) | "
        f"{ks['n_players']} players, {ks['game_evaluations']} evaluations, efficiency gap {ks['efficiency_gap']:.1e} |"
    )
    lines += [
        "",
        "Coalitions and queries are generated and evaluated chunk by chunk (featurelens.approximators."
        "CHUNK_ELEMENTS mask elements); KernelSHAP keeps only its (n-1) x (n-1) normal equations, SPEX "
        "only its query values (and refits from normal equations accumulated per chunk).",
        "",
    ]
    write_results(args.out, "memory", "\n".join(lines), data)


if __name__ == "__main__":
    main()
