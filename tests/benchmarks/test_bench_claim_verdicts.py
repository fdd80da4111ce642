"""The verdict rules added to bench_spex, bench_text_models, bench_wam and bench_rfm_modular, and the
shared ``_claims`` helpers, on planted numbers: for each rule one case that must read "reproduced",
one "partly" and one "not" (the studies themselves are run by the scripts)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def load(benchmark_script):
    return benchmark_script


# ------------------------------------------------------------------------------------ _claims

def test_count_rule_and_row(load):
    c = load("_claims")
    assert c.count_rule([True, True]) == "reproduced"
    assert c.count_rule([True, False]) == "partly"
    assert c.count_rule([False, False]) == "not"
    assert c.count_rule([]) == "not"
    with pytest.raises(ValueError):
        c.row("m", "p", "claim", "maybe", "", "", "", "")


def test_rerender_writes_key_and_replaces_section(load, tmp_path):
    c = load("_claims")
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"a": 1, "seed_claims": [{"old": True}]}))
    (tmp_path / "x.md").write_text("# Table\n\n| a |\n")

    def rows_fn(doc):
        return [c.row("m", "p", f"claim a={doc['a']}", "partly", "num", "prot", "paper", "diff")]

    c.rerender(rows_fn, path)
    c.rerender(rows_fn, path)  # twice: the section is replaced, not appended again
    doc = json.loads(path.read_text())
    assert doc["a"] == 1 and [r["claim"] for r in doc["seed_claims"]] == ["claim a=1"]
    md = (tmp_path / "x.md").read_text()
    assert md.startswith("# Table") and md.count(c.SECTION) == 1 and "**m: claim a=1: partly.**" in md


# --------------------------------------------------------------------------------------- SPEX

def _spex_rows(recovered_1000=1.0, queries_1000=13000, noisy_support=1.0, noisy_r2=0.9999):
    rows = []
    for n, q in ((64, 8000), (1000, queries_1000)):
        rows.append({"n": n, "n_terms": 20, "noise": 0.0, "method": "featurelens spex", "budget": 15000,
                     "status": "ok", "queries": q, "r2": 1.0, "recovered": 1.0 if n == 64 else recovered_1000,
                     "support": 1.0, "spurious": 0})
        rows.append({"n": n, "n_terms": 20, "noise": 0.01, "method": "featurelens spex", "budget": 15000,
                     "status": "ok", "queries": q, "r2": noisy_r2, "recovered": 0.5, "support": noisy_support,
                     "spurious": 30})
    # a reference row that the rule must ignore
    rows.append({"n": 1000, "n_terms": 20, "noise": 0.0, "method": "shapiq SPEX", "budget": 15000, "status": "ok",
                 "queries": 13000, "r2": 0.0, "recovered": 0.0, "support": 0.0, "spurious": 99})
    return rows


def test_spex_verdicts(load):
    b = load("bench_spex")
    assert b.verdict(_spex_rows())["verdict"] == "reproduced"
    # noisy support lost: recovery of the noiseless games still holds -> partly
    assert b.verdict(_spex_rows(noisy_support=0.5))["verdict"] == "partly"
    # queries growing linearly in n (1000/64 x): not log n -> partly
    v = b.verdict(_spex_rows(queries_1000=8000 * 1000 // 64))
    assert v["verdict"] == "partly" and v["query_ratio"] > v["log_bound"]
    # the largest noiseless game not recovered -> not
    assert b.verdict(_spex_rows(recovered_1000=0.7))["verdict"] == "not"


# --------------------------------------------------------------------------- SPEX / ProxySPEX on text

def _text_doc(spex, proxy, lime=0.5):
    """spex / proxy: {(model, budget): r2}."""
    rows = []
    for (model, budget), r2 in spex.items():
        rows += [{"model": model, "budget": budget, "method": "spex", "r2": r2},
                 {"model": model, "budget": budget, "method": "proxy_spex", "r2": proxy[(model, budget)]},
                 {"model": model, "budget": budget, "method": "lime", "r2": lime},
                 {"model": model, "budget": budget, "method": "kernel_shap", "r2": -1.0},
                 {"model": model, "budget": budget, "method": "feature_ablation", "r2": lime - 0.1}]
    return {"faithfulness": rows, "budgets": sorted({b for _, b in spex}), "n_test": 100}


def test_text_verdicts(load):
    b = load("bench_text_models")
    keys = [("clf", 500), ("clf", 2000), ("lm", 500), ("lm", 2000)]
    good = _text_doc({k: 0.6 + 0.1 * (k[1] == 2000) for k in keys}, {k: 0.8 for k in keys})
    v = b.verdicts(good)
    assert v["spex"] == "reproduced" and v["proxy_spex"] == "reproduced"
    # SPEX below LIME at the small budget: partly; ProxySPEX at 500 below SPEX at 2000: partly
    mixed = _text_doc({k: (0.4 if k[1] == 500 else 0.9) for k in keys}, {k: 0.7 for k in keys})
    v = b.verdicts(mixed)
    assert v["spex"] == "partly" and v["proxy_spex"] == "partly"
    assert [c["ok"] for c in v["cheap"]] == [False, False]
    bad = _text_doc({k: 0.3 for k in keys}, {k: 0.2 for k in keys})
    v = b.verdicts(bad)
    assert v["spex"] == "not" and v["proxy_spex"] == "not"
    assert all(len(r["measured"]) > 0 for r in b.seed_claims(good))


# ---------------------------------------------------------------------------------------- WAM

def _wam_digits(wam_ig, ig, others=0.5, sd=0.16, n=256):
    rows = {m: {"ins_minus_del": others, "ins_minus_del_std": sd} for m in b_grad()}
    rows["integrated_gradients"] = {"ins_minus_del": ig, "ins_minus_del_std": sd}
    rows["wam (coefficient domain)"] = {"ins_minus_del": 0.3, "ins_minus_del_std": sd}
    rows["wam_ig (coefficient domain)"] = {"ins_minus_del": wam_ig, "ins_minus_del_std": sd}
    return {"rows": rows, "n": n, "test_accuracy": 0.99, "epochs": 1}


def b_grad():
    return ("saliency", "input_x_gradient", "integrated_gradients", "smoothgrad")


def test_wam_verdicts(load):
    b = load("bench_wam")
    assert b.GRADIENT_METHODS == b_grad()
    # SE of a difference = sqrt(2) * 0.16 / 16 = 0.01414; 2 SE = 0.028
    v = b.verdict(_wam_digits(wam_ig=0.8, ig=0.7))
    assert v["verdict"] == "reproduced" and v["best_wam"] == "wam_ig (coefficient domain)"
    assert v["outcome"]["integrated_gradients"]["se"] == pytest.approx(2 ** 0.5 * 0.16 / 16)
    # within 2 SE of the best gradient method (a tie), ahead of the rest: partly
    v = b.verdict(_wam_digits(wam_ig=0.71, ig=0.72))
    assert v["verdict"] == "partly" and v["outcome"]["integrated_gradients"]["result"] == "tie"
    # behind the best gradient method by more than 2 SE: not, even when ahead of the others
    v = b.verdict(_wam_digits(wam_ig=0.7, ig=0.8))
    assert v["verdict"] == "not" and v["outcome"]["saliency"]["result"] == "win"


# ------------------------------------------------------------------------------- RFM modular

def _rfm_run(fraction, acc0, acc1, acc_last, residual, iters=10):
    acc = {str(i): acc0 for i in range(iters + 1)}
    acc["1"], acc[str(iters)] = acc1, acc_last
    return {"fraction": fraction, "accuracy": acc, "circulant_residual": [0.05, residual, 0.05]}


def _rfm_doc(runs, iters=10):
    return {"p": 7, "iters": iters, "runs": runs, "settings": {"bandwidth": 2.5, "reg": 1e-6}}


def test_rfm_modular_verdicts(load):
    b = load("bench_rfm_modular")
    good = _rfm_doc([_rfm_run(0.3, 0.0, 0.0, 0.2, 0.6), _rfm_run(0.5, 0.0, 0.0, 1.0, 0.1),
                     _rfm_run(0.6, 0.0, 0.0, 1.0, 0.15)])
    v = b.verdicts(good)
    assert v["groks"] == [False, True, True] and v["claim_1"] == "reproduced" and v["claim_2"] == "reproduced"
    # fraction 0.5 does not grok, 0.6 does; residual 0.3 in the run that groks
    mixed = _rfm_doc([_rfm_run(0.5, 0.0, 0.0, 0.8, 0.1), _rfm_run(0.6, 0.0, 0.0, 1.0, 0.3)])
    v = b.verdicts(mixed)
    assert v["claim_1"] == "partly" and v["claim_2"] == "partly"
    # kernel ridge alone already solves it (no emergence), or an immediate jump after one update: no grokking
    bad = _rfm_doc([_rfm_run(0.5, 0.5, 0.9, 1.0, 0.1), _rfm_run(0.6, 0.0, 0.95, 1.0, 0.1)])
    v = b.verdicts(bad)
    assert v["groks"] == [False, False] and v["claim_1"] == "not" and v["claim_2"] == "not"
    rows = b.seed_claims(good)
    assert [r["verdict"] for r in rows] == ["reproduced", "reproduced"]
