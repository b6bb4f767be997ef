"""Label and field selectors, parsed and matched the way kube-apiserver does it.

Contract:

* :meth:`LabelSelector.parse` accepts exactly the language of apimachinery ``labels.Parse``
  (``pkg/labels/selector.go``): comma-separated requirements ``k=v``, ``k==v``, ``k!=v``,
  ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``, ``k>n`` and ``k<n``, with the same lexer
  (whitespace is space, tab, CR and LF), the same key/value validation
  (``pkg/api/validate/content``) and the same error messages. :meth:`LabelSelector.matches`
  follows ``Requirement.Matches``: ``!=`` and ``notin`` match objects that lack the key, while
  ``=``, ``==``, ``in``, ``gt`` and ``lt`` need it.
* :meth:`FieldSelector.parse` accepts the language of ``fields.ParseSelector``
  (``pkg/fields/selector.go``): comma-separated ``f=v``, ``f==v``, ``f!=v`` with ``\\``, ``,``
  and ``=`` backslash-escaped in values. A field missing from the object compares as ``""``
  (``fields.Set.Get``).
* Every syntax error raises :class:`SelectorError` whose message is the text kube-apiserver puts
  in the ``message`` of its 400 ``BadRequest`` Status (the list handler wraps ``err.Error()``
  unchanged).
* Selectors are immutable and hashable; ``str()`` gives a canonical form that parses back to an
  equal selector. The empty string selects everything.

Parsing happens once per request; :meth:`matches` runs for every event and every watcher, so
parsing precomputes flat tuples (value sets, integer bounds) and matching only does dict
look-ups.

Messages follow apimachinery v0.35+ (Kubernetes 1.35). The only older difference that a parser
can reach is a key with more than one ``/``, which 1.34 and earlier called "a qualified name"
rather than "a valid label key".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, NamedTuple

from kubesim.apiserver.go_values import go_quote

__all__ = [
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "SelectorError",
    "escape_field_value",
]


class SelectorError(ValueError):
    """A selector does not parse. ``str(err)`` is kube-apiserver's message for it."""


# ---------------------------------------------------------------------------------------------
# Label key and value validation (apimachinery pkg/api/validate/content: IsLabelKey, IsLabelValue)
# ---------------------------------------------------------------------------------------------

_LABEL_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT: Final = f"({_LABEL_NAME_FMT})?"
_DNS1123_SUBDOMAIN_FMT: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
# The patterns are compiled from the very strings quoted in the messages, as Go does.
_LABEL_NAME_RE: Final = re.compile(_LABEL_NAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)

_LABEL_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_LABEL_MAX_LEN: Final = 63
_DNS1123_SUBDOMAIN_MAX_LEN: Final = 253


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # Go's content.RegexError; the doubled space in "',  or '" is in the original.
    shown = "".join(("" if i == 0 else " or ") + f"'{ex}', " for i, ex in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _byte_len(s: str) -> int:
    # Go measures length in UTF-8 bytes.
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} bytes"


def _dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > _DNS1123_SUBDOMAIN_MAX_LEN:
        errs.append(_too_long(_DNS1123_SUBDOMAIN_MAX_LEN))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def _label_key_errors(key: str) -> list[str]:
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_LABEL_NAME_MSG, _LABEL_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errs = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in _dns1123_subdomain_errors(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > _LABEL_MAX_LEN:
        errs.append("name part " + _too_long(_LABEL_MAX_LEN))
    if not _LABEL_NAME_RE.fullmatch(name):
        errs.append(
            "name part "
            + _regex_error(_LABEL_NAME_MSG, _LABEL_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > _LABEL_MAX_LEN:
        errs.append(_too_long(_LABEL_MAX_LEN))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


def _invalid(path: str, value: str, detail: str) -> str:
    # field.Invalid(...).Error() for a string BadValue.
    return f"{path}: Invalid value: {go_quote(value)}: {detail}"


def _aggregate(errors: list[str]) -> str:
    # utilerrors.Aggregate.Error(): duplicates dropped, brackets only around several errors.
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


_INT64_RE: Final = re.compile(r"([+-]?)0*([0-9]+)")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or None where Go returns an error.

    Python's ``int()`` is laxer (whitespace, ``_``, non-ASCII digits), so the syntax is checked
    first; leading zeros are dropped before converting so that huge inputs stay cheap.
    """
    m = _INT64_RE.fullmatch(text)
    if m is None or len(m.group(2)) > 19:
        return None
    n = int(m.group(2))
    if m.group(1) == "-":
        n = -n
    return n if _INT64_MIN <= n <= _INT64_MAX else None


# ---------------------------------------------------------------------------------------------
# Label selectors
# ---------------------------------------------------------------------------------------------

# Operator names are apimachinery's selection.Operator strings.
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
IN: Final = "in"
NOT_IN: Final = "notin"
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_BINARY_OPERATORS: Final = "in, notin, =, ==, !=, gt, lt"  # as listed in Go's error message
_INFIX: Final = {
    EQUALS: "=",
    DOUBLE_EQUALS: "==",
    NOT_EQUALS: "!=",
    IN: " in ",
    NOT_IN: " notin ",
    GREATER_THAN: ">",
    LESS_THAN: "<",
}


class LabelRequirement(NamedTuple):
    """One parsed requirement. ``values`` is sorted and duplicate-free for ``in``/``notin``."""

    key: str
    operator: str
    values: tuple[str, ...]

    def __str__(self) -> str:
        # Requirement.String(); "==" is kept as written, like Go.
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(self.values)
        if self.operator in (IN, NOT_IN):
            joined = f"({joined})"
        return self.key + _INFIX[self.operator] + joined


# Token kinds. Special symbols and the keywords "in"/"notin" are their own kind.
_IDENT: Final = "<identifier>"
_END: Final = "<end>"
_KEYWORDS: Final = frozenset({IN, NOT_IN})
_OPERATOR_TOKENS: Final = {
    IN: IN,
    NOT_IN: NOT_IN,
    "=": EQUALS,
    "==": DOUBLE_EQUALS,
    "!=": NOT_EQUALS,
    ">": GREATER_THAN,
    "<": LESS_THAN,
}

# One token of Go's label lexer. Go reads byte by byte and treats NUL like the end of input: a
# NUL where a token would start ends the selector, and one right after a token is swallowed.
_LABEL_TOKEN_RE: Final = re.compile(
    r"[ \t\r\n]*(?:(?P<symbol>==|!=|[=!(),<>])|(?P<word>[^ \t\r\n=!(),<>\x00]+))?\x00?"
)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while True:
        m = _LABEL_TOKEN_RE.match(text, pos)
        assert m is not None  # every group is optional, so the pattern always matches
        pos = m.end()
        if m["symbol"] is not None:
            tokens.append((m["symbol"], m["symbol"]))
        elif m["word"] is not None:
            word = m["word"]
            tokens.append((word if word in _KEYWORDS else _IDENT, word))
        else:
            tokens.append((_END, ""))
            return tokens


class _LabelParser:
    """Recursive descent over the token list, one method per Go parser function.

    Keywords are identifiers everywhere except in operator position, so ``in in (in)`` is a
    valid selector. Reading past the end keeps returning the end token.
    """

    def __init__(self, text: str) -> None:
        self._tokens = _tokenize(text)
        self._pos = 0

    def _peek(self, *, operator: bool = False) -> tuple[str, str]:
        kind, lit = self._tokens[min(self._pos, len(self._tokens) - 1)]
        if kind in _KEYWORDS and not operator:
            kind = _IDENT
        return kind, lit

    def _take(self, *, operator: bool = False) -> tuple[str, str]:
        token = self._peek(operator=operator)
        self._pos += 1
        return token

    def parse(self) -> list[LabelRequirement]:
        requirements: list[LabelRequirement] = []
        while True:
            kind, lit = self._peek()
            if kind == _END:
                return requirements
            if kind not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            kind, lit = self._take()
            if kind == _END:
                return requirements
            if kind != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            kind, lit = self._peek()
            if kind not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def _requirement(self) -> LabelRequirement:
        negated = False
        kind, key = self._take()
        if kind == "!":
            negated = True
            kind, key = self._take()
        if kind != _IDENT:
            raise SelectorError(f"found '{key}', expected: identifier")
        if errs := _label_key_errors(key):
            # The parser has no field path, and Go prints a nil *field.Path as "<nil>".
            raise SelectorError(_invalid("<nil>", key, "; ".join(errs)))
        if negated:
            # Anything after "!key" other than "," or the end fails in parse(), as in Go.
            return LabelRequirement(key, DOES_NOT_EXIST, ())
        if self._peek()[0] in (_END, ","):
            return LabelRequirement(key, EXISTS, ())
        op = self._operator()
        values = self._value_set() if op in (IN, NOT_IN) else (self._exact_value(),)
        _validate_values(key, op, values)
        return LabelRequirement(key, op, values)

    def _operator(self) -> str:
        kind, lit = self._take(operator=True)
        op = _OPERATOR_TOKENS.get(kind)
        if op is None:
            raise SelectorError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return op

    def _value_set(self) -> tuple[str, ...]:
        kind, lit = self._take()
        if kind != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        kind, lit = self._peek()
        if kind == ")":  # "()" means the single empty value
            self._take()
            return ("",)
        if kind not in (_IDENT, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values: set[str] = set()
        # A comma at the start, next to another comma or before ")" contributes an empty value.
        while True:
            kind, lit = self._take()
            if kind == _IDENT:
                values.add(lit)
                kind, lit = self._peek()
                if kind == ")":
                    break
                if kind != ",":
                    raise SelectorError(f"found '{lit}', expected: ',' or ')'")
            elif kind == ",":
                if not values:
                    values.add("")
                kind = self._peek()[0]
                if kind in (",", ")"):
                    values.add("")
                if kind == ")":
                    break
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")
        self._take()  # the ")" seen above
        # Go collects values in a sets.String and lists them sorted.
        return tuple(sorted(values))

    def _exact_value(self) -> str:
        kind, lit = self._peek()
        if kind in (_END, ","):  # "x=" and "x=,y" compare with the empty value
            return ""
        self._take()
        if kind != _IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return lit


def _validate_values(key: str, op: str, values: tuple[str, ...]) -> None:
    # The value checks of labels.NewRequirement; the parser already guarantees the counts.
    errors = []
    if op in (GREATER_THAN, LESS_THAN) and _parse_int64(values[0]) is None:
        errors.append(
            _invalid(
                "values[0]", values[0], "for 'Gt', 'Lt' operators, the value must be an integer"
            )
        )
    for i, value in enumerate(values):
        if errs := _label_value_errors(value):
            errors.append(_invalid(f"values[{i}][{key}]", value, "; ".join(errs)))
    if errors:
        raise SelectorError(_aggregate(errors))


# Compiled requirement kinds, so that matches() branches on small ints.
_M_IN, _M_NOT_IN, _M_EXISTS, _M_NOT_EXISTS, _M_GT, _M_LT = range(6)
_MATCH_KIND: Final = {
    EQUALS: _M_IN,
    DOUBLE_EQUALS: _M_IN,
    IN: _M_IN,
    NOT_EQUALS: _M_NOT_IN,
    NOT_IN: _M_NOT_IN,
    EXISTS: _M_EXISTS,
    DOES_NOT_EXIST: _M_NOT_EXISTS,
    GREATER_THAN: _M_GT,
    LESS_THAN: _M_LT,
}
_NO_LABELS: Final[Mapping[str, str]] = {}


def _compile_label_requirement(r: LabelRequirement) -> tuple[str, int, frozenset[str], int]:
    """(key, match kind, value set, integer bound for gt/lt) for the hot loop in matches()."""
    bound = 0
    if r.operator in (GREATER_THAN, LESS_THAN):
        parsed = _parse_int64(r.values[0])
        if parsed is None:
            raise ValueError(f"{r.operator} needs an integer value, got {r.values[0]!r}")
        bound = parsed
    return r.key, _MATCH_KIND[r.operator], frozenset(r.values), bound


class LabelSelector:
    """A parsed label selector: the AND of its requirements, sorted by key."""

    __slots__ = ("_compiled", "_requirements")

    def __init__(self, requirements: tuple[LabelRequirement, ...] = ()) -> None:
        """Build from requirements that are already valid; untrusted text goes to parse()."""
        # Go sorts by key with an unstable sort; a stable one gives the same order whenever Go's
        # is deterministic (it uses insertion sort up to 12 requirements).
        self._requirements = tuple(sorted(requirements, key=lambda r: r.key))
        self._compiled = tuple(map(_compile_label_requirement, self._requirements))

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse ``labelSelector`` syntax; raise :class:`SelectorError` like ``labels.Parse``."""
        return cls(tuple(_LabelParser(text).parse()))

    def requirements(self) -> tuple[LabelRequirement, ...]:
        return self._requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected (None means no labels)."""
        if labels is None:
            labels = _NO_LABELS
        for key, kind, values, bound in self._compiled:
            if kind == _M_IN:
                value = labels.get(key)
                if value is None or value not in values:
                    return False
            elif kind == _M_NOT_IN:
                value = labels.get(key)
                if value is not None and value in values:
                    return False
            elif kind == _M_EXISTS:
                if key not in labels:
                    return False
            elif kind == _M_NOT_EXISTS:
                if key in labels:
                    return False
            else:
                value = labels.get(key)
                number = None if value is None else _parse_int64(value)
                if number is None or not (number > bound if kind == _M_GT else number < bound):
                    return False
        return True

    def empty(self) -> bool:
        return not self._requirements

    def __str__(self) -> str:
        return ",".join(map(str, self._requirements))

    def __repr__(self) -> str:
        return f"LabelSelector.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash(self._requirements)


# ---------------------------------------------------------------------------------------------
# Field selectors
# ---------------------------------------------------------------------------------------------

# splitTerm: the first position where "!=", "==" or "=" starts (tried in that order) splits the
# term. The field name is never unescaped, so an operator inside it cannot be escaped.
_FIELD_TERM_RE: Final = re.compile(r"(.*?)(!=|==|=)(.*)", re.DOTALL)


def escape_field_value(value: str) -> str:
    """``fields.EscapeValue``: backslash-escape ``\\``, ``,`` and ``=`` for a field selector."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(raw: str) -> str:
    # fields.UnescapeValue, with its error messages (a bare "," or "=" is reported by code point).
    if not any(c in raw for c in "\\,="):
        return raw
    out: list[str] = []
    escaped = False
    for ch in raw:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_field_terms(text: str) -> list[str]:
    # splitTerms: split on commas that are not escaped; the escapes stay in the terms.
    terms = []
    start = 0
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _render_field_term(field: str, op: str, value: str) -> str:
    return field + op + escape_field_value(value)


class FieldSelector:
    """A parsed field selector: the AND of ``(field, op, value)`` with op ``=`` or ``!=``.

    Requirements are ordered by their rendered form. Go orders the raw terms instead, which is
    the same order unless the input spelled an operator ``==``.
    """

    __slots__ = ("_compiled", "_requirements")

    def __init__(self, requirements: tuple[tuple[str, str, str], ...] = ()) -> None:
        """Build from ``(field, op, value)`` with op ``=`` or ``!=``; text goes to parse()."""
        self._requirements = tuple(sorted(requirements, key=lambda r: _render_field_term(*r)))
        self._compiled = tuple((f, op == "=", v) for f, op, v in self._requirements)

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """Parse ``fieldSelector`` syntax; raise :class:`SelectorError` like ``ParseSelector``."""
        requirements = []
        # Go sorts the raw terms before parsing them, which decides which error is reported.
        for term in sorted(_split_field_terms(text)):
            if not term:
                continue  # "a=b,,c=d" and a trailing comma are fine
            m = _FIELD_TERM_RE.fullmatch(term)
            if m is None:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
            field, op, raw_value = m.groups()
            value = _unescape_field_value(raw_value)
            # ParseSelector applies an identity transform, and Transform drops any term whose
            # field and value are both empty: "=" and "!=" alone select everything.
            if field or value:
                requirements.append((field, "!=" if op == "!=" else "=", value))
        return cls(tuple(requirements))

    def requirements(self) -> tuple[tuple[str, str, str], ...]:
        return self._requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether an object with these selectable fields is selected; absent fields are ""."""
        for field, want_equal, value in self._compiled:
            if (fields.get(field, "") == value) is not want_equal:
                return False
        return True

    def empty(self) -> bool:
        return not self._requirements

    def __str__(self) -> str:
        return ",".join(_render_field_term(*r) for r in self._requirements)

    def __repr__(self) -> str:
        return f"FieldSelector.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelector):
            return NotImplemented
        return self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash(self._requirements)
