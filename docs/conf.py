"""Sphinx configuration of the ccmetrics documentation (``sphinx-build -W -n docs docs/_build/html``)."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))  # the checkout's package, also without an install

from ccmetrics import __version__  # noqa: E402

project = "ccmetrics"
author = "the ccmetrics authors"
copyright = "2025-2026, the ccmetrics authors"
release = version = __version__

extensions = [
    "myst_parser",  # the pages are Markdown
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",  # the API reference, generated from the docstrings
    "numpydoc",  # the docstrings are numpydoc
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "generated/*.rst.txt"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autosummary_generate = True
autosummary_ignore_module_all = False  # a module's __all__ says what is public
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # the numpydoc sections give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# Strict: every cross-reference must resolve (-n -W). There is no network for intersphinx here, so names of
# other projects' types are accepted as plain text.
nitpicky = True
nitpick_ignore_regex = [
    ("py:.*", r"(numpy|np|pandas|pd|torch|monai|scipy|matplotlib|dask|ignite|pathlib|os|concurrent)\..*"),
    ("py:.*", r"(ndarray|DataFrame|Series|Path|Figure|Axes|Tensor|MetaTensor|ThreadPoolExecutor|Client)"),
    # a base class from the private foundation of the memory limit (documented as ccmetrics.engine.memory's)
    ("py:class", r"ccmetrics\.(engine\._budget|_memory)\.MemoryLimitError"),
]

html_theme = "furo"
html_title = f"ccmetrics {release}"
html_static_path = []
numpydoc_attributes_as_param_list = False  # a class's Attributes become targets of :attr: references


def _resolve_top_level(app, env, node, contnode):
    """A re-exported name points to its defining module's entry: ``ccmetrics.evaluate`` and the package's other
    top-level names, and the names a module still exports after its code moved (``ccmetrics.campaign.dataset.
    DatasetResult`` is ``ccmetrics.results.dataset.DatasetResult``)."""
    import importlib

    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("ccmetrics."):
        return None
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module, then the name in it
        try:
            module = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        if i == 1 and parts[1] not in getattr(module, "__all__", ()):
            return None
        obj = getattr(module, parts[i], None)
        if not hasattr(obj, "__module__") or not hasattr(obj, "__qualname__"):
            return None
        canonical = ".".join([obj.__module__, obj.__qualname__, *parts[i + 1 :]])
        if canonical == target:
            return None
        domain = env.get_domain("py")
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], canonical, node, contnode)
    return None


def setup(app):
    app.connect("missing-reference", _resolve_top_level)
