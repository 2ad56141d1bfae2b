"""The package's shape: one import name, a public API pinned by name, and an import graph
without a cycle (every import statement counts: function-local and TYPE_CHECKING ones
too). The layers themselves are import-linter contracts (pyproject.toml, `make check`)."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import typing
from pathlib import Path

import hookgate
from hookgate.pipeline.hooks import HOOKS

PACKAGE = Path(hookgate.__file__).parent

PUBLIC = {
    "Api", "Approver", "AuthenticationFailed", "BudgetExceeded", "Context", "Conversation",
    "Decision", "DeltaKey",
    "EventStream", "GeminiRequest", "GuardrailUnavailable", "HookgateError", "Identity",
    "InvalidRequest", "JsonBody", "Ledger", "Messages", "Metric", "ModelCall", "ModelResponse",
    "Next", "NextReply", "NextTool", "NoSettings", "Observation", "OnFailure", "Outcome",
    "PermissionDenied", "Policy", "PolicyBlocked", "PolicyConfig", "PolicyDefinitionError",
    "PolicyTool", "Pricing", "RateLimited", "RateLimiter", "Reply", "ReplyAbandoned",
    "ReplyContext", "ReplyPaused", "Services",
    "Span", "Store", "StreamTransform", "Target", "ToolCall", "ToolInputError", "ToolOutput",
    "ToolResult",
    "UpstreamError", "Usage", "__version__", "map_messages", "texts_of",
}  # fmt: skip


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["hookgate", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:
                    found.add(submodule)
                elif base in modules:
                    found.add(base)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert len(graph) > 90 and sum(map(len, graph.values())) > 250  # the walk saw the code
    assert _cycles(graph) == []
    # and the counter finds one where there is one
    assert _cycles({**graph, "hookgate.wire.sse": {"hookgate.pipeline.types"}}) != []


def test_no_module_imports_the_package_root() -> None:
    """The root re-exports the public API; a module importing it back would be a cycle
    through ``hookgate/__init__.py``."""
    modules = _modules()
    importers = {
        name for name, path in modules.items() if "hookgate" in _imports(name, path, modules)
    }
    assert importers <= {"hookgate"}


def test_the_public_api_is_pinned() -> None:
    assert set(hookgate.__all__) == PUBLIC
    assert len(hookgate.__all__) == len(PUBLIC)
    for name in hookgate.__all__:
        assert getattr(hookgate, name) is not None, name


def _named_types(hint: object) -> set[type]:
    """The classes a type hint names, through unions, generics and callables."""
    found = {hint} if isinstance(hint, type) and hint.__module__.startswith("hookgate") else set()
    for arg in typing.get_args(hint):
        found |= _named_types(arg)
    return found


def test_every_type_a_policy_author_meets_is_exported() -> None:
    """A hook's parameters and result, and what those carry (a call's targets, a context's
    identity, a reply context's tool calls), are all reachable from ``hookgate``."""
    exported = {getattr(hookgate, name) for name in hookgate.__all__}
    met: set[type] = set()
    for hook in HOOKS:
        method = getattr(hookgate.Policy, hook)
        hints = typing.get_type_hints(method, {**method.__globals__, **vars(hookgate)})
        met |= set().union(*(_named_types(h) for h in hints.values()))
    for carrier in list(met):
        if dataclasses.is_dataclass(carrier):
            for hint in typing.get_type_hints(carrier).values():
                met |= _named_types(hint)
    assert {hookgate.ModelCall, hookgate.ReplyContext, hookgate.PolicyTool} <= met
    assert sorted(t.__qualname__ for t in met - exported) == []


def test_the_import_name_is_hookgate_and_nothing_called_proxy(tmp_path: Path) -> None:
    """Outside the checkout (whose top-level folder ``proxy/`` is the source root), as an
    agent's environment sees the installed package."""
    code = (
        "import importlib.util, hookgate, hookgate.sdk; "
        "print(importlib.util.find_spec('proxy') is None, hookgate.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.split()[0] == "True"
    assert out.stdout.split()[1].endswith("hookgate/__init__.py")
    help_text = subprocess.run(
        [sys.executable, "-m", "hookgate", "--help"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    assert help_text.startswith("usage: hookgate")
