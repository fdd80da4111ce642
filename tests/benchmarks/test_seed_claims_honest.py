"""benchmarks/seed_claims.py, issue 37 item 3 ("an honest table").

- every verdict of the table is the verdict stored in its results file (its ``"seed_claims"``), and
  the rows stored by ``_claims.store`` are what the study's rule gives on the file's numbers now;
- one row per claim: a claim run under several protocols is one claim with its variants;
- identities and featurelens' own claims are in sections apart and not counted with the seed papers';
- ``seed_claims --json`` gives every claim and variant with its rule's timing and commits;
- the stored timing agrees with the commit history (skipped where the clone has no history), and no
  script docstring says "fixed before the run" for a rule written after it.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def _doc(name):
    with open(RESULTS / name, encoding="utf-8") as f:
        return json.load(f)


# ----------------------------------------------------------------------- stored verdicts

def test_every_verdict_is_read_from_its_results_file(sc, rows):
    checked = 0
    for r in rows:
        if r["verdict"] == sc.NOT_CHECKED and not r["source"]:
            continue
        stored = _doc(Path(r["source"]).name).get("seed_claims")
        assert isinstance(stored, list), f"{r['source']} stores no seed_claims"
        same = [s for s in stored if s["method"] == r["method"] and s["claim"] == r["claim"]]
        assert len(same) == 1, (r["source"], r["claim"])
        assert sc.normalise(same[0]["verdict"]) == r["verdict"], (r["source"], r["claim"])
        checked += 1
    assert checked == len([r for r in rows if r["source"]]) >= 80


def test_the_stored_verdicts_are_what_the_rules_give_on_the_numbers(sc):
    """The rows ``_claims.store`` wrote are not stale: the study's rule (the file's extractor) on the
    file's numbers gives the same verdicts; a script's own rows are left alone."""
    n = 0
    for name, extract in sc.EXTRACTORS.items():
        doc = _doc(name)
        stored = doc.pop("seed_claims")
        assert all(s.get("stored_by") == sc._claims.STORED_BY for s in stored), name
        fresh = extract(doc)
        assert [(f["claim"], sc.normalise(f["verdict"])) for f in fresh] == \
               [(s["claim"], sc.normalise(s["verdict"])) for s in stored], name
        n += len(stored)
    assert n >= 50


def test_store_writes_the_rows_and_keeps_a_scripts_own(sc, tmp_path):
    for name in ("grokking_detector.json", "ood.json"):
        doc = _doc(name)
        doc.pop("seed_claims")
        (tmp_path / name).write_text(json.dumps(doc))
        rows = sc._claims.store(tmp_path / name, sc)
        assert rows and json.loads((tmp_path / name).read_text())["seed_claims"] == rows
    # the grokking detector's verdict is stored, not recomputed when the table is read
    assert _doc("grokking_detector.json")["seed_claims"][0]["verdict"] in sc.VERDICTS
    own = _doc("spex.json")
    (tmp_path / "spex.json").write_text(json.dumps(own))
    assert sc._claims.store(tmp_path / "spex.json", sc) is None
    assert json.loads((tmp_path / "spex.json").read_text()) == own


# ------------------------------------------------------------------------ one row per claim

def test_one_row_per_claim(sc, rows):
    claims = sc.claims(rows)
    ids = [c["claim_id"] for c in claims]
    assert len(ids) == len(set(ids))
    # no claim text appears twice among the claims (the AGOP claim was four rows, one per protocol)
    texts = [c["claim"] for c in claims]
    assert len(texts) == len(set(texts)), [t for t in texts if texts.count(t) > 1]
    agop = [c for c in claims if "+44% mIoU" in c["claim"]]
    assert len(agop) == 1 and len(agop[0]["variants"]) == 4
    assert agop[0]["verdict"] == next(v["verdict"] for v in agop[0]["variants"]
                                      if v["source"].endswith("agop_attribution_protocols_64.json"))
    for c in claims:
        if len(c["variants"]) > 1:
            assert c["verdict_rule"], c["claim"]
            if c["verdict_rule"].startswith("combined"):
                assert c["verdict"] == sc.combine(v["verdict"] for v in c["variants"])
    # the counts are by claim, per section
    for section in sc._claims.SECTIONS:
        assert sum(sc.counts(rows, section).values()) == sum(c["section"] == section for c in claims)
    assert sum(sc.counts(rows).values()) < len(rows)


def test_identities_and_own_claims_are_apart(sc, rows):
    claims = sc.claims(rows)
    section = {c["claim"]: c["section"] for c in claims}
    gp = [c for c in claims if "regresses as ridge regression" in c["claim"]]
    own = [c for c in claims if "decoding the input's magnitude" in c["claim"]]
    assert [c["section"] for c in gp] == ["identity"] and [c["section"] for c in own] == ["own"]
    assert all(c["section_note"] for c in gp + own)
    assert sum(v == "seed" for v in section.values()) == sum(sc.counts(rows, "seed").values())
    md = sc.markdown(rows)
    seed_part = md.split("## " + sc._claims.SECTIONS["identity"])[0]
    assert "regresses as ridge regression" not in seed_part and "decoding the input's magnitude" not in seed_part
    assert "## " + sc._claims.SECTIONS["own"] in md


# ---------------------------------------------------------------------------- the JSON output

def test_the_json_output_has_the_timing_and_commits(sc, rows, capsys):
    assert sc.main(["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    claims = out["claims"]
    assert len(claims) == len(sc.claims(rows))
    assert out["counts"]["seed"] == sc.counts(rows)
    n_rows = 0
    for c in claims:
        for item in [c] + c["variants"]:
            for field in ("claim_id", "section", "verdict", "rule_timing", "rule_commit", "results_commit", "source"):
                assert field in item, (field, item["claim"])
            assert item["rule_timing"] in ("before", "after", "unknown")
            if item["verdict"] != sc.NOT_CHECKED:
                assert re.fullmatch(r"[0-9a-f]{7,40}", item["rule_commit"]), item["claim"]
                assert re.fullmatch(r"[0-9a-f]{7,40}", item["results_commit"]), item["claim"]
        n_rows += len(c["variants"]) or 1
    assert n_rows == out["rows"] == len(rows)
    assert sum(out["rule_timing"].values()) == sum(r["verdict"] != sc.NOT_CHECKED for r in rows)
    # the rules the issue names as written after their runs say so
    after = {c["source"].split("/")[-1] for c in claims if c["rule_timing"] == "after"}
    assert {"spex.json", "text_models.json", "wam.json", "rfm_modular.json"} <= after


def test_every_judged_row_has_a_timing_entry(sc, rows):
    for r in rows:
        if r["verdict"] != sc.NOT_CHECKED:
            assert r["rule_commit"] and r["results_commit"], (r["source"], r["claim"])
    files = {e[0] for e in sc._claims.RULE_TIMING}
    assert all((RESULTS / f).is_file() for f in files), files


# ----------------------------------------------------------------- the timing against history

def _git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def _history():
    if shutil.which("git") is None:
        return False
    r = _git("rev-parse", "--is-shallow-repository")
    return r.returncode == 0 and r.stdout.strip() == "false"


needs_history = pytest.mark.skipif(not _history(), reason="no git history here (a shallow clone or no git)")

#: Keys of a results JSON that are not numbers a rule judges (timings, machine load, the stored rows).
_NOT_JUDGED = re.compile(r"seconds|^load_|^environment$|^command$|^seed_claims$|_time$|^time")


def _judged(doc, keys=()):
    def strip(d):
        if isinstance(d, dict):
            return {k: strip(v) for k, v in d.items() if not _NOT_JUDGED.search(str(k))}
        if isinstance(d, list):
            return [strip(v) for v in d]
        return d
    if keys and isinstance(doc, dict):
        doc = {k: doc.get(k) for k in keys}
    return strip(doc)


def _is_ancestor(a, b):
    return _git("merge-base", "--is-ancestor", a, b).returncode == 0


@needs_history
def test_the_stored_timing_agrees_with_the_history(sc):
    for file, key, rule, results, timing, _, keys in sc._claims.RULE_TIMING:
        for c in (rule, results):
            assert _git("cat-file", "-e", f"{c}^{{commit}}").returncode == 0, (file, c)
        full_rule = _git("rev-parse", rule).stdout.strip()
        full_results = _git("rev-parse", results).stdout.strip()
        if timing == "unknown":
            assert full_rule == full_results, (file, key)
        elif timing == "before":
            assert full_rule != full_results and _is_ancestor(rule, results), (file, key)
        else:
            assert full_rule != full_results and _is_ancestor(results, rule), (file, key)
        # the results commit is the last that changed the numbers the rule judges
        path = f"benchmarks/results/{file}"
        later = _git("log", "--format=%H", f"{results}..HEAD", "--", path).stdout.split()
        at = json.loads(_git("show", f"{results}:{path}").stdout)
        changed = _git("show", f"{results}^:{path}")
        before = json.loads(changed.stdout) if changed.returncode == 0 else None
        assert _judged(at, keys) != _judged(before, keys), (file, key, "numbers unchanged at", results)
        for c in later:
            now = json.loads(_git("show", f"{c}:{path}").stdout)
            assert _judged(now, keys) == _judged(at, keys), (file, key, "numbers changed later in", c)


def test_no_docstring_says_fixed_before_for_a_rule_written_after(sc):
    scripts = set()
    for _, _, _, _, timing, where, _ in sc._claims.RULE_TIMING:
        if timing == "after":
            scripts |= set(re.findall(r"\b(bench_\w+)\.", where))
    assert {"bench_spex", "bench_wam", "bench_text_models", "bench_rfm_modular"} <= scripts
    for name in scripts:
        text = (ROOT / "benchmarks" / f"{name}.py").read_text(encoding="utf-8")
        doc = text.split('"""', 2)[1]
        assert not re.search(r"fixed\s+before\s+the\s+(first\s+)?run", doc), name
    for r in sc.collect():
        if r["rule_timing"] != "before":
            assert not re.search(r"fixed\s+before\s+the\s+run", r["protocol"]), (r["source"], r["claim"])


def test_write_results_stores_the_verdicts_of_a_fresh_run(tmp_path, benchmark_script):
    """A rerun of an older study (its script writes no "seed_claims" itself) gets its verdicts
    stored by ``_common.write_results``; a file the table does not know is left as written."""
    common = benchmark_script("_common")
    doc = _doc("grokking.json")
    doc.pop("seed_claims")
    common.write_results(tmp_path, "grokking", "# grokking\n", doc)
    stored = json.loads((tmp_path / "grokking.json").read_text())["seed_claims"]
    assert [s["verdict"] for s in stored] == [s["verdict"] for s in _doc("grokking.json")["seed_claims"]]
    common.write_results(tmp_path, "grokking_quick", "# quick\n", doc)
    assert "seed_claims" not in json.loads((tmp_path / "grokking_quick.json").read_text())
