"""What every benchmark script records about the machine it ran on."""

from __future__ import annotations

import contextlib
import os
import platform

import torch

import featurelens as fl


def environment(**extra) -> dict:
    """Versions, torch threads and CPU model; ``extra`` adds entries (e.g. a reference library's
    version)."""
    cpu = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "torch": torch.__version__,
        "featurelens": fl.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "platform": platform.platform(),
        **extra,
    }


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages: timings on a busy machine are not comparable."""
    with contextlib.suppress(OSError, AttributeError):
        return [round(v, 2) for v in os.getloadavg()]
    return None


def write_results(out, name: str, table: str, data: dict) -> None:
    """Write ``name.md`` (the Markdown table) and ``name.json`` (everything measured) into ``out``."""
    import json
    from pathlib import Path

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(table)
    (out / f"{name}.json").write_text(json.dumps(data, indent=2))
    print(f"wrote {out / (name + '.md')} and {out / (name + '.json')}")
    # the seed-claim verdicts of a study whose script does not write its own "seed_claims" rows, by the
    # rules of benchmarks/seed_claims.py on the numbers just written, stored in the same JSON
    import sys

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import _claims

    try:
        stored = _claims.store(out / f"{name}.json")
    except Exception as e:  # noqa: BLE001  (a partial run's numbers: the measurements are kept, say why)
        print(f"no seed-claim verdicts stored in {out / (name + '.json')}: {type(e).__name__}: {e}")
    else:
        if stored is not None:
            print(f"stored the seed-claim verdicts in {out / (name + '.json')}")
