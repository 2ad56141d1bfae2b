"""Every code reference in the docs and docstrings resolves: README.md, docs/**/*.md and the
docstrings of ``proxy/hookgate`` name only modules, classes, functions and attributes that
exist, and only paths that exist.

What counts as a reference:

* a dotted ``hookgate.…`` name (the module is imported, the rest read with ``getattr``); a
  name the code itself writes as a string (a span attribute, a logger) or a file name
  (``hookgate.yaml``) is no Python name and passes when the code has that string;
* a Sphinx role (``:mod:``, ``:class:``, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``,
  ``title <target>`` too), read where it stands: in a docstring the enclosing classes, the
  module (its imports too, ``TYPE_CHECKING`` ones included), then its packages up to
  ``hookgate``; in Markdown the package ``hookgate``;
* a path under ``proxy/``, ``tests/`` or ``docs/`` (globs allowed).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "proxy" / "hookgate"
MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

DOTTED = re.compile(r"(?<![\w./-])hookgate(?:\.[A-Za-z_]\w*)+")
ROLE = re.compile(r":(?:mod|class|func|meth|attr|data|exc|obj):`([^`]+)`")
TITLED = re.compile(r"^[^<]*<\s*([^>]+?)\s*>$", re.DOTALL)
PATH = re.compile(r"(?<![\w./-])(?:proxy|tests|docs)/[\w./*-]*")
FILE_SUFFIXES = ("json", "yaml", "yml", "db", "toml", "md", "py")
"""A dotted name ending in one of these is a file's name (``hookgate.schema.json``)."""
MISSING = object()


@dataclass(frozen=True)
class Text:
    """A docstring (or a Markdown file) and where a name in it is read."""

    where: str
    text: str
    module: str = "hookgate"
    classes: tuple[str, ...] = ()


@cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstrings() -> Iterator[Text]:
    """Every string statement of the package (module, class, function and attribute
    docstrings), with its module and enclosing classes."""
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        yield from _strings(parsed(path), where, module_name(path), ())


def _strings(node: ast.AST, where: str, module: str, classes: tuple[str, ...]) -> Iterator[Text]:
    for field in ("body", "orelse", "finalbody", "handlers"):
        for child in getattr(node, field, []):
            if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant):
                value = child.value.value
                if isinstance(value, str):
                    yield Text(f"{where}:{child.lineno}", value, module, classes)
            inner = (*classes, child.name) if isinstance(child, ast.ClassDef) else classes
            yield from _strings(child, where, module, inner)


def markdown() -> Iterator[Text]:
    for path in MARKDOWN:
        yield Text(str(path.relative_to(ROOT)), path.read_text())


@cache
def code_strings() -> frozenset[str]:
    """The ``hookgate.…`` strings the package writes (span attributes, logger names, the
    constant head of an f-string), without a trailing dot."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and value.startswith("hookgate."):
                found.add(value.rstrip("."))
    return frozenset(found)


@cache
def imports(module: str) -> dict[str, str]:
    """The names a module imports anywhere (``TYPE_CHECKING`` and function-local imports
    included), each to its qualified name."""
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    package = module if not path.is_file() else module.rpartition(".")[0]
    if not path.is_file():
        path = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
    names: dict[str, str] = {}
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                names[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def instance_attribute(cls: type, name: str) -> bool:
    """``name`` is an attribute of ``cls``'s instances that the class itself may not hold:
    a field without a default, or one set in a method (``self.name = …``)."""
    for klass in cls.__mro__:
        if name in getattr(klass, "__annotations__", {}) or name in getattr(klass, "__slots__", ()):
            return True
        if dataclasses.is_dataclass(klass) and name in {f.name for f in dataclasses.fields(klass)}:
            return True
        if name in getattr(klass, "model_fields", {}):
            return True
        module = getattr(klass, "__module__", "")
        if module.startswith("hookgate") and _assigns_self(module, klass.__qualname__, name):
            return True
    return False


@cache
def _assigns_self(module: str, qualname: str, name: str) -> bool:
    source = importlib.import_module(module).__file__
    assert source is not None
    tree = parsed(Path(source))
    node: ast.AST | None = tree
    for part in qualname.split("."):
        classes = [n for n in getattr(node, "body", []) if isinstance(n, ast.ClassDef)]
        node = next((n for n in classes if n.name == part), None)
    if node is None:
        return False
    for child in ast.walk(node):
        targets = child.targets if isinstance(child, ast.Assign) else []
        if isinstance(child, ast.AnnAssign | ast.AugAssign):
            targets = [child.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and target.attr == name
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                return True
    return False


def lookup(obj: Any, parts: list[str]) -> Any:
    """``obj.part1.part2…``, or :data:`MISSING`; an instance attribute of a class counts."""
    for i, part in enumerate(parts):
        found = getattr(obj, part, MISSING)
        if found is MISSING:
            last = i == len(parts) - 1
            held = last and isinstance(obj, type) and instance_attribute(obj, part)
            return True if held else MISSING
        obj = found
    return obj


def qualified(name: str) -> bool:
    """``name`` is ``a.b.c`` of an importable module ``a.b`` and attribute path ``c``. A
    module that exists but fails to import fails the test with its own error."""
    parts = name.split(".")
    if not all(parts):
        return False
    for cut in range(len(parts), 0, -1):
        candidate = ".".join(parts[:cut])
        try:
            module = importlib.import_module(candidate)
        except ModuleNotFoundError as missing:
            if missing.name is None or not f"{candidate}.".startswith(f"{missing.name}."):
                raise
            continue
        return lookup(module, parts[cut:]) is not MISSING
    return False


def resolves(target: str, text: Text) -> bool:
    """A role's target, read where ``text`` stands (see the module docstring)."""
    titled = re.fullmatch(r".*<(.+)>", target)
    name = (titled[1] if titled else target).lstrip("~!.").removesuffix("()")
    if name.startswith("hookgate.") or name == "hookgate":
        return qualified(name)
    parts = name.split(".")
    module = importlib.import_module(text.module)
    for depth in range(len(text.classes), 0, -1):
        cls = lookup(module, list(text.classes[:depth]))
        if cls is not MISSING and lookup(cls, parts) is not MISSING:
            return True
    if lookup(module, parts) is not MISSING:
        return True
    if parts[0] in imports(text.module) and qualified(
        ".".join([imports(text.module)[parts[0]], *parts[1:]])
    ):
        return True
    package = text.module
    while "." in package:
        package = package.rpartition(".")[0]
        if qualified(f"{package}.{name}"):
            return True
    return hasattr(builtins, name) or qualified(name)


def dotted_resolves(name: str) -> bool:
    return name in code_strings() or name.rsplit(".", 1)[-1] in FILE_SUFFIXES or qualified(name)


def path_exists(path: str) -> bool:
    path = path.rstrip(".,;:)")
    return any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()


def unresolved() -> Iterator[str]:
    for text in [*markdown(), *docstrings()]:
        for name in DOTTED.findall(text.text):
            if not dotted_resolves(name):
                yield f"{text.where}: {name}"
        for role in ROLE.findall(text.text):
            target = TITLED.sub(r"\1", role)  # Sphinx's "title <target>" form
            if not resolves(target, text):
                yield f"{text.where}: {target}"
        for path in PATH.findall(text.text):
            if not path_exists(path):
                yield f"{text.where}: {path}"


def test_every_reference_in_the_docs_and_docstrings_resolves() -> None:
    missing = sorted(set(unresolved()))
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize(
    ("target", "text", "expected"),
    [
        ("Upstreams", Text("t", "", "hookgate.providers.terminal"), True),
        ("Upstreams", Text("t", "", "hookgate.providers.routing"), False),
        ("providers.terminal.Upstreams", Text("t", "", "hookgate.server.streaming"), True),
        ("providers.routing.Upstreams", Text("t", "", "hookgate.server.streaming"), False),
        ("body", Text("t", "", "hookgate.pipeline.types", ("ModelResponse",)), True),
        ("ModelResponse.no_such_field", Text("t", "", "hookgate.pipeline.types"), False),
        ("~hookgate.errors.PolicyBlocked", Text("t", ""), True),
        ("TimeoutError", Text("t", "", "hookgate.errors"), True),
    ],
)
def test_a_reference_resolves_where_it_is_read(target: str, text: Text, expected: bool) -> None:
    assert resolves(target, text) is expected


def test_strings_the_code_writes_pass_and_stale_names_do_not() -> None:
    assert dotted_resolves("hookgate.request_id")  # a span attribute the code sets
    assert dotted_resolves("hookgate.schema.json")  # a file
    assert dotted_resolves("hookgate.providers.terminal.Upstreams")
    assert not dotted_resolves("hookgate.providers.routing.Upstreams")
    assert not path_exists("tests/no_such_suite.py") and path_exists("tests/fakes.py")
