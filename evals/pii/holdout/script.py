"""Runs the scenario scripts of the held-out set (``*_scenarios.json``, ``pieces.json``).

A scenario is a list of statements that writes a chat's first turn(s) through a
:class:`~evals.pii.holdout.values.Context`, drawing its random values in a fixed order. The
language is small:

Statements (JSON objects): ``{"let": {"x": expr, "a, b": expr}}`` binds in order (``"a, b"``
unpacks); ``{"do": expr}``; ``{"if": expr, "then": [...], "else": [...]}``;
``{"case": expr, "of": {"value": [...]}, "else": [...]}``; ``{"repeat": expr, "as": "i",
"body": [...]}``; ``{"for": "x", "in": expr, "body": [...]}``; ``{"append": {"xs": expr}}``
and ``{"extend": {"xs": expr}}``; ``{"return": expr}``.

Expressions: a string is itself, except ``"$x.attr.0"`` (a variable, its attribute, key or
index) and ``"$$..."`` (a string starting with ``$``); an object is a dict, its values
evaluated in order; a list is a call ``[name, argument...]`` of an operation below or of a
procedure of ``pieces.json`` (``{"params": [...], "defaults": {...}, "body": [...]}``). The
value makers of the context take their keyword arguments as a final object, as in
``["person", {"locale": "en_US"}]``. ``["fmt", template, {extra}]`` formats a template with
the variables in scope (and ``extra``, evaluated first), like a Python f-string;
``["say", template, {values}]`` is :meth:`Context.say`; ``["pick", a, b, ...]`` evaluates
every option, then picks one; ``["if", c, a, b]``, ``["and", ...]`` and ``["or", ...]``
evaluate lazily.
"""

from __future__ import annotations

import json
import uuid
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

from evals.pii.holdout.values import Context
from evals.pii.holdout.writer import alphabet, data, digits, message, rs, vocabulary

Env = dict[str, Any]


class ScriptError(Exception):
    """A scenario script is malformed (not a failed attempt: it is not retried)."""


_KEYWORDS = frozenset(
    {
        "person",
        "email",
        "address",
        "card",
        "ssn",
        "iban",
        "ip",
        "sha",
        "pver",
        "ts",
        "ver",
        "amount",
    }
)
"""Value makers whose final object argument holds keyword arguments."""

_VALUE_MAKERS = frozenset(
    {
        *_KEYWORDS,
        *("mailbox", "phone", "ext", "secret", "jwt_with", "err", "focus", "ticket", "order_id"),
        *("human_date", "uuid", "host", "hostport", "image", "path", "pod", "company"),
        *("js", "t", "pii", "tool_tail", "call", "calls", "chance"),
    }
)
"""Operations that are methods of :class:`Context` of the same name."""

_MISSING = object()


def _get(container: Any, key: Any, default: Any = _MISSING) -> Any:
    if isinstance(container, Mapping):
        return container[key] if default is _MISSING else container.get(key, default)
    if isinstance(container, list | tuple | str):
        return container[int(key)]
    return getattr(container, key)


def _concat(first: Any, *rest: Any) -> Any:
    out = first
    for part in rest:
        out = out + part
    return out


_PURE: dict[str, Callable[..., Any]] = {
    "list": lambda *items: list(items),
    "dict": lambda key, value: {key: value},
    "concat": _concat,
    "join": lambda sep, items: sep.join(items),
    "map_join": lambda sep, rows: [sep.join(row) for row in rows],
    "split": lambda s, sep: s.split(sep),
    "rsplit": lambda s, sep, n: s.rsplit(sep, n),
    "replace": lambda s, old, new: s.replace(old, new),
    "startswith": lambda s, prefix: s.startswith(prefix),
    "str": str,
    "len": len,
    "get": _get,
    "slice": lambda seq, start, end=None: seq[start:end],
    "copy": list,
    "merge": lambda a, b: a | b,
    "insert": lambda items, index, item: items.insert(index, item),
    "format": lambda template, values: template.format(**values),
    "json": json.dumps,
    "json_pretty": lambda obj: json.dumps(obj, ensure_ascii=False, indent=2),
    "not": lambda x: not x,
    "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "add": lambda a, b: a + b,
    "mod": lambda a, b: a % b,
    "floordiv": lambda a, b: a // b,
    "system": lambda text: message("system", text),
    "user": lambda content: message("user", content),
    "assistant": lambda text: message("assistant", text),
    "parts": lambda *texts: [{"type": "text", "text": t} for t in texts],
    "tool": lambda call_id, content: {"role": "tool", "tool_call_id": call_id, "content": content},
    "vocab": vocabulary,
}
"""Operations that draw nothing at random."""


def _entity(c: Context, kind: str) -> str:
    return next(v for v, k in c.ents.items() if k == kind)


def _set_theme(c: Context, theme: str) -> None:
    c.theme = theme


_CONTEXT: dict[str, Callable[..., Any]] = {
    "random": lambda c: c.r.random(),
    "randint": lambda c, a, b: c.r.randint(a, b),
    "randrange": lambda c, *bounds: c.r.randrange(*bounds),
    "choice": lambda c, seq: c.r.choice(seq),
    "sample": lambda c, seq, k: c.r.sample(seq, k),
    "rs": lambda c, n, chars: rs(c.r, n, alphabet(chars)),
    "digits": lambda c, n, first_nonzero=True: digits(c.r, n, first_nonzero),
    "uuid4": lambda c: str(uuid.UUID(int=c.r.getrandbits(128), version=4)),
    "pick": lambda c, *options: c.pick(options),
    "choose": lambda c, options: c.pick(options),
    "say": lambda c, template, values=None: c.say(template, **(values or {})),
    "theme": _set_theme,
    "theme_news": lambda c: data("follow_ups")["theme_news"][c.theme],
    "lookup": lambda c, kind: data("follow_ups")["lookups"][kind],
    "entity": _entity,
    "untech": lambda c, token: c.tech.pop(token),
    "recall": lambda c: c.recall(),
}
"""Operations on the chat's context (its random source and labels)."""


class Script:
    """Runs scripts against one chat's :class:`Context`."""

    def __init__(self, c: Context) -> None:
        self.c = c
        self.procedures: dict[str, Any] = data("pieces")["procedures"]

    def run(self, body: list[Any], env: Env) -> Any:
        """Run ``body`` in ``env``; the value it returns (``None`` if it does not)."""
        returned, value = self._block(body, env)
        return value if returned else None

    def call(self, name: str, *args: Any) -> Any:
        """Call the procedure ``name`` of ``pieces.json`` with evaluated arguments."""
        procedure = self.procedures[name]
        params = procedure["params"]
        if len(args) > len(params):
            raise ScriptError(f"{name}: too many arguments")
        env = dict(procedure.get("defaults", {}))
        env.update(zip(params, args, strict=False))
        missing = [p for p in params if p not in env]
        if missing:
            raise ScriptError(f"{name}: missing {missing}")
        return self.run(procedure["body"], env)

    # -- statements -------------------------------------------------------------------------

    def _block(self, body: list[Any], env: Env) -> tuple[bool, Any]:
        for statement in body:
            returned, value = self._statement(statement, env)
            if returned:
                return True, value
        return False, None

    def _statement(self, s: dict[str, Any], env: Env) -> tuple[bool, Any]:
        if "let" in s:
            for names, expr in s["let"].items():
                value = self.eval(expr, env)
                if "," in names:
                    keys = [n.strip() for n in names.split(",")]
                    env.update(zip(keys, value, strict=True))
                else:
                    env[names] = value
        elif "if" in s:
            branch = s["then"] if self.eval(s["if"], env) else s.get("else", [])
            return self._block(branch, env)
        elif "case" in s:
            key = str(self.eval(s["case"], env))
            return self._block(s["of"].get(key, s.get("else", [])), env)
        elif "repeat" in s:
            for i in range(self.eval(s["repeat"], env)):
                if "as" in s:
                    env[s["as"]] = i
                returned, value = self._block(s["body"], env)
                if returned:
                    return True, value
        elif "for" in s:
            for item in self.eval(s["in"], env):
                env[s["for"]] = item
                returned, value = self._block(s["body"], env)
                if returned:
                    return True, value
        elif "append" in s or "extend" in s:
            ((name, expr),) = (s.get("append") or s["extend"]).items()
            value = self.eval(expr, env)
            if "append" in s:
                env[name].append(value)
            else:
                env[name].extend(value)
        elif "return" in s:
            return True, self.eval(s["return"], env)
        elif "do" in s:
            self.eval(s["do"], env)
        else:
            raise ScriptError(f"unknown statement {s!r}")
        return False, None

    # -- expressions ------------------------------------------------------------------------

    def eval(self, x: Any, env: Env) -> Any:
        """The value of expression ``x`` in ``env``."""
        if isinstance(x, str):
            if x.startswith("$$"):
                return x[1:]
            if x.startswith("$"):
                return self._variable(x[1:], env)
            return x
        if isinstance(x, dict):
            return {key: self.eval(value, env) for key, value in x.items()}
        if isinstance(x, list):
            return self._operation(x[0], x[1:], env)
        return x

    def _variable(self, path: str, env: Env) -> Any:
        name, *rest = path.split(".")
        if name not in env:
            raise ScriptError(f"unknown variable {name!r}")
        value = env[name]
        for part in rest:
            value = _get(value, part)
        return value

    def _operation(self, op: str, raw: list[Any], env: Env) -> Any:
        if op == "if":
            condition, then, otherwise = raw
            return self.eval(then if self.eval(condition, env) else otherwise, env)
        if op in ("and", "or"):
            value: Any = op == "and"
            for expr in raw:
                value = self.eval(expr, env)
                if bool(value) != (op == "and"):
                    break
            return value
        kwargs: dict[str, Any] = {}
        if op in _KEYWORDS and raw and isinstance(raw[-1], dict):
            *raw, keywords = raw
            args = [self.eval(a, env) for a in raw]
            kwargs = self.eval(keywords, env)
        else:
            args = [self.eval(a, env) for a in raw]
        if op == "fmt":
            template, *extra = args
            return template.format_map(ChainMap(*extra, env))
        if op in _PURE:
            return _PURE[op](*args)
        if op in _CONTEXT:
            return _CONTEXT[op](self.c, *args)
        if op in _VALUE_MAKERS:
            return getattr(self.c, op)(*args, **kwargs)
        if op in self.procedures:
            return self.call(op, *args)
        raise ScriptError(f"unknown operation {op!r}")
