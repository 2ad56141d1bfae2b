"""Canonical forms of a value, so a copied value is found however it was re-written.

Every text is reduced to forms an attacker cannot trivially change without changing the
value itself:

* :func:`fold` — Unicode NFKC, Cyrillic and Greek look-alikes mapped to the Latin letters
  they imitate (:data:`CONFUSABLES`), casefolded, invisible characters dropped,
  whitespace collapsed;
* :func:`compact` — the folded text with only its letters and digits: an IBAN with or
  without spaces, a phone number with or without punctuation, a card number with or
  without dashes all give one form;
* :func:`email_canonical` — ``Local+tag@Domain`` as ``local@domain``;
* :func:`url_canonical` — scheme dropped, host lowercased without ``www.``, the default
  port and a trailing slash dropped, percent-encoding decoded;
* :func:`decodings` — the value itself, percent-decoded, and base64-decoded when the whole
  value is base64 of text.

:func:`canonical` gives the compact forms of all of these together; :func:`tokens` the
e-mail addresses, URLs and words found inside a longer text, each canonical, so a short
value (an e-mail address, an IBAN) is matched exactly rather than by substring. Pure.
"""

# ruff: noqa: RUF001  (the table of look-alike letters is made of them)

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from urllib.parse import unquote_plus, urlsplit

_LOOKALIKES = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i",
    "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ӏ": "l", "ь": "b",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D",
    "Һ": "H", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes outside ASCII
    "ı": "i", "ȷ": "j", "ℓ": "l", "ß": "ss",
}  # fmt: skip
CONFUSABLES = str.maketrans(_LOOKALIKES)
"""Look-alike letters → the Latin letters they imitate (a compact subset of Unicode's
TR39 confusables: the Cyrillic and Greek letters that render like Latin ones)."""

_INVISIBLE = dict.fromkeys(
    [0x00AD, 0x034F, 0x061C, 0x180E, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060,
     0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF]
)  # fmt: skip
_SPACE = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL = re.compile(r"(?:https?://|www\.)[^\s<>\"'`)\]}]+", re.IGNORECASE)
_WORD = re.compile(r"[^\s,;:()<>\[\]{}\"'`]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def fold(text: str) -> str:
    """NFKC, look-alikes to Latin, casefolded, invisible characters dropped, whitespace
    collapsed to one space and stripped."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    text = text.translate(CONFUSABLES).casefold()
    return _SPACE.sub(" ", text).strip()


def compact(text: str) -> str:
    """The folded text's letters and digits only (IBAN, phone, card: one form each)."""
    return _NOT_ALNUM.sub("", fold(text))


def email_canonical(text: str) -> str | None:
    """``local+tag@domain`` as ``local@domain``, folded; None if ``text`` is not one
    e-mail address."""
    folded = fold(text)
    if not EMAIL.fullmatch(folded):
        return None
    local, _, domain = folded.partition("@")
    return f"{local.split('+', 1)[0]}@{domain}"


def url_canonical(text: str) -> str | None:
    """A URL as ``host[:port]/path?query#fragment``: scheme dropped, host folded without
    ``www.``, default port and trailing slash dropped, percent-encoding decoded; None if
    ``text`` is not one URL."""
    folded = fold(text)
    if " " in folded or not URL.fullmatch(folded):
        return None
    try:
        parts = urlsplit(folded if "://" in folded else f"http://{folded}")
    except ValueError:  # ``http://[x`` (an unclosed IPv6 host) is text, not a URL
        return None
    host = (parts.hostname or "").removeprefix("www.")
    if not host:
        return None
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{port}"
    path = unquote_plus(parts.path).rstrip("/")
    query = f"?{unquote_plus(parts.query)}" if parts.query else ""
    fragment = f"#{unquote_plus(parts.fragment)}" if parts.fragment else ""
    return f"{host}{path}{query}{fragment}"


def decodings(text: str) -> list[str]:
    """``text``, and what it decodes to: percent-decoded (when it has an escape) and
    base64-decoded (when the whole value is base64 of UTF-8 text), each decoded again
    once."""
    found = [text]
    for value in [text, *_decoded(text)]:
        for decoded in [value, *_decoded(value)]:
            if decoded not in found:
                found.append(decoded)
    return found


def _decoded(text: str) -> list[str]:
    out: list[str] = []
    unquoted = unquote_plus(text)
    if unquoted != text:
        out.append(unquoted)
    stripped = text.strip()
    if _BASE64.fullmatch(stripped):
        padded = stripped + "=" * (-len(stripped) % 4)
        alphabet = b"-_" if "-" in stripped or "_" in stripped else b"+/"
        try:
            value = base64.b64decode(padded.encode(), altchars=alphabet, validate=True).decode()
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return out
        if value.isprintable() and value.strip():
            out.append(value)
    return out


def canonical(text: str) -> set[str]:
    """The compact forms of ``text`` as a whole value: of its decodings, and of their
    e-mail and URL canonical forms. Empty forms are left out."""
    if len(text) < 8 and text.isascii() and text.isalnum():
        return {text.lower()}  # the common word: no decoding, address or URL, no folding
    out: set[str] = set()
    for value in decodings(text):
        forms: list[str | None] = [value]
        if "@" in value:
            forms.append(email_canonical(value))
        if "." in value:  # every URL the pattern takes has a dot (``www.`` or a host's)
            forms.append(url_canonical(value))
        for form in forms:
            if form is not None and (c := compact(form)):
                out.add(c)
    return out


def tokens(text: str) -> set[str]:
    """The compact canonical forms of what a longer text holds that may be a value of
    its own: each e-mail address, URL and whitespace-separated word (and their
    decodings). A short sink value is looked for among these, exactly."""
    plain = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)  # base64 keeps its case
    found = {m.group().strip(".,;:!?") for p in (EMAIL, URL, _WORD) for m in p.finditer(plain)}
    out: set[str] = set()
    for token in found:  # each distinct one once: prose repeats its words
        out |= canonical(token)
    return out


def gram_list(form: str, length: int) -> list[str]:
    """Every substring of ``length`` characters of a compact form, in order (none when
    the form is shorter)."""
    return [form[i : i + length] for i in range(len(form) - length + 1)]
