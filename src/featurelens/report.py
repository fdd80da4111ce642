"""The one home of report writing, shared by the benchmark, the audit and ``diagnose``.

- :class:`HTMLReport` builds one self-contained page from headings, paragraphs, tables and PNG
  figures (inline CSS, figures embedded as base64), so that ``index.html`` can be moved or mailed
  on its own. Every piece of text is HTML-escaped; only :meth:`HTMLReport.add_html` inserts markup.
- :func:`write_json`: results as strict JSON through the one conversion,
  :func:`featurelens._serialization.to_jsonable` (numpy scalars and small arrays to numbers and
  lists, NaN and inf to null).
- :func:`check_out` and :func:`report_folder`: safe report folders. ``--out`` is checked before
  any work starts; the report is built in a temporary folder beside the target and moved into
  place at the end, so an interrupted run leaves either the old report or the new one, never a
  mix; a folder that holds files and is not a report of the same command is refused unless
  ``overwrite=True``. :func:`check_out_file` / :func:`replace_file` do the same for one file.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass

import numpy as np

from ._serialization import to_jsonable, usual_permissions

__all__ = [
    "HTMLReport", "Cell", "jsonable", "write_json", "OutError", "check_out", "report_folder",
    "check_out_file", "replace_file", "MARKER", "png_data_uri",
]

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
p.meta { color: #666; font-size: 0.9em; margin-top: 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em 0; font-size: 0.86em; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.55em; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; text-align: center; }
td.text, th.text { text-align: left; }
td.na { color: #999; text-align: center; }
.best { background: #dff0d8; font-weight: bold; }
span.best { padding: 0 0.15em; }
.small { color: #666; font-size: 0.85em; }
figure { margin: 1em 0 2em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
dl.settings { display: grid; grid-template-columns: max-content auto; gap: 0.15em 1em; font-size: 0.9em; }
dl.settings dt { font-weight: bold; }
dl.settings dd { margin: 0; }
"""


@dataclass
class Cell:
    """A table cell: ``text`` (escaped), or ``html`` (trusted markup built by this module),
    CSS ``classes`` and a ``colspan``."""

    text: str = ""
    classes: str = ""
    colspan: int = 1
    html: str | None = None

    def render(self, tag: str = "td") -> str:
        attrs = ""
        if self.classes:
            attrs += f' class="{html.escape(self.classes)}"'
        if self.colspan > 1:
            attrs += f' colspan="{int(self.colspan)}"'
        body = self.html if self.html is not None else html.escape(str(self.text))
        return f"<{tag}{attrs}>{body}</{tag}>"


def _as_cell(value) -> Cell:
    return value if isinstance(value, Cell) else Cell(str(value))


def png_data_uri(png) -> str:
    """PNG bytes as a ``data:image/png;base64,...`` URI, for an ``<img src=...>`` that keeps a page
    self-contained (the bytes themselves: :func:`featurelens.plots._png.figure_png`)."""
    return "data:image/png;base64," + base64.b64encode(bytes(png)).decode("ascii")


class HTMLReport:
    """A single self-contained HTML page, built section by section.

    >>> page = HTMLReport("My report")
    >>> page.add_heading("Results")
    >>> page.add_table([["method", "score"]], [["saliency", "0.81"]])
    >>> page.save("index.html")
    """

    def __init__(self, title: str, subtitle: str | None = None):
        self.title = str(title)
        self.subtitle = subtitle
        self.parts: list[str] = []
        self.n_images = 0

    def add_heading(self, text: str, level: int = 2) -> "HTMLReport":
        level = min(max(int(level), 2), 4)
        self.parts.append(f"<h{level}>{html.escape(str(text))}</h{level}>")
        return self

    def add_paragraph(self, text: str, classes: str = "") -> "HTMLReport":
        cls = f' class="{html.escape(classes)}"' if classes else ""
        self.parts.append(f"<p{cls}>{html.escape(str(text))}</p>")
        return self

    def add_list(self, items) -> "HTMLReport":
        body = "".join(f"<li>{html.escape(str(i))}</li>" for i in items)
        self.parts.append(f"<ul>{body}</ul>")
        return self

    def add_definitions(self, pairs) -> "HTMLReport":
        """A two-column list of (term, value) pairs."""
        body = "".join(
            f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(str(v))}</dd>" for k, v in pairs
        )
        self.parts.append(f'<dl class="settings">{body}</dl>')
        return self

    def add_html(self, markup: str) -> "HTMLReport":
        """Insert trusted markup as is (never pass user text here; use the other methods)."""
        self.parts.append(markup)
        return self

    def add_table(self, header_rows, rows, caption: str | None = None) -> "HTMLReport":
        """A table. ``header_rows``: a list of header rows; ``rows``: a list of body rows; each cell
        is a string/number (escaped) or a :class:`Cell`. The first column is left-aligned."""
        out = ['<div class="scroll"><table>']
        if caption:
            out.append(f"<caption>{html.escape(caption)}</caption>")
        out.append("<thead>")
        for hr in header_rows:
            out.append("<tr>" + "".join(_as_cell(c).render("th") for c in hr) + "</tr>")
        out.append("</thead><tbody>")
        for row in rows:
            cells = [_as_cell(c) for c in row]
            if cells and not cells[0].classes:
                cells[0] = Cell(cells[0].text, "text", cells[0].colspan, cells[0].html)
            out.append("<tr>" + "".join(c.render("td") for c in cells) + "</tr>")
        out.append("</tbody></table></div>")
        self.parts.append("".join(out))
        return self

    def add_image(self, png: bytes, alt: str, caption: str | None = None) -> "HTMLReport":
        """Embed PNG bytes as a base64 data URI (the page stays self-contained)."""
        if not isinstance(png, (bytes, bytearray)) or not bytes(png[:8]) == b"\x89PNG\r\n\x1a\n":
            raise ValueError("png must be the bytes of a PNG image")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self.parts.append(f'<figure><img src="{png_data_uri(png)}" alt="{html.escape(alt)}">{cap}</figure>')
        self.n_images += 1
        return self

    def render(self) -> str:
        sub = f'<p class="meta">{html.escape(self.subtitle)}</p>' if self.subtitle else ""
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(self.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(self.title)}</h1>\n{sub}\n" + "\n".join(self.parts) + "\n</body>\n</html>\n"
        )

    def save(self, path) -> str:
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.render())
        return path



# ------------------------------------------------------------------------------------------------
# JSON


def write_json(path, doc, indent: int = 1) -> None:
    """Write ``to_jsonable(doc)`` (the one JSON conversion, :mod:`featurelens._serialization`) to
    ``path`` as strict JSON (no NaN)."""
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        json.dump(to_jsonable(doc), f, indent=indent, allow_nan=False)


# ------------------------------------------------------------------------------------------------
# safe report folders

#: The file that marks a folder as a featurelens report: JSON ``{"command": ..., "files": [...]}``.
MARKER = ".featurelens-report.json"


class OutError(ValueError):
    """A report destination (``out=``, ``--out``) that cannot be used; raised before any work."""


def _read_marker(folder: str) -> dict | None:
    try:
        with open(os.path.join(folder, MARKER), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("command"), str) or not isinstance(doc.get("files"), list):
        return None
    return doc


def _probe_writable(folder: str, what: str) -> None:
    """Create and remove a folder in ``folder``: the one reliable test (``os.access`` says yes to
    root on read-only mounts and /proc)."""
    try:
        probe = tempfile.mkdtemp(prefix=".featurelens-probe-", dir=folder)
    except OSError as err:
        raise OutError(f"{what}: cannot write in {folder!r} ({err.strerror or err})") from None
    os.rmdir(probe)


def _nearest_existing(path: str) -> str:
    parent = path
    while not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    return parent


def _check_path(out, name: str) -> str:
    if isinstance(out, bytes) or not isinstance(out, (str, os.PathLike)):
        raise OutError(f"{name} must be a path (str or os.PathLike); got {type(out).__name__} {out!r}")
    text = os.fspath(out)
    if not isinstance(text, str) or not text.strip():
        raise OutError(f"{name} is empty; expected a path such as featurelens-report")
    if "\x00" in text:
        raise OutError(f"{name} contains a NUL character; got {text!r}")
    return os.path.abspath(text)


def check_out(out, command: str, overwrite: bool = False, name: str = "out") -> str:
    """Check the report folder ``out`` of ``command`` before any work; returns its absolute path.

    Refused with :class:`OutError`: an empty or non-path value; an existing file; a place where
    nothing can be written (a parent that is a file, a read-only folder); and, unless
    ``overwrite=True``, an existing folder that holds files and is not a report of ``command``
    (no marker file, a report of another command, or files the report did not write). An empty
    folder, or an earlier report of the same command, is written over.
    """
    path = _check_path(out, name)
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be True or False; got {overwrite!r}")
    if os.path.exists(path) and not os.path.isdir(path):
        raise OutError(f"{name} {os.fspath(out)!r} is an existing file; expected a folder for the report")
    existing = _nearest_existing(os.path.dirname(path))
    if not os.path.isdir(existing):
        raise OutError(f"{name} {os.fspath(out)!r} lies under {existing!r}, which is a file, not a folder")
    _probe_writable(existing, f"{name} {os.fspath(out)!r}")
    if os.path.isdir(path) and not overwrite:
        entries = sorted(os.listdir(path))
        if entries:
            marker = _read_marker(path)
            if marker is None:
                raise OutError(
                    f"{name} {os.fspath(out)!r} is a folder that holds files ({', '.join(entries[:5])}"
                    f"{', ...' if len(entries) > 5 else ''}) and is not a featurelens report; choose another "
                    f"folder, or pass --overwrite (overwrite=True) to write into it"
                )
            if marker["command"] != command:
                raise OutError(
                    f"{name} {os.fspath(out)!r} holds a featurelens {marker['command']} report, not a "
                    f"{command} report; choose another folder, or pass --overwrite (overwrite=True)"
                )
            foreign = [e for e in entries if e != MARKER and e not in marker["files"]]
            if foreign:
                raise OutError(
                    f"{name} {os.fspath(out)!r} holds files the earlier {command} report did not write "
                    f"({', '.join(foreign[:5])}); move them, or pass --overwrite (overwrite=True)"
                )
    return path


def _is_replaceable(path: str, command: str) -> bool:
    """True when the folder can be swapped out whole: empty, or an earlier report of ``command``
    holding only its own files."""
    entries = os.listdir(path)
    if not entries:
        return True
    marker = _read_marker(path)
    return (marker is not None and marker["command"] == command
            and all(e == MARKER or e in marker["files"] for e in entries))


@contextlib.contextmanager
def report_folder(out, command: str, overwrite: bool = False):
    """Build a report in a temporary folder and move it into place on success.

    >>> with report_folder("featurelens-report", "benchmark") as tmp:
    ...     page.save(os.path.join(tmp, "index.html"))

    ``out`` is checked first (:func:`check_out`). The body writes into the yielded temporary folder
    (created beside ``out``, so the final move is a rename on the same file system). On success the
    folder gets the marker file listing its files and replaces ``out``: a missing, empty or earlier
    report folder is swapped out whole (rename the old one aside, rename the new one in, delete the
    old one); a folder of other files, allowed by ``overwrite=True``, keeps those files and gets each
    report file moved in. If the body raises, the temporary folder is removed and ``out`` is left
    exactly as it was.
    """
    path = check_out(out, command, overwrite)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    base = os.path.basename(path) or "report"
    tmp = tempfile.mkdtemp(prefix=f".{base}.featurelens-tmp-", dir=parent)
    try:
        yield tmp
        files = sorted(os.listdir(tmp))
        with open(os.path.join(tmp, MARKER), "w", encoding="utf-8") as f:
            json.dump({"command": command, "files": files}, f, indent=1)
        usual_permissions(tmp)  # mkdtemp made it owner-only
        if not os.path.exists(path):
            os.replace(tmp, path)
        elif _is_replaceable(path, command):
            old = tempfile.mkdtemp(prefix=f".{base}.featurelens-old-", dir=parent)
            os.replace(path, os.path.join(old, "report"))
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:  # overwrite=True into a folder of other files: keep them, replace ours one by one
            for name in files + [MARKER]:
                target = os.path.join(path, name)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                os.replace(os.path.join(tmp, name), target)
            os.rmdir(tmp)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def check_out_file(out, headers, overwrite: bool = False, name: str = "out") -> str:
    """Check an output file before any work; returns its absolute path. Refused with
    :class:`OutError`: an empty value, a folder, a missing parent folder, an unwritable place and,
    unless ``overwrite=True``, an existing file whose first line is not one of ``headers`` (a str
    or a tuple of them: a file this command wrote earlier starts with one and is written over)."""
    headers = (headers,) if isinstance(headers, str) else tuple(headers)
    path = _check_path(out, name)
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be True or False; got {overwrite!r}")
    if os.path.isdir(path):
        raise OutError(f"{name} {os.fspath(out)!r} is a folder; expected a file name")
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise OutError(f"{name} {os.fspath(out)!r}: the folder {parent!r} does not exist")
    _probe_writable(parent, f"{name} {os.fspath(out)!r}")
    if os.path.exists(path) and not overwrite:
        try:
            with open(path, encoding="utf-8", newline="") as f:
                first = f.readline().rstrip("\r\n")
        except (OSError, UnicodeDecodeError):
            first = None
        if first not in headers:
            raise OutError(
                f"{name} {os.fspath(out)!r} is an existing file that this command did not write; "
                f"choose another name, or pass --overwrite (overwrite=True)"
            )
    return path


def replace_file(path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: readers
    see the old file or the new one, never half of it."""
    path = os.path.abspath(os.fspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        usual_permissions(tmp)  # mkstemp made it owner-only
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
