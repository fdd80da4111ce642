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
  reading written after the run), rendered by MyST.
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


def _cell(value) -> str:
    """One table cell: numbers to 4 significant digits, lists joined (the first 8 and the count),
    no line breaks or bars."""
    if isinstance(value, bool) or value is None:
        text = str(value)
    elif isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, (list, tuple)):
        shown = [_cell(v) for v in value[:8]]
        text = ", ".join(shown) + (f", ... ({len(value)} values)" if len(value) > 8 else "")
    elif isinstance(value, dict):
        text = "; ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    else:
        text = str(value)
    text = " ".join(text.split())
    return text.replace("|", "/").replace("\\", "/") or " "


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


def main() -> None:
    # autosummary writes generated/api/ and never removes a page: start from none, so that a name
    # that left an __all__ leaves the site too
    shutil.rmtree(os.path.join(OUT, "api"), ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    explainers()
    which_explainer()
    metrics()
    cli()
    benchmarks()
    __import__("_seed_claims").seed_claims(OUT)   # generated/seed_claims.rst


if __name__ == "__main__":
    main()
