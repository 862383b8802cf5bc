"""MkDocs hooks of the manual (mkdocs.yml ``hooks:``).

The docstrings are written for Sphinx: a reference is a role, ``:func:`with_components```. mkdocstrings shows the
role's name in front of the code (":func:with_components"); this drops the role name and keeps the code.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|exc|obj|const):(?=<code)")


def on_page_content(html: str, **kwargs) -> str:
    return ROLE.sub("", html)
