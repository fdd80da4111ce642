# The two commands a newcomer needs: `make demo` (set up, run the ground-truth benchmark) and
# `make test` (set up, run the tests). `make bench` runs the side-by-side speed benchmarks.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.featurelens-installed
# The wheels of the core dependencies (no extras), pinned by constraints.txt, for
# tests/test_packaging.py: it installs the built wheel into a clean venv offline from this folder.
WHEELHOUSE ?= .wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.complete

.PHONY: setup demo test bench docs dist clean torchvision-models

setup: $(STAMP) $(WHEELHOUSE_STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev]"
	$(MAKE) torchvision-models
	touch $(STAMP)

# torchvision's architectures for the tests and benchmarks on real-sized CNNs and ViTs, kept out of
# site-packages: the index's torchvision for torch 2.13 is the CUDA build, whose compiled ops fail
# to load beside the CPU torch, and transformers imports any torchvision it finds.
# benchmarks/_torchvision.py imports the (pure-Python) model definitions from this folder.
torchvision-models:
	$(PY) -m pip install --quiet --no-deps -c constraints.txt --target $(VENV)/torchvision-models torchvision

# `pip download .` resolves the project's core dependencies (not the project itself) into wheels.
$(WHEELHOUSE_STAMP): $(STAMP)
	rm -rf $(WHEELHOUSE)
	$(PY) -m pip download --quiet --only-binary :all: -d $(WHEELHOUSE) -c constraints.txt .
	touch $(WHEELHOUSE_STAMP)

demo: setup
	$(VENV)/bin/featurelens benchmark --out featurelens-report

test: setup
	$(PY) -m pytest -q

bench: setup
	$(PY) -m pip install --quiet -c constraints.txt -e ".[bench]"
	$(PY) benchmarks/bench_gradients.py
	$(PY) benchmarks/bench_captum_families.py
	$(PY) benchmarks/bench_scale.py
	$(PY) benchmarks/bench_agop.py
	$(PY) benchmarks/bench_agop_attribution.py
	$(PY) benchmarks/bench_ood.py
	$(PY) benchmarks/bench_sae.py
	$(PY) benchmarks/bench_manifolds.py
	$(PY) benchmarks/bench_objectives.py
	$(PY) benchmarks/bench_iif_learn.py
	$(PY) benchmarks/bench_minshap_inference.py
	$(PY) benchmarks/bench_sop.py
	$(PY) benchmarks/bench_rfrboost.py
	$(PY) benchmarks/bench_rf_ensembles.py
	$(PY) benchmarks/bench_shapley.py
	$(PY) benchmarks/bench_spex.py
	$(PY) benchmarks/bench_rfm.py
	$(PY) benchmarks/bench_rfm_modular.py
	$(PY) benchmarks/bench_cka.py
	$(PY) benchmarks/bench_grokking.py
	$(PY) benchmarks/bench_grokalign.py
	$(PY) benchmarks/bench_metrics.py
	$(PY) benchmarks/bench_wam.py
	$(PY) benchmarks/bench_selection.py
	$(PY) benchmarks/bench_memory.py
	$(PY) benchmarks/bench_tree.py
	$(PY) benchmarks/bench_text.py
	$(PY) benchmarks/bench_text_models.py
	$(PY) benchmarks/bench_parallel.py
	$(PY) benchmarks/bench_parallel_text.py
	$(PY) benchmarks/bench_selection_protocols.py
	$(PY) benchmarks/bench_learning_claims.py
	$(PY) benchmarks/bench_more_claims.py
	$(PY) benchmarks/seed_claims.py

# The documentation site, into docs/_build/html: every gallery example runs; warnings are errors.
docs: setup
	$(PY) -m pip install --quiet -c constraints.txt -e ".[docs]"
	$(PY) -m sphinx -b html -W --keep-going -j 1 docs docs/_build/html

# A wheel and an sdist into dist/, built with the setuptools pinned in the venv (no download).
dist: setup
	$(PY) -m build --no-isolation --outdir dist

clean:
	rm -rf $(VENV) $(WHEELHOUSE) dist featurelens-report featurelens-diagnose audit-report .pytest_cache
