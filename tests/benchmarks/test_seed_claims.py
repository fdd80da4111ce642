"""benchmarks/seed_claims.py: the table of the seed papers' claims is read from the results files.

Every row has a valid verdict; every extractor reads a results file that exists; rows written under
the "seed_claims" convention are collected; changing a verdict field (or the numbers a verdict is
derived from) in a copy of a results file changes the row, so no verdict is typed by hand; every
results file with a verdict-like field gives at least one row; the docs page and the Markdown
output are written from the rows, one per claim. (tests/benchmarks/test_seed_claims_honest.py: the
stored verdicts, the rules' timing, the sections and the JSON output.)
"""

import copy
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _doc(name):
    with open(RESULTS / name, encoding="utf-8") as f:
        return json.load(f)


def _folder(tmp_path, name, doc):
    """A results folder holding only ``name`` with ``doc`` as its content."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    with open(tmp_path / name, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return tmp_path


def test_every_row_has_a_valid_verdict_and_its_fields(sc, rows):
    assert len(rows) >= 40
    for r in rows:
        assert r["verdict"] in sc.VERDICTS + (sc.NOT_CHECKED,), r
        for field in sc.FIELDS:
            assert isinstance(r[field], str), (field, r)
        assert r["method"] and r["claim"] and r["protocol"], r
        assert r["family"] in sc.FAMILIES, r
        if r["verdict"] != sc.NOT_CHECKED:
            assert (ROOT / r["source"]).is_file(), r
    c = sc.counts(rows)
    assert sum(c.values()) == sum(cl["section"] == "seed" for cl in sc.claims(rows)) < len(rows)
    # the table is not one-sided: each verdict occurs
    assert all(c[v] > 0 for v in sc.VERDICTS), c


def test_every_extractor_reads_a_file_that_exists(sc, rows):
    assert len(sc.EXTRACTORS) >= 19   # the files whose scripts write no "seed_claims" rows themselves
    sources = {r["source"] for r in rows}
    for name in sc.EXTRACTORS:
        assert (RESULTS / name).is_file(), name
        assert f"benchmarks/results/{name}" in sources, name


def _verdict_like(obj) -> bool:
    if isinstance(obj, dict):
        return any(re.search("verdict|claim", k, re.I) or _verdict_like(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_verdict_like(v) for v in obj)
    return False


#: Results files with verdict-like fields that check no paper's claim, and why.
NOT_CASE_STUDIES = {
    "rerun_after_redesign.json": "compares reruns of other benchmarks with their committed results",
}


def test_rows_cover_every_results_file_with_a_verdict_field(rows):
    sources = {r["source"] for r in rows}
    with_verdicts = [p.name for p in sorted(RESULTS.glob("*.json"))
                     if p.name not in NOT_CASE_STUDIES and _verdict_like(_doc(p.name))]
    assert len(with_verdicts) >= 11
    for name in with_verdicts:
        assert f"benchmarks/results/{name}" in sources, name


def test_normalise_reads_the_scripts_spellings_and_refuses_others(sc):
    assert sc.normalise("partly reproduced, only at a larger L0") == "partly"
    assert sc.normalise("not reproduced") == "not"
    assert sc.normalise("**reproduced.**") == "reproduced"
    assert sc.normalise("not tested (reconstruction not matched)") == sc.NOT_CHECKED
    with pytest.raises(ValueError, match="not a verdict"):
        sc.normalise("great")
    assert sc.combine(["reproduced", "reproduced"]) == "reproduced"
    assert sc.combine(["not", "not reproduced"]) == "not"
    assert sc.combine(["reproduced", "not"]) == "partly"


PLANTED = {
    "seed_claims": [
        {"method": "NBSE", "paper": "Usatyuk et al. 2026", "claim": "groups redundant embedding dimensions",
         "verdict": "partly reproduced", "measured": "ARI 0.71", "protocol": "MiniLM embeddings",
         "paper_protocol": "the paper's embeddings", "differences": "smaller"},
        {"method": "Deep linear networks", "paper": "x", "claim": "compression then discrimination",
         "verdict": "not", "measured": "m", "protocol": "p", "paper_protocol": "pp", "differences": "d"},
        {"method": "fl.learning.virtual_covariance", "paper": "arXiv 2605.06258", "claim": "O(eta^2)",
         "verdict": "reproduced", "measured": "slope 2.0", "protocol": "p"},
    ],
    "environment": {},
}


def test_a_planted_seed_claims_file_is_collected(sc, tmp_path):
    folder = _folder(tmp_path, "my_study.json", PLANTED)
    rows = sc.collect(folder)
    mine = [r for r in rows if r["source"] == "benchmarks/results/my_study.json"]
    got = {r["method"]: r for r in mine}
    assert sorted((m, r["verdict"]) for m, r in got.items()) == [
        ("Deep linear networks", "not"), ("NBSE", "partly"), ("fl.learning.virtual_covariance", "reproduced")]
    assert got["fl.learning.virtual_covariance"]["differences"] == ""   # a missing field reads as empty
    assert got["NBSE"]["measured"] == "ARI 0.71" and got["NBSE"]["family"] == "Feature selection"
    assert got["Deep linear networks"]["family"] == "Representations"
    methods = {r["method"] for r in rows if r["verdict"] == sc.NOT_CHECKED}
    # the new rows replace their methods' "not checked" placeholders, the others stay
    assert not any(m in ("NBSE", "virtual_covariance") or m.startswith("compression_discrimination") for m in methods)
    assert "SIOFS" in methods and "HyperDFS" in methods


def test_a_seed_claims_list_wins_over_the_files_extractor(sc, tmp_path):
    doc = _doc("iif_learn.json")
    doc["seed_claims"] = [dict(PLANTED["seed_claims"][0], method="IIFLearn", verdict="reproduced")]
    rows = sc.collect(_folder(tmp_path, "iif_learn.json", doc))
    mine = [r for r in rows if r["source"].endswith("iif_learn.json")]
    assert [(r["method"], r["verdict"]) for r in mine] == [("IIFLearn", "reproduced")]


def test_a_bad_seed_claims_verdict_is_refused(sc, tmp_path):
    doc = copy.deepcopy(PLANTED)
    doc["seed_claims"][1]["verdict"] = "mostly"
    with pytest.raises(ValueError, match="bad.json.*seed_claims\\[1\\].*not a verdict"):
        sc.collect(_folder(tmp_path, "bad.json", doc))


def _set(path):
    """A mutation setting ``doc[path...] = value``."""
    def apply(doc, value):
        obj = doc
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return apply


def _grok_fail(doc, _):
    doc["summary"]["fired_before_grok"] = 1


def _ood_plain_better(doc, _):
    for m in doc["models"]:
        agg = doc["aggregate"][m]
        for k in list(agg):
            if k.startswith("mahalanobis++|"):
                agg[k]["fpr95"]["mean"] = agg["mahalanobis|" + k.split("|", 1)[1]]["fpr95"]["mean"] + 0.1


def _grokalign_control_groks(doc, _):
    doc["summary"]["no regulariser (control)"]["grokked_90"] = doc["summary"]["no regulariser (control)"]["n"]


def _sae_blend_half(doc, _):
    for r in doc["planted"] + (doc.get("minilm") or []):
        if r.get("score") == "blend" and r.get("magnitude") == "norm":
            r["blend"]["mean"] = 0.9


def _monotone(doc, _):
    for m in doc["monotonicity"]:
        m["drops_running"] = 0


# (file, mutation, value, claim substring, verdict before, verdict after)
CHANGES = [
    ("iif_learn.json", _set(["verdict"]), "not", "i-IF-Learn beats", "partly", "not"),
    ("rfrboost.json", _set(["verdict", "claim"]), "reproduced", "RFRBoost beats", "partly", "reproduced"),
    ("objectives.json", _set(["verdicts", "supcon_vs_ce", "verdict"]), "reproduced", "Supervised contrastive",
     "not", "reproduced"),
    ("manifolds.json", _set(["claims", 2, "verdict"]), "partly", "centre correlation", "not", "partly"),
    ("minshap_inference.json", _set(["verdict_parts", "stability"]), "reproduced", "more stable", "not", "reproduced"),
    ("sop.json", _set(["verdicts", "faithful", "verdict"]), "not", "faithful by construction", "partly", "not"),
    ("rf_ensembles.json", _set(["summary", "digits", "claim1"]), "reproduced", "one large", "partly", "reproduced"),
    ("agop_attribution_protocols.json", _set(["verdicts", "protocols_with_all_three"]), 2, "hold together",
     "not", "reproduced"),
    # derived from the numbers by the .md's rule
    ("grokking.json", _grok_fail, None, "announces grokking", "reproduced", "not"),
    ("ood.json", _ood_plain_better, None, "lowers the FPR", "reproduced", "not"),
    ("agop_attribution.json", _monotone, None, "monotonically", "partly", "reproduced"),
    # derived by the script's own verdict function
    ("grokalign.json", _grokalign_control_groks, None, "instead of weight decay", "reproduced", "not"),
    ("sae_magnitude.json", _sae_blend_half, None, "half-magnitude", "reproduced", "not"),
]


@pytest.mark.parametrize("name,mutate,value,claim,before,after", CHANGES, ids=[c[0] + ":" + c[3] for c in CHANGES])
def test_the_verdict_is_read_from_the_file(sc, tmp_path, name, mutate, value, claim, before, after):
    def verdict(doc, folder):
        rows = [r for r in sc.collect(_folder(folder, name, doc)) if r["source"].endswith("/" + name)
                and claim in r["claim"]]
        assert len(rows) == 1, [r["claim"] for r in rows]
        return rows[0]["verdict"]

    doc = _doc(name)
    # the stored rows (written by _claims.store from the same rule) would win: judge the numbers
    stored = doc.pop("seed_claims", None)
    assert stored is None or all(r.get("stored_by") == "benchmarks/seed_claims.py" for r in stored), name
    assert verdict(doc, tmp_path / "a") == before
    mutate(doc, value)
    assert verdict(doc, tmp_path / "b") == after


def test_the_markdown_command_prints_every_row(sc, rows, capsys):
    assert sc.main([]) == 0
    out = capsys.readouterr().out
    table_rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| method")]
    claims = sc.claims(rows)
    # one line per claim, then one per protocol variant of a claim run under several
    assert len(table_rows) == len(claims) + sum(len(c["variants"]) for c in claims)
    assert sum(len(c["variants"]) or 1 for c in claims) == len(rows)
    c = sc.counts(rows)
    assert f"reproduced: {c['reproduced']}, partly: {c['partly']}, not: {c['not']}" in out


def test_the_docs_page_has_a_table_per_family_and_links_the_benchmarks(sc, rows, tmp_path):
    docs = _load("_docs_seed_claims_under_test", ROOT / "docs" / "_seed_claims.py")
    path = Path(docs.seed_claims(str(tmp_path)))
    text = path.read_text(encoding="utf-8")
    claims = sc.claims(rows)
    seed = [c for c in claims if c["section"] == "seed"]
    families = list(dict.fromkeys(c["family"] for c in seed))
    apart = {c["section"] for c in claims} - {"seed"}
    assert apart == {"identity", "own"}
    # a table per family of the seed papers' claims, one per section apart
    assert text.count(".. list-table::") == len(families) + len(apart)
    for fam in families:
        assert f"\n{fam}\n{'-' * len(fam)}\n" in text
    for section in apart:
        heading = sc._claims.SECTIONS[section]
        assert f"\n{heading}\n{'-' * len(heading)}\n" in text
    assert ":doc:`iif_learn <benchmarks/iif_learn>`" in text
    # one verdict badge per claim (the protocol variants' verdicts are plain text)
    for verdict, badge in (("reproduced", "**reproduced**"), ("partly", "**partly**"), ("not", "**not**"),
                           ("not checked", "*not checked*")):
        assert text.count(f"\n     - {badge}\n") == sum(c["verdict"] == verdict for c in claims), verdict
    assert text.count("\u21b3 protocol variant") == sum(len(c["variants"]) for c in claims)
    assert "written after the run: rule ``8801973``" in text
    # unchanged content is not rewritten (Sphinx rebuilds only what changed)
    mtime = path.stat().st_mtime_ns
    docs.seed_claims(str(tmp_path))
    assert path.stat().st_mtime_ns == mtime

