"""`python -c "..."` checks in articles: they must run as written in a fresh shell.

A user pastes them at 2 a.m.; `python -c "print(args.x)"` or `import a.b as m; print(a.__version__)`
fails with a NameError that says nothing about their run. Python's own parser and a scan of the
names the one-liner binds catch both without running anything.
"""

from __future__ import annotations

import ast
import builtins
import re

# The command's code in double or single quotes; an escaped quote of the same kind stays inside.
_ONE_LINER = re.compile(r"""\bpython3?\s+-c\s+(["'])((?:\\.|(?!\1).)*)\1""", re.S)
_BUILTINS = frozenset(dir(builtins))


def one_liners(text: str) -> list[str]:
    """The code of every `python -c` command in the text, shell escapes of its quote undone."""
    return [m.group(2).replace("\\" + m.group(1), m.group(1)) for m in _ONE_LINER.finditer(text)]


def one_liner_problem(code: str) -> str | None:
    """Why the one-liner cannot run in a fresh interpreter, or None."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"does not parse ({exc.msg})"
    bound = set(_BUILTINS)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            # `import a.b` binds `a`; `import a.b as m` binds only `m`.
            bound.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    unbound = sorted(
        {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        - bound
    )
    if unbound:
        return f"uses {', '.join(unbound)} without defining or importing it"
    return None
