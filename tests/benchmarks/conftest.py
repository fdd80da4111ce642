"""Shared by the tests of the benchmark scripts' helpers."""

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")


@pytest.fixture(scope="module")
def benchmark_script():
    """``benchmark_script("bench_sae")``: a script of benchmarks/ imported as a module, with
    benchmarks/ on sys.path while the test module runs (the scripts import ``_common``)."""
    added = BENCHMARKS not in sys.path
    if added:
        sys.path.insert(0, BENCHMARKS)
    try:
        yield importlib.import_module
    finally:
        if added:
            sys.path.remove(BENCHMARKS)


@pytest.fixture(scope="module")
def sc():
    """benchmarks/seed_claims.py loaded afresh for each test module (its ``_claims`` state is the
    module's own)."""
    import importlib.util

    path = Path(BENCHMARKS) / "seed_claims.py"
    spec = importlib.util.spec_from_file_location("_seed_claims_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows(sc):
    """The seed-claims table's rows (``seed_claims.collect()``)."""
    return sc.collect()
