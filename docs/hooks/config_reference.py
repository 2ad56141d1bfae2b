"""A MkDocs hook: the configuration reference, rendered from the config models at build time.

Every key of the YAML file — :class:`hookgate.config.schema.Config` and each built-in
policy's settings (its ``Config``, a :class:`hookgate.PolicyConfig`) — becomes a row of
``docs/reference.md`` (path, type, default, description), where the page says
``<!-- config-reference -->``. A key's description is its field's docstring; a field
without one is a warning, which ``mkdocs build --strict`` (``make check``) turns into a
failed build. So the reference can be neither stale nor incomplete.
"""

from __future__ import annotations

import ast
import inspect
import json
import logging
import re
import sys
import textwrap
import types
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from hookgate.config.schema import Config
from hookgate.pipeline import registry
from hookgate.pipeline.hooks import PolicyConfig

MARKER = "<!-- config-reference -->"
log = logging.getLogger("mkdocs.hooks.config_reference")


@dataclass
class Section:
    """One config model's table, at the YAML paths where it appears."""

    model: type[BaseModel]
    paths: list[str]
    intro: str = ""
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)


@dataclass
class Reference:
    """The rendered sections, and the keys that have no description."""

    sections: list[Section] = field(default_factory=list)
    undocumented: list[str] = field(default_factory=list)


def prose(text: str | None) -> str:
    """A docstring as one Markdown line: RST literals and roles as code, no pipes."""
    text = inspect.cleandoc(text or "")
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


def docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Each field's docstring (the string statement after it), from the class that declares
    it, nearest first."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
        assert isinstance(body, ast.ClassDef)
        for node, after in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[node.target.id] = after.value.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.pop(node.target.id, None)  # redeclared without one
    return found


def unwrap(tp: Any) -> Any:
    return get_args(tp)[0] if get_origin(tp) is Annotated else tp


def type_name(tp: Any) -> str:
    """A field's type in YAML terms."""
    tp = unwrap(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return " or ".join(json.dumps(a) for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(type_name(a) for a in args))
    if origin in (list, tuple):
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"map of {type_name(args[0])} to {type_name(args[1])}"
    if tp is type(None):
        return "null"
    if tp is SecretStr:
        return "str (secret)"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "mapping"  # its keys have a section of their own
    if tp is Any:
        return "any"
    return getattr(tp, "__name__", str(tp))


BOUNDS = {
    annotated_types.Gt: ("gt", "> {}"),
    annotated_types.Ge: ("ge", "≥ {}"),
    annotated_types.Lt: ("lt", "< {}"),
    annotated_types.Le: ("le", "≤ {}"),
    annotated_types.MinLen: ("min_length", "at least {} items"),
}


def constraints(info: FieldInfo) -> str:
    found = []
    for meta in info.metadata:
        for kind, (attr, text) in BOUNDS.items():
            if isinstance(meta, kind):
                found.append(text.format(getattr(meta, attr)))
    for arg in get_args(info.annotation):  # `Annotated[int, Field(gt=0)] | None`
        for meta in getattr(arg, "__metadata__", ()):
            for inner in getattr(meta, "metadata", ()):
                for kind, (attr, text) in BOUNDS.items():
                    if isinstance(inner, kind):
                        found.append(text.format(getattr(inner, attr)))
    return f" ({', '.join(found)})" if found else ""


def default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "its keys' defaults"
    text = json.dumps(to_jsonable_python(value, round_trip=True))
    return f"`{text}`".replace("|", "\\|")


def nested(tp: Any, path: str) -> list[tuple[type[BaseModel], str]]:
    """The config models a field's type holds, each with the YAML path of its keys."""
    tp = unwrap(tp)
    origin, args = get_origin(tp), get_args(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [(tp, path)]
    if origin in (Union, types.UnionType):
        return [found for arg in args for found in nested(arg, path)]
    if origin in (list, tuple) and args:
        return nested(args[0], f"{path}[]")
    if origin is dict:
        return nested(args[1], f"{path}.<name>")
    return []


def collect(reference: Reference, model: type[BaseModel], path: str, intro: str = "") -> None:
    for section in reference.sections:
        if section.model is model:
            section.paths.append(path)
            return
    own = model.__dict__.get("__doc__") if model not in (PolicyConfig,) else None
    section = Section(model, [path], intro or prose(own))
    reference.sections.append(section)
    children: list[tuple[type[BaseModel], str]] = []
    described = docstrings(model)
    for name, info in model.model_fields.items():
        key = f"{path}.{name}" if path else name
        description = prose(info.description or described.get(name))
        if not description:
            reference.undocumented.append(f"{key} ({model.__module__}.{model.__qualname__})")
            description = "**undocumented**"
        kind = type_name(info.annotation).replace("|", "\\|") + constraints(info)
        section.rows.append((f"`{name}`", kind, default(info), description))
        children.extend(nested(info.annotation, key))
    for child, child_path in children:
        collect(reference, child, child_path)


def build() -> Reference:
    """Every key of the config file and of every built-in policy's settings."""
    reference = Reference()
    collect(reference, Config, "")
    for name in sorted(registry.BUILTIN):
        policy = registry.resolve(name)
        intro = prose((sys.modules[policy.__module__].__doc__ or "").split("\n\n")[0])
        collect(reference, policy.Config, f"policies[].{name}", intro)
    return reference


def markdown(reference: Reference) -> str:
    out: list[str] = []
    for section in reference.sections:
        title = f"`{section.paths[0]}`" if section.paths[0] else "The top level"
        kind = section.model.model_fields.get("type")
        if kind is not None and get_origin(kind.annotation) is Literal:
            title += f" with `type: {get_args(kind.annotation)[0]}`"
        out.append(f"### {title}\n")
        if len(section.paths) > 1:
            out.append("Also at " + ", ".join(f"`{p}`" for p in section.paths[1:]) + ".\n")
        if section.intro:
            out.append(section.intro + "\n")
        out.append("| key | type | default | description |\n|---|---|---|---|")
        out.extend(f"| {' | '.join(row)} |" for row in section.rows)
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown_text: str, **_: Any) -> str:
    """MkDocs event: fill the reference in where the page asks for it."""
    if MARKER not in markdown_text:
        return markdown_text
    reference = build()
    for key in reference.undocumented:
        log.warning("config key without a description (write its docstring): %s", key)
    return markdown_text.replace(MARKER, markdown(reference))
