"""Shared fixtures: small seeded models used across the test suite."""

import os
import sys

import pytest
import torch

# Let the tests run from a plain checkout too (make test installs the package in editable mode).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
# Shared brute-force references (tests/_references.py) are imported by name.
sys.path.insert(0, os.path.dirname(__file__))

# Ray and Dask started by the tests listen on loopback only. Ray on Linux otherwise picks the
# machine's "reachable" address (it asks the routing table for a route to a public address) even
# with _node_ip_address="127.0.0.1"; with this variable at 0 (read when ray is imported) every
# node, raylet and worker of a local Ray uses 127.0.0.1.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

# The test models are tiny: one thread is faster than two and leaves a core to the OS.
torch.set_num_threads(1)


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Softplus(), torch.nn.Linear(16, 3)
    ).double()


@pytest.fixture
def small_cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(4, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 4 * 4, 2),
    )


# -- distributed engines (tests/test_parallel.py): one local cluster each per test session ----------
_PATHS = [os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src")), os.path.abspath(os.path.dirname(__file__))]


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray with 2 CPUs for the whole session (started once: about 3-10 s), whose workers
    import the package and the test helpers from this checkout. Skips when ray is absent."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(_PATHS)}},
        )
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def dask_client():
    """A Dask LocalCluster of 2 single-threaded worker processes for the whole session (about
    2-3 s to start). Skips when distributed is absent."""
    distributed = pytest.importorskip("distributed")
    import logging

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
        silence_logs=logging.CRITICAL,
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


#: The gallery example that the test build of the documentation executes (numpy only, a few
#: seconds); the other examples' pages are written with their code but not run.
DOCS_EXAMPLE = "plot_interactions"


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory):
    """The documentation site, built once for the session as ``make docs`` builds it (Sphinx,
    ``-W --keep-going``: any warning fails the build) except that sphinx-gallery executes only
    :data:`DOCS_EXAMPLE`. Shared by tests/test_docs_build.py (pages and references) and
    tests/test_docs_site_browser.py (screenshots). Skips when Sphinx or the docs extra is absent."""
    for module in ("sphinx", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "myst_parser"):
        pytest.importorskip(module)
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path_factory.mktemp("docs_html")
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "-j", "1",
           "-D", f"sphinx_gallery_conf.filename_pattern=/{DOCS_EXAMPLE}",
           "-d", str(out / ".doctrees"), os.path.join(root, "docs"), str(out)]
    env = dict(os.environ, MPLBACKEND="Agg", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env)
    assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    return out
