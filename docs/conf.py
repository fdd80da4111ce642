"""Sphinx configuration for the featurelens documentation site.

Built offline: no intersphinx (other projects' inventories need the network), no binder. The
pages that list the registries (one per explainer, the metric table, the CLI, the benchmark pages,
"Which explainer should I use?") are written by ``_generate.py`` each time Sphinx starts, so they
cannot drift from the code or from ``benchmarks/results/*.json``.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import featurelens  # noqa: E402
import _generate  # noqa: E402

_generate.main()

project = "featurelens"
copyright = "featurelens authors"
release = featurelens.__version__ if hasattr(featurelens, "__version__") else ""
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "**.zip"]

autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False
autodoc_default_options = {"members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

# A few modules write Google-style "Args:" sections; napoleon reads those, numpydoc the rest.
napoleon_google_docstring = True
napoleon_numpy_docstring = False

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
}

# Every cross-reference must resolve (``-n``; ``make docs`` and tests/test_docs_build.py build with
# ``-W``). Without intersphinx the other projects' names (numpy, torch, scikit-learn, ...: in
# signatures and base classes: numpy.ndarray, torch.nn.Module, sklearn.base.BaseEstimator, ...) have
# no target; they are listed here by package, so that any other unresolved name still fails.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|torch|sklearn|scipy|pandas|matplotlib)(\..*)?"),
]
# Two references in files being edited elsewhere at the time of writing; to go once their
# docstrings say :func:`~featurelens.approximators.check_memory` and ``combine_pvalues`` (a
# module function without a page).
nitpick_ignore: list = []

html_theme = "pydata_sphinx_theme"
html_title = "featurelens"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
html_show_sourcelink = False
html_copy_source = False


_LITERAL = re.compile(r"(``.+?``|`[^`]*`)")
_TRAILING = re.compile(r"(?<![\w`])(\w+)_(?![\w`])")


def _escape_bars(app, what, name, obj, options, lines):
    """Make the docstrings' plain-text habits valid reST, for the rendering only (the docstrings
    stay as they are): ``|a|`` (an absolute value, which reST reads as a substitution) and
    ``coef_`` (a reference, for reST) are escaped outside inline literals and roles; an inline
    literal broken across two lines (numpydoc re-indents field bodies) is joined; a ``::`` that
    numpydoc separated from its indented block becomes ``:``. Tables (lines starting with ``|`` or
    ``+``) are left alone."""
    i = 0
    while i < len(lines) - 1:
        if lines[i].count("``") % 2 and lines[i + 1].count("``") % 2:
            lines[i : i + 2] = [lines[i].rstrip() + " " + lines[i + 1].strip()]
        i += 1
    for i, line in enumerate(lines):
        if line.rstrip().endswith("::"):
            nxt = next((l for l in lines[i + 1 :] if l.strip()), "")
            indent = len(line) - len(line.lstrip())
            if len(nxt) - len(nxt.lstrip()) <= indent:
                lines[i] = line.rstrip()[:-1]
        if line.lstrip()[:1] in ("|", "+"):
            continue
        parts = _LITERAL.split(lines[i])
        lines[i] = "".join(p if k % 2 else _TRAILING.sub(r"\1\\_", p.replace("|", "\\|")) for k, p in enumerate(parts))


def _public_alias(cls):
    """True when ``cls`` is a public featurelens name: no private part in its module path and
    name, or re-exported under the same name by the public package above its private module."""
    parts = cls.__module__.split(".")
    if cls.__name__.startswith("_"):
        return False
    if not any(p.startswith("_") for p in parts):
        return True
    public = ".".join(p for p in parts if not p.startswith("_"))
    return getattr(sys.modules.get(public), cls.__name__, None) is cls


def _public_bases(app, name, obj, options, bases):
    """For ``:show-inheritance:``: a private base class that no public module exports (it has no
    page to link to, e.g. ``featurelens.selection._base.ScoreSelector``) is replaced by its own
    bases, recursively, so the "Bases" line names only classes with a page (or another package's
    classes), and ``object`` when nothing else is left. Only the rendering changes."""
    out = []

    def add(cls):
        if cls is object or cls in out:
            return
        ours = isinstance(cls, type) and cls.__module__.startswith("featurelens")
        if not ours or _public_alias(cls):
            out.append(cls)
        else:
            for base in cls.__bases__:
                add(base)

    for base in bases:
        add(base)
    bases[:] = out or [object]


def setup(app):
    app.connect("autodoc-process-docstring", _escape_bars, priority=900)
    app.connect("autodoc-process-bases", _public_bases)
