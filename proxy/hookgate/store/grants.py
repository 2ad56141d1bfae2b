"""What an administrator grants a key or a team at run time. Pure.

The YAML holds the pipelines; what changes per tenant without a redeploy lives in the
store, one :class:`Grants` document per key and per team, written through the admin API
(``/admin/keys/{id}``, ``/admin/teams/{team}``) or the CLI (``hookgate teams set``,
``hookgate keys set``), each change with an :class:`AdminChange` record of who changed
what. Every replica reads them from the store (cached for at most
:data:`GRANTS_TTL_S`), so a change applies everywhere within a second.

How they apply to a request from a key of a team:

* ``models``: the key's allowlist, when set, replaces the one it was created with; a
  team's allowlist applies on top (a model must be allowed by both).
* ``budgets``: limits of the key's (or team's) own spend, enforced by the ``budget``
  policy of the request's policy set; one with the same window as a YAML limit of that
  scope replaces it, so an administrator raises or lowers a budget without a redeploy.
  The spend already counted in the window stays counted.
* ``rpm`` / ``tpm``: a per-minute rate of the key (or team), enforced by the
  ``rate_limit`` policy of the request's set, each replacing that field of the YAML
  rate of its scope (a granted ``rpm`` leaves the YAML ``tpm``).
* ``policy_set``: the set the key's (else the team's) requests get, before any match.
* ``metadata``: free labels, shown by the admin API.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from hookgate.budgets.limits import Limit, Scope, Window

GRANTS_TTL_S = 0.5
"""How long a replica reuses a grants document it read (changes apply within a second)."""

Kind = Literal["key", "team"]


def _printable(text: str) -> str:
    if not text.isprintable():
        raise ValueError("must be printable text, without control characters")
    return text


MAX_COUNT = 2**53
"""The largest token count or rate a grant takes (JSON's exact integers: a larger one
could not be read back by every client)."""
MAX_USD = 1e12
"""The largest budget in dollars a grant takes."""

Label = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_printable)]
"""A team, user, key or model name, a set's name, a metadata key: it reaches the audit
log, spans and (opt-in) metric labels."""


MetadataValue = Annotated[str, Field(max_length=1024)]


class BudgetGrant(BaseModel):
    """One budget of a key's or team's own spend over a window."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: Window = "total"
    usd: Annotated[float, Field(gt=0, le=MAX_USD, allow_inf_nan=False)] | None = None
    tokens: Annotated[int, Field(gt=0, le=MAX_COUNT)] | None = None

    @model_validator(mode="after")
    def _some_cap(self) -> BudgetGrant:
        if self.usd is None and self.tokens is None:
            raise ValueError("a budget needs usd, tokens or both")
        return self


def _unique_windows(budgets: list[BudgetGrant]) -> list[BudgetGrant]:
    windows = [b.window for b in budgets]
    if len(set(windows)) != len(windows):
        raise ValueError("one budget per window")
    return budgets


class Grants(BaseModel):
    """See the module docstring. Every field is optional: absent means not granted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: Annotated[list[Label], Field(max_length=1000)] | None = None
    budgets: Annotated[list[BudgetGrant], AfterValidator(_unique_windows)] = Field(
        default_factory=list
    )
    rpm: Annotated[int, Field(gt=0, le=MAX_COUNT)] | None = None
    tpm: Annotated[int, Field(gt=0, le=MAX_COUNT)] | None = None
    policy_set: Label | None = None
    metadata: Annotated[dict[Label, MetadataValue], Field(max_length=64)] = Field(
        default_factory=dict
    )

    def limits(self, scope: Scope) -> tuple[Limit, ...]:
        """The budgets as limits of ``scope`` (the kind of the grant's holder)."""
        return tuple(Limit(scope, b.window, b.usd, b.tokens) for b in self.budgets)

    def changed(self, patch: dict[str, Any]) -> Grants:
        """These grants with ``patch``'s fields set (``None`` clears one); validated."""
        fields = {**self.model_dump(exclude_none=True), **patch}
        return Grants.model_validate({k: v for k, v in fields.items() if v is not None})


NO_GRANTS = Grants()


class GrantsRefused(ValueError):
    """A change that cannot be made: it says why, and which field (``param``)."""

    def __init__(self, message: str, param: str | None = None, *, missing: bool = False):
        super().__init__(message)
        self.message = message
        self.param = param
        self.missing = missing
        """The change deletes grants there are none of."""


GrantsEdit = Callable[["Grants | None"], "Grants | None"]
"""What a change does to a key's or team's grants (None: none): the grants after it, None
to delete them. A store may run it more than once (when another change came first), so
it must depend on nothing but its argument."""


def patching(
    patch: Mapping[str, Any] | None, *, replace: bool, known_sets: Collection[str]
) -> GrantsEdit:
    """The change the admin API and the CLI make: ``patch``'s fields set on the grants as
    they are then (on none when ``replace``), ``None`` clearing a field; ``patch`` None
    deletes them. Raises :class:`GrantsRefused` for grants that do not validate, a policy
    set not in ``known_sets``, or a delete of grants that do not exist."""

    def change(before: Grants | None) -> Grants | None:
        if patch is None:
            if before is None:
                raise GrantsRefused("there are no grants to delete", missing=True)
            return None
        if patch.get("models") == []:  # checked here, not on read: stored grants load
            raise GrantsRefused(
                "invalid grants: models: an empty list would allow no model; send null to "
                "clear the list (then the key's own list, or any model, applies)",
                "models",
            )
        base = NO_GRANTS if replace or before is None else before
        try:
            after = base.changed(dict(patch))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise GrantsRefused(f"invalid grants: {where}: {error['msg']}", where) from None
        if after.policy_set is not None and after.policy_set not in known_sets:
            raise GrantsRefused(
                f"unknown policy set {after.policy_set!r} (known: {', '.join(sorted(known_sets))})",
                "policy_set",
            )
        return after

    return change


_LABEL: TypeAdapter[str] = TypeAdapter(Label)


def check_subject(subject: str) -> str:
    """A team name (or key id) fit to hold grants: a :data:`Label`."""
    try:
        return _LABEL.validate_python(subject)
    except ValidationError:
        raise GrantsRefused("a team name is printable text of at most 256 characters") from None


class AdminChange(BaseModel):
    """One run-time change, as the admin log keeps it: who, when, what, before and after."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ts: float
    actor: str
    """Who: the admin API's ``x-hookgate-actor`` header (else ``admin``), ``cli:`` and the
    OS user for the CLI, ``ui:`` and the name the admin logged in with for the admin UI."""
    action: Literal["set", "delete"]
    kind: Kind
    subject: str
    """The key id or team name."""
    before: Grants | None
    after: Grants | None

    @classmethod
    def made(
        cls, kind: Kind, subject: str, before: Grants | None, after: Grants | None, actor: str
    ) -> AdminChange:
        """The record of a change made now (``after`` None: a delete)."""
        return cls(
            ts=time.time(), actor=actor, action="delete" if after is None else "set",
            kind=kind, subject=subject, before=before, after=after,
        )  # fmt: skip
