"""Write the documentation pages that are read from the code and the results, not written by hand.

Run by ``conf.py`` each time Sphinx starts (``make docs`` and ``tests/test_docs_build.py``), or
alone as ``python docs/_generate.py``. Everything goes under ``docs/generated/`` (ignored by git):

* ``generated/explainers/<name>.rst``: one page per registered explainer (``fl.list_explainers()``),
  from its class: the docstring (what it computes, the formula, the paper), ``requires``, the
  constructor's parameters with their defaults, and a call;
* ``generated/explainers.rst``: the index of those pages;
* ``generated/metrics.rst``: the table of ``fl.metrics.list_metrics()`` (family, direction,
  requirements, Quantus's counterpart) and an autosummary of every metric function;
* ``generated/which_explainer.rst``: the "Which explainer should I use?" table, from ``requires``;
* ``generated/cli.rst``: the ``--help`` of ``featurelens`` and of every command, from the parsers;
* ``generated/benchmarks.rst`` and ``generated/benchmarks/<name>.rst``: one page per ``benchmarks/results/<name>.json`` (its
  environment and every table of rows in it), with the figures that sit beside it, and the
  summary the benchmark wrote beside it, ``benchmarks/results/<name>.md`` (its tables and the
  reading written after the run), rendered by MyST;
* ``generated/headlines/*.txt``: Markdown snippets that ``results.md`` includes (it holds no number
  of its own): the headline tables of the comparisons with Captum, shap, shapiq, Quantus, xrfm
  (``<name>.txt``, from ``benchmarks/results/<name>.json``), the seed claims decided by each
  results file with their verdicts (``<name>.verdicts.txt``) and the verdict counts
  (``claims.txt``);
* ``generated/quantus.txt``: the table of Quantus classes and their featurelens functions, from
  the metric specs' ``quantus`` field (included by ``guides/quantus.md``).

The snippets are ``.txt``, not ``.md``: Sphinx would read a ``.md`` under ``docs/`` as a page.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "generated")
RESULTS = os.path.join(ROOT, "benchmarks", "results")


def _write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` only when it changed (Sphinx then rebuilds only what changed)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _title(text: str, char: str = "=") -> str:
    return f"{text}\n{char * len(text)}\n"


def _plain(value) -> str:
    """A value as one line of plain text: numbers to 4 significant digits, lists joined (the first 8
    and the count), no line breaks or bars."""
    if isinstance(value, bool) or value is None:
        text = str(value)
    elif isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, (list, tuple)):
        shown = [_plain(v) for v in value[:8]]
        text = ", ".join(shown) + (f", ... ({len(value)} values)" if len(value) > 8 else "")
    elif isinstance(value, dict):
        text = "; ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    else:
        text = str(value)
    return " ".join(text.split()).replace("|", "/").replace("\\", "/")


def _cell(value) -> str:
    """One table cell: :func:`_plain` text, escaped so rst reads it as text, not markup (a word
    ending in "_", such as the key pattern "speedup_bound_.*", would be a reference, "*" emphasis)."""
    text = re.sub(r"(?<=\w)_(?=\W|$)", r"\\_", _plain(value)).replace("*", "\\*")
    return text or " "


def _list_table(header: list[str], rows: list[list[str]], widths: str | None = None) -> str:
    """An rst ``list-table`` (cells may hold inline markup)."""
    lines = [".. list-table::", "   :header-rows: 1", "   :class: fl-table"]
    if widths:
        lines.append(f"   :widths: {widths}")
    lines.append("")
    for row in [header] + rows:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {c}" for c in row[1:])
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------ explainers

#: How each kind of explainer is called in the generated example line.
def _example(name: str, cls) -> str:
    req = cls.requires
    layer = type(req).__name__ == "NamedLayerRequires"
    if req.estimators:
        return (f'e = fl.explainer("{name}", gbc).explain(X_test, target=1)   # gbc: a fitted GradientBoostingClassifier\n'
                "fl.plots.beeswarm(e)")
    args = ["model"]
    if layer:
        args.append('layer="features.3"')
    if name.startswith("neuron_"):
        args.append("neuron=0")
    if req.data:
        args.append("data=X_train")
    if name in ("kernel_shap", "permutation_shap", "exact_shapley", "minshap", "lime", "spex",
                "deeplift_shap", "gradient_shap", "layer_deeplift_shap", "feature_ablation"):
        args.append("background=X_train[:50]" if name not in ("feature_ablation", "lime") else "baseline=0.0")
    if name in ("kernel_shap", "permutation_shap", "lime", "spex", "gradient_shap", "smoothgrad", "random"):
        args.append("seed=0")
    call = f'e = fl.explainer("{name}", {", ".join(args)}).explain(x, target=y)'
    return call + "\ne.values.shape   # shaped like x (a layer's output for layer methods)\ne.plot(inputs=x)"


def _requires_rows(req) -> list[tuple[str, str]]:
    rows = []
    for field in ("gradients", "conv_layer", "channel_axis", "data", "max_players", "package", "estimators", "hooks"):
        rows.append((field, _cell(getattr(req, field, None))))
    if type(req).__name__ == "NamedLayerRequires":
        rows.append(("layer", "a named layer (``layer=``)"))
    return rows


def _explainer_page(name: str, cls) -> str:
    path = f"{cls.__module__}.{cls.__qualname__}"
    sig = inspect.signature(cls.__init__)
    params = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind is p.VAR_KEYWORD:
            params.append([f"``**{p.name}``", "(more keywords)"])
        elif p.kind is p.VAR_POSITIONAL:
            params.append([f"``*{p.name}``", " "])
        else:
            default = "(required)" if p.default is p.empty else f"``{p.default!r}``"
            params.append([f"``{p.name}``", default])
    out = [f".. _explainer-{name}:\n", _title(f"{name}"), "",
           f"``fl.explainer(\"{name}\", model, ...)`` builds :class:`{path}`.", "",
           f".. autoclass:: {path}", "",
           _title("Where it applies (``requires``)", "-"),
           _list_table(["field", "value"], [list(r) for r in _requires_rows(cls.requires)]),
           f"Audit default: ``{getattr(cls, 'audit_default', None)}``; units it explains "
           f"(``outputs``): ``{_cell(getattr(cls, 'outputs', None))}``.", "",
           _title("Parameters", "-"),
           _list_table(["parameter", "default"], params) if params else "None.\n",
           _title("Example", "-"),
           ".. code-block:: python\n",
           textwrap.indent("import featurelens as fl\n" + _example(name, cls), "   "), ""]
    return "\n".join(out)


def explainers() -> None:
    import featurelens as fl
    from featurelens.explainers import explainer_class

    names = fl.list_explainers()
    rows = []
    for name in names:
        cls = explainer_class(name)
        _write(os.path.join(OUT, "explainers", f"{name}.rst"), _explainer_page(name, cls))
        first = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()).rstrip(":") + ""
        rows.append([f":doc:`{name} <explainers/{name}>`", first or " "])
    text = [_title("Explainers"), "",
            f"The {len(names)} registered explainers (``fl.list_explainers()``), one page each, generated "
            "from the class registered under the name: its docstring, ``requires``, its parameters and a call.", "",
            ".. toctree::", "   :hidden:", ""]
    text += [f"   explainers/{n}" for n in names]
    text += ["", _list_table(["name", "what it computes"], rows, "25 75")]
    _write(os.path.join(OUT, "explainers.rst"), "\n".join(text))


#: The code block of "Which explainer should I use?" (run by tests/test_docs_guides.py).
WHICH_CODE = """\
import torch

import featurelens as fl
from featurelens.explainers import explainer_class

mlp = fl.Model(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 2)))
print(explainer_class("gradcam").requires.why_not(mlp, (1, 8, 8)))   # needs a convolutional layer ...
assert explainer_class("saliency").requires.why_not(mlp, (1, 8, 8)) is None
applicable = [n for n in fl.list_explainers() if explainer_class(n).requires.why_not(mlp, (1, 8, 8)) is None]
"""


def which_explainer() -> None:
    import featurelens as fl
    from featurelens.explainers import explainer_class

    rows = []
    for name in fl.list_explainers():
        req = explainer_class(name).requires
        layer = type(req).__name__ == "NamedLayerRequires"
        if req.estimators:
            model = "fitted trees (scikit-learn, LightGBM, XGBoost)"
        elif req.gradients:
            model = "torch module (gradients)"
        else:
            model = "any model or callable (black box)"
        needs = []
        if req.conv_layer:
            needs.append("a convolutional layer")
        if layer:
            needs.append("a named layer")
        if req.channel_axis:
            needs.append("images with a channel axis")
        if req.data:
            needs.append("data (``data=`` or a precomputed AGOP)")
        if req.max_players:
            needs.append(f"at most {req.max_players} players")
        if req.hooks:
            needs.append("an eager module (hooks; not TorchScript)")
        text = "yes" if name in fl.text.TEXT_METHODS else " "
        rows.append([f":doc:`{name} <explainers/{name}>`", model, "; ".join(needs) or "nothing more", text])
    body = [_title("Which explainer should I use?"), "",
            "Generated from each explainer's ``requires`` (:class:`featurelens.explainers.Explainer`): the kind of "
            "model it needs, what else it needs, and whether ``fl.text`` runs it on words or tokens. "
            "``requires.why_not(model, input_shape)`` gives the reason an explainer does not apply, "
            "which the audit, the benchmark and the command line print when they skip one.", "",
            "In short: fitted trees, ``tree_shap`` (exact, fast); a torch network, the gradient family "
            "(``integrated_gradients`` when completeness matters, ``saliency`` / ``smoothgrad`` for speed, "
            "``gradcam`` on a CNN); any other model or a pipeline, ``kernel_shap`` or ``permutation_shap`` "
            "with a background; pairs and triples of features, ``spex``. When in doubt, let ``fl.audit`` "
            "score the applicable ones on your model (see :doc:`../guides/trust`).", "",
            _list_table(["explainer", "model", "needs", "text"], rows, "22 30 36 12"), "",
            ".. code-block:: python", "", textwrap.indent(WHICH_CODE, "   "), ""]
    _write(os.path.join(OUT, "which_explainer.rst"), "\n".join(body))


# --------------------------------------------------------------------------------------- metrics

def metrics() -> None:
    import featurelens.metrics as M

    rows = []
    for s in M.list_metrics():
        direction = {1: "higher is better", -1: "lower is better", 0: "neither (descriptive)"}[s.direction]
        call = f":func:`{s.function.__name__} <featurelens.metrics.{s.function.__name__}>`"
        rows.append([f"``{s.name}``", call, s.family, direction, _cell(sorted(s.requires)) if s.requires else "the map only",
                     f"``{s.quantus}``" if s.quantus else "(none)", _cell(s.reason)])
    funcs = [n for n in M.__all__ if callable(getattr(M, n)) and not isinstance(getattr(M, n), type)]
    body = [_title("Metrics"), "",
            ".. currentmodule:: featurelens.metrics", "",
            f"Every metric's spec (``fl.metrics.list_metrics()``, ``fl.metrics.spec(name)``): its family "
            f"(one of {', '.join('``%s``' % f for f in M.FAMILIES)}), its direction, what it needs and "
            "Quantus's counterpart. Generated from the specs.", "",
            _list_table(["spec", "function", "family", "direction", "needs", "Quantus", "what it measures"], rows,
                        "10 14 9 9 10 10 38"), "",
            _title("Functions and classes", "-"), "",
            ".. autosummary::", "   :toctree: api", "",
            *[f"   {n}" for n in M.__all__], ""]
    _write(os.path.join(OUT, "metrics.rst"), "\n".join(body))
    return funcs


# ------------------------------------------------------------------------------------------- CLI

def cli() -> None:
    import argparse

    from featurelens.cli import COMMANDS, build_parser

    parser = build_parser()
    os.environ.setdefault("COLUMNS", "100")
    body = [_title("Command line"), "",
            "``featurelens COMMAND`` (also ``python -m featurelens``). Generated from the argparse parsers "
            "(:func:`featurelens.cli.build_parser`): what ``--help`` prints.", "",
            ".. code-block:: text", "", textwrap.indent(parser.format_help(), "   "), ""]
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in COMMANDS:
        body += [_title(f"featurelens {name}", "-"), "", ".. code-block:: text", "",
                 textwrap.indent(subs.choices[name].format_help(), "   "), ""]
    _write(os.path.join(OUT, "cli.rst"), "\n".join(body))


# ------------------------------------------------------------------------------------ benchmarks

def _tables(obj, path: str = "") -> list[tuple[str, list[dict]]]:
    """Every list of dicts inside ``obj`` (a JSON document), with where it sits."""
    found = []
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        found.append((path or "rows", obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k != "environment":
                found += _tables(v, f"{path}.{k}" if path else k)
    return found


def _is_table(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(r, dict) for r in v)


def _scalars(obj: dict, prefix: str = "") -> list[list[str]]:
    """The settings, summaries and verdicts of a result file: every value that is not a table,
    nested dicts flattened to dotted keys (``verdicts.claim_1``)."""
    rows = []
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if key == "environment" or _is_table(v):
            continue
        if isinstance(v, dict):
            rows += _scalars(v, f"{key}.")
        else:
            rows.append([f"``{key}``", _cell(v)])
    return rows


def _heading(md: str, fallback: str) -> str:
    if os.path.exists(md):
        with open(md, encoding="utf-8") as f:
            for line in f:
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+[^`]*`+)")


def _summary(md: str) -> str:
    """``benchmarks/results/<name>.md`` made safe to include in its generated page: its first
    ``# `` heading left out (the page has the title), the other headings made bold paragraphs (a
    section level cannot be chosen inside an include), and ``<`` before a letter escaped outside
    code (``<bos>`` is text, not HTML). Code fences are left as they are."""
    out, fence, titled = [], False, False
    for line in md.splitlines():
        if _FENCE.match(line):
            fence = not fence
        elif not fence and line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            text = line[level:].strip()
            if level == 1 and not titled:
                titled = True
                continue
            line = f"**{text}**"
        elif not fence:
            line = "".join(p if k % 2 else re.sub(r"<(?=[A-Za-z/])", r"\\<", p)
                           for k, p in enumerate(_CODE_SPAN.split(line)))
        out.append(line)
    return "\n".join(out).strip() + "\n"


def benchmarks() -> None:
    names = sorted(f[:-5] for f in os.listdir(RESULTS) if f.endswith(".json"))
    pages = os.path.join(OUT, "benchmarks")
    os.makedirs(pages, exist_ok=True)
    index = [_title("Benchmarks and case studies"), "",
             "One page per ``benchmarks/results/*.json``, generated from the file (``make bench`` writes "
             "them; the numbers below are the file's, to 4 significant digits). Each page lists the "
             "machine it ran on and every table of rows in the file.", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    for name in names:
        with open(os.path.join(RESULTS, f"{name}.json"), encoding="utf-8") as f:
            doc = json.load(f)
        title = _heading(os.path.join(RESULTS, f"{name}.md"), name)
        body = [_title(title), "", f"Source: ``benchmarks/results/{name}.json``.", ""]
        md = os.path.join(RESULTS, f"{name}.md")
        if os.path.exists(md):
            with open(md, encoding="utf-8") as f:
                # not .md: Sphinx would read a .md file under docs/ as a page of its own
                _write(os.path.join(pages, f"{name}.summary.txt"), _summary(f.read()))
            body += [_title("Summary", "-"), "",
                     f"The summary ``benchmarks/results/{name}.md`` that the benchmark wrote beside the "
                     "file, with the reading written after the run.", "",
                     f".. include:: {name}.summary.txt", "   :parser: myst_parser.sphinx_", ""]
        if isinstance(doc, dict) and isinstance(doc.get("environment"), dict):
            body += [_title("Environment", "-"), _list_table(["field", "value"], [[f"``{k}``", _cell(v)] for k, v in doc["environment"].items()]), ""]
        if isinstance(doc, dict):
            scal = _scalars(doc)
            if scal:
                body += [_title("Settings, summaries and verdicts", "-"), _list_table(["field", "value"], scal), ""]
        for where, rows in _tables(doc):
            keys = []
            for r in rows:
                keys += [k for k in r if k not in keys and not isinstance(r[k], (dict, list)) or k in keys]
            keys = [k for k in dict.fromkeys(keys) if not all(isinstance(r.get(k), (dict, list)) for r in rows)]
            if not keys:
                continue
            body += [_title(f"``{where}``", "-"),
                     _list_table(keys, [[_cell(r.get(k, "")) for k in keys] for r in rows]), ""]
        for png in sorted(p for p in os.listdir(RESULTS) if p.startswith(name) and p.endswith(".png")):
            stem = png[:-4]
            if stem == name or stem[len(name)] == "_" and not os.path.exists(os.path.join(RESULTS, stem + ".json")):
                shutil.copyfile(os.path.join(RESULTS, png), os.path.join(pages, png))
                body += [f".. image:: {png}", "   :width: 640px", ""]
        _write(os.path.join(pages, f"{name}.rst"), "\n".join(body))
        index.append(f"   benchmarks/{name}")
    _write(os.path.join(OUT, "benchmarks.rst"), "\n".join(index) + "\n")


# ------------------------------------------------------------------------------ results headlines
#
# docs/results.md holds no number of its own: each of its sections includes a snippet written here
# from benchmarks/results/<name>.json (generated/headlines/<name>.txt, Markdown; not .md, which
# Sphinx would read as a page of its own), so a rerun of the benchmark changes the page with it.

HEADLINES = os.path.join(OUT, "headlines")


def _load(name: str):
    with open(os.path.join(RESULTS, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def _md(text) -> str:
    """Text for a Markdown table cell or list item: one line, markup characters escaped."""
    text = " ".join(str(text).split())
    for ch in ("\\", "*", "_", "`", "|", "<", ">", "[", "]", "$"):
        text = text.replace(ch, "\\" + ch)
    return text or " "


def _md_table(header: list[str], rows: list[list], align: str | None = None) -> str:
    align = align or "l" * len(header)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _r(x, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _e(x) -> str:
    return "–" if x is None else f"{x:.1e}"


def _range(values) -> str:
    values = sorted(v for v in values if v is not None)
    return _r(values[0]) if values[0] == values[-1] else f"{_r(values[0])}–{_r(values[-1])}"


def _headline_gradients(doc) -> str:
    rows = doc["rows"]
    at_or_below = sum(r["ratio_vs_captum_best"] <= 1 for r in rows)
    table = [[r["model"], r["method"], f"{_r(r['ratio_vs_captum_best'])} ({r['captum_best_setting']})",
              _r(r["ratio_vs_floor_best"]), _e(r["max_abs_diff"])] for r in rows]
    return (_md_table(["model", "method", "featurelens / Captum best (Captum's setting)", "featurelens / floor",
                       "max abs diff"], table, "llrrr")
            + f"\nAt or below Captum's fastest setting in {at_or_below} of {len(rows)} model x method pairs "
            f"(Captum {doc['environment'].get('captum', '?')}, torch {doc['environment'].get('torch', '?')}).\n")


def _headline_captum_families(doc) -> str:
    rows = doc["rows"]
    models = list(dict.fromkeys(r["model"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    ratio = {(r["model"], r["method"]): r["ratio_vs_captum_best"] for r in rows}
    table = [[m] + [_r(ratio.get((mod, m))) for mod in models] for m in methods]
    at_or_below = sum(r["ratio_vs_captum_best"] <= 1 for r in rows)
    return (_md_table(["method"] + [f"featurelens / Captum best, {m}" for m in models], table, "l" + "r" * len(models))
            + f"\nAt or below Captum's fastest setting in {at_or_below} of {len(rows)} model x method pairs "
            f"(Captum {doc['environment'].get('captum', '?')}).\n")


def _headline_shapley(doc) -> str:
    rows = [r for r in doc["rows"] if "BLAS" not in r["method"] and "batch_size" not in r["method"]]
    table = [[r["budget"], _md(r["method"]), f"{r['seconds_per_instance'] * 1e3:.1f}", _r(r["time_vs_shap_fastest"]),
              _r(r["mae_vs_shap_most_accurate"])] for r in rows]
    env = doc["environment"]
    return (_md_table(["budget", "method", "ms per instance", "time / shap's fastest", "mean abs error / shap's most accurate"],
                      table, "rlrrr")
            + f"\nshap {env.get('shap', '?')}, shapiq {env.get('shapiq', '?')}; the errors are against the exact "
            "Shapley values of the same game. The settings of each library (thread counts, batch sizes) are on the page.\n")


def _headline_spex(doc) -> str:
    groups: dict = {}
    for r in doc["rows"]:
        if r.get("status") != "ok":
            continue
        g = groups.setdefault((r["n"], r["n_terms"], r["noise"]), {})
        if r["method"].startswith("shapiq"):
            g["shapiq"] = r
        elif r.get("budget") is not None and "featurelens" not in g:
            g["featurelens"] = r
    table = []
    for (n, terms, noise), g in groups.items():
        fl_, sq = g.get("featurelens"), g.get("shapiq")
        if not fl_ or not sq:
            continue
        table.append([n, terms, noise, fl_["queries"], f"{fl_['decode_s']:.2f}", f"{sq['decode_s']:.2f}",
                      f"{sq['decode_s'] / fl_['decode_s']:.0f}x", f"{fl_['recovered']:.2f} / {sq['recovered']:.2f}",
                      f"{fl_['spurious']} / {sq['spurious']}"])
    return (_md_table(["n", "planted terms", "noise", "queries", "featurelens decode s", "shapiq decode s",
                       "shapiq / featurelens", "recovered (featurelens / shapiq)", "spurious terms"], table, "rrrrrrrrr")
            + f"\nshapiq {doc['environment'].get('shapiq', '?')}, at the same budget and the same queries.\n")


def _headline_tree(doc) -> str:
    def cells(rows):
        return f"{_range(r['ratio'] for r in rows)} ({len(rows)} cells)" if rows else "–"

    table = []
    for model in dict.fromkeys(r["model"] for r in doc["values"]):
        values = [r for r in doc["values"] if r["model"] == model]
        inter = [r for r in doc.get("interactions", []) if r["model"] == model]
        iv = next((r["interventional"] for r in doc.get("extras", []) if r["model"] == model), None)
        table.append([_md(model), cells(values), cells(inter), _r(iv and iv["ratio"]),
                      _e(max(r["max_abs_diff"] for r in values))])
    grid = doc["grid"]
    text = _md_table(["model", "featurelens / shap, values", "interaction values", "interventional",
                      "max abs diff"], table, "lrrrr")
    text += (f"\nRatios over {', '.join(f'{n:,}' for n in grid['rows'])} rows x "
             f"{', '.join(str(t) for t in grid['trees'])} trees, one call on a built explainer each "
             f"(Explanation against shap's Explanation); shap {doc['environment'].get('shap', '?')}"
             + ("; XGBoost's differences are those of XGBoost's own float32 sums, which shap returns"
                if any(r["model"] == "XGBoost" for r in doc["values"]) else "") + ".\n")
    fresh = doc.get("fresh_process")
    if fresh:
        text += (f"\nA fresh process that imports featurelens, builds the README's tree explainer and "
                 f"explains 100 rows: {fresh['best_s']:.2f} s (median {fresh['median_s']:.2f} s; load "
                 f"average {fresh['load_average']}).\n")
    return text


def _headline_metrics(doc) -> str:
    rows = [r for r in doc["rows"] if r.get("ratio")]
    rows.sort(key=lambda r: r["ratio"])
    ratios = [r["ratio"] for r in rows]
    median = ratios[len(ratios) // 2] if len(ratios) % 2 else (ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2
    return (f"{len(rows)} metrics timed against Quantus {doc['environment'].get('quantus', '?')}: Quantus's time over "
            f"featurelens's is {ratios[0]:.1f}x ({_md(rows[0]['metric'])}) to {ratios[-1]:.0f}x "
            f"({_md(rows[-1]['metric'])}), median {median:.1f}x; at least 5x for {sum(x >= 5 for x in ratios)} of "
            f"{len(rows)}.\n")


def _headline_agop(doc) -> str:
    table = [[_md(r["case"]), f"{r['speedup_vs_loop']:.1f}x", f"{r['speedup_bound_loop_over_floor']:.1f}x",
              _r(r["ratio_vs_floor"])] for r in doc["rows"]]
    return _md_table(["AGOP", "speed-up over the fastest per-sample loop", "bound (loop / floor)",
                      "featurelens / floor"], table, "lrrr")


def _headline_cka(doc) -> str:
    table = [[_md(r["case"]), f"{r['speedup_vs_gram_numpy']:.1f}x" if r.get("speedup_vs_gram_numpy") else "–",
              f"{r['featurelens_peak_mib']:.0f} / {r['gram_numpy_peak_mib']:.0f}", _e(r.get("max_abs_diff_vs_gram"))]
             for r in doc["rows"]]
    return _md_table(["case", "speed-up over n x n Gram matrices", "peak MiB (featurelens / Gram)", "max abs diff"],
                     table, "lrrr")


def _headline_rfm(doc) -> str:
    table = [[_md(k), _r(v.get("time_ratio_featurelens_over_xrfm")), _e(v.get("score_difference_featurelens_minus_xrfm"))]
             for k, v in doc.get("comparisons", {}).items()]
    return (_md_table(["comparison", "fit time featurelens / xrfm", "test score difference"], table, "lrr")
            + f"\nxrfm {doc['environment'].get('xrfm', '?')}.\n")


def _headline_claims(rows, counts, claims=None) -> str:
    """The verdict counts by family, one per claim of a seed paper (``claims``: seed_claims.claims;
    without it, one per row)."""
    items = [c for c in claims if c.get("section", "seed") == "seed"] if claims is not None else rows
    families = list(dict.fromkeys(r["family"] for r in items))
    keys = list(counts)
    table = [[_md(f)] + [sum(r["family"] == f and r["verdict"] == k for r in items) for k in keys] for f in families]
    table.append(["**all**"] + [f"**{counts[k]}**" for k in keys])
    return _md_table(["family"] + keys, table, "l" + "r" * len(keys))


def _verdicts(rows, overall=None) -> str:
    """The claims a results file decides; a protocol variant of a claim run under several protocols
    says so, with the claim's one verdict (``overall``: claim id -> (verdict, number of variants))."""
    if not rows:
        return "No seed-paper claim is read from this file; its page has the numbers.\n"
    overall = overall or {}
    out = []
    for r in rows:
        note = ""
        verdict, n = overall.get(r.get("claim_id"), (r["verdict"], 1))
        if n > 1:
            note = f" (one of {n} protocols; the claim's verdict: {_md(verdict)})"
        if r.get("section", "seed") != "seed":
            note += " (an identity, not a seed paper's claim)" if r["section"] == "identity" else \
                " (featurelens' own claim, not a seed paper's)"
        out.append(f"- **{_md(r['verdict'])}**: {_md(r['method'])}: {_md(r['claim'])}{note}\n")
    return "".join(out)


#: The headline snippets: generated/headlines/<name>.txt from benchmarks/results/<name>.json.
HEADLINE_WRITERS = {
    "gradients": _headline_gradients, "captum_families": _headline_captum_families, "shapley": _headline_shapley,
    "spex": _headline_spex, "tree": _headline_tree, "metrics": _headline_metrics, "agop": _headline_agop,
    "cka": _headline_cka, "rfm": _headline_rfm,
}


def headlines() -> None:
    """``generated/headlines/<name>.txt`` (the headline numbers of the comparisons with the reference
    libraries), ``generated/headlines/<name>.verdicts.txt`` for every results file (the seed claims
    it decides, with their verdicts) and ``generated/headlines/claims.txt`` (the verdict counts)."""
    for name, write in HEADLINE_WRITERS.items():
        if os.path.exists(os.path.join(RESULTS, f"{name}.json")):
            _write(os.path.join(HEADLINES, f"{name}.txt"), write(_load(name)))
    mod = __import__("_seed_claims")._module()
    rows = mod.collect(RESULTS)
    _write(os.path.join(HEADLINES, "claims.txt"), _headline_claims(rows, mod.counts(rows), mod.claims(rows)))
    overall = {c["claim_id"]: (c["verdict"], len(c["variants"])) for c in mod.claims(rows)}
    for f in sorted(os.listdir(RESULTS)):
        if f.endswith(".json"):
            mine = [r for r in rows if os.path.basename(r.get("source", "")) == f]
            _write(os.path.join(HEADLINES, f"{f[:-5]}.verdicts.txt"), _verdicts(mine, overall))


#: What differs from Quantus's counterpart, by spec name (hand-written: the definitions' fine print;
#: the rows themselves come from the specs). A name that is not a spec fails the build.
QUANTUS_NOTES = {
    "deletion": '`baseline="min"` is Quantus\'s "black"; `insertion_curve` is the same curve inserting',
    "faithfulness_correlation": '`baseline="min"` is Quantus\'s "black"',
    "irof": "takes your segments (`groups=`); no `np.trapz`",
    "sensitivity_n": "one correlation per sample (Quantus: one per step, across the batch)",
    "monotonicity": "inserts features, as the paper (Quantus's default never does)",
    "sufficiency": "NaN without a neighbour (Quantus: 0)",
    "consistency": "NaN without a neighbour (Quantus: 0); `discretise=\"first_k_sign\"` is Quantus's `top_n_sign`",
    "max_sensitivity": "`radius=0.2, relative=False` is Quantus's U(-0.2, 0.2) noise",
    "avg_sensitivity": "`radius=0.2, relative=False` is Quantus's U(-0.2, 0.2) noise",
    "relative_input_stability": "symmetric noise; a draw that changes the class is left out (Quantus: the whole sample turns NaN)",
    "relative_output_stability": "symmetric noise; a draw that changes the class is left out (Quantus: the whole sample turns NaN)",
    "model_randomization": "the randomised models are deep copies: yours is never changed",
    "efficient_mprt": "the randomised models are deep copies: yours is never changed",
    "smooth_mprt": "the randomised models are deep copies: yours is never changed",
    "pointing_game": "an empty mask gives NaN",
    "attribution_localisation": "an empty mask gives NaN",
    "top_k_intersection": "an empty mask gives NaN",
    "auc": "an empty mask gives NaN",
    "focus": "an empty mask gives NaN; `focus_mosaics` builds the mosaics",
    "completeness": "the signed gap (Quantus: an exact float equality)",
    "input_invariance": "the shift reaches every pixel",
}

#: Metrics with a Quantus class of a similar name that no parity test compares them with.
QUANTUS_OTHER = {
    "infidelity": "Quantus's `Infidelity` removes square patches one after the other (no noise), a different "
                  "quantity; this is the estimator of Captum's `infidelity`",
    "local_lipschitz": "Quantus's `LocalLipschitzEstimate` uses Gaussian noise and max-normalised maps",
    "relative_representation_stability": "Quantus has `RelativeRepresentationStability`; no parity test compares "
                                         "the two",
}


def quantus_table() -> None:
    """``generated/quantus.txt`` (Markdown, included by ``guides/quantus.md``): every metric spec
    with a Quantus counterpart (``MetricSpec.quantus``, the class its parity test compares it
    with), and the metrics without one."""
    import featurelens.metrics as M

    specs = M.list_metrics()
    known = {s.name for s in specs}
    unknown = (set(QUANTUS_NOTES) | set(QUANTUS_OTHER)) - known
    if unknown:
        raise ValueError(f"docs/_generate.py: QUANTUS_NOTES / QUANTUS_OTHER name no metric spec: {sorted(unknown)}")

    def func(s):
        return f"{{func}}`~featurelens.metrics.{s.function.__name__}`"

    rows = [[s.quantus, func(s), s.family, QUANTUS_NOTES.get(s.name, " ")] for s in specs if s.quantus]
    none = [s for s in specs if not s.quantus]
    text = ["Generated from the metric specs (`fl.metrics.list_metrics()`): the Quantus class that each "
            "function's parity test under `tests/metrics/` compares it with (`MetricSpec.quantus`).", "",
            _md_table(["Quantus", "featurelens", "family", "what differs"], rows), "",
            "Without a Quantus counterpart (no parity test):", ""]
    text += [f"- {func(s)} ({s.family})" + (f": {QUANTUS_OTHER[s.name]}" if s.name in QUANTUS_OTHER else "")
             for s in none]
    _write(os.path.join(OUT, "quantus.txt"), "\n".join(text) + "\n")


def main() -> None:
    # autosummary writes generated/api/ and never removes a page: start from none, so that a name
    # that left an __all__ leaves the site too
    shutil.rmtree(os.path.join(OUT, "api"), ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    explainers()
    which_explainer()
    metrics()
    quantus_table()
    cli()
    benchmarks()
    __import__("_seed_claims").seed_claims(OUT)   # generated/seed_claims.rst
    headlines()


if __name__ == "__main__":
    main()
