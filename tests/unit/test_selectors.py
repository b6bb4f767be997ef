"""Tests for kubesim.apiserver.selectors.

The tables restate the cases of apimachinery's pkg/labels/selector_test.go and
pkg/fields/selector_test.go, plus the error messages kube-apiserver returns. The Hypothesis
properties compare label matching with a small reference model written here, check that the
canonical string form parses back to the same selector, and that escaped field values survive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.apiserver.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    escape_field_value,
)

# Fragments of the validation messages, spelled out (not imported) so that a change in the
# module's wording fails here.
NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    r"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
NOT_INT = "for 'Gt', 'Lt' operators, the value must be an integer"


def label_error(text: str) -> str:
    with pytest.raises(SelectorError) as info:
        LabelSelector.parse(text)
    return str(info.value)


def field_error(text: str) -> str:
    with pytest.raises(SelectorError) as info:
        FieldSelector.parse(text)
    return str(info.value)


# ---------------------------------------------------------------------------------------------
# Label selectors: parsing and the canonical form
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
)
def test_label_good_strings_restring_without_spaces(text: str) -> None:
    assert str(LabelSelector.parse(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        ("this-is-another-dns.domain.com/key-with-dash in (so,what)", None),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x  notin\t\t\t(abc,def)", "x notin (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in (abc,abc)", "x in (abc)"),
        ("x in ()", "x in ()"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("x in (a,,)", "x in (,a)"),
        ("x in (a,,,)", "x in (,a)"),
        ("x in (a,,,,,,)", "x in (,a)"),
        ("x in (a,,a,,a,,a,,)", "x in (,a)"),
        ("x in (foo,,baz)", "x in (,baz,foo)"),
        ("x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"),
        ("x,y in (a)", "x,y in (a)"),
        ("x=a,y!=b,z in (h,i,j)", None),
        ("a ", "a"),
        # "in" and "notin" are identifiers everywhere except in operator position.
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ("in in (in)", "in in (in)"),
        ("notin=in", "notin=in"),
        # "==" is kept as written, like Go's String().
        ("x==a", "x==a"),
        ("x = a , y == b , z != c", "x=a,y==b,z!=c"),
        ("x>007", "x>007"),
        ("! x", "!x"),
    ],
)
def test_label_parse_canonical_form(text: str, canonical: str | None) -> None:
    sel = LabelSelector.parse(text)
    assert str(sel) == (text if canonical is None else canonical)
    assert LabelSelector.parse(str(sel)) == sel


def test_label_requirements_are_sorted_by_key_whatever_the_input_order() -> None:
    assert str(LabelSelector.parse("x=a,a=x")) == str(LabelSelector.parse("a=x,x=a")) == "a=x,x=a"
    # Same key: the input order is kept (stable sort).
    assert str(LabelSelector.parse("z,z!=a,a")) == "a,z,z!=a"


def test_label_requirement_objects() -> None:
    (req,) = LabelSelector.parse("x notin (b,a,b)").requirements()
    assert (req.key, req.operator, req.values) == ("x", "notin", ("a", "b"))
    ops = [
        r.operator for r in LabelSelector.parse("a=1,b==1,c!=1,d in (1),e notin (1)").requirements()
    ]
    assert ops == ["=", "==", "!=", "in", "notin"]
    ops = [r.operator for r in LabelSelector.parse("a,!b,c>1,d<1").requirements()]
    assert ops == ["exists", "!", "gt", "lt"]


def test_label_selector_equality_and_hash() -> None:
    a = LabelSelector.parse("b=1, a in (y,x)")
    b = LabelSelector.parse("a in (x,y,x),b=1")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, LabelSelector.parse("b=1")}) == 2
    assert a != LabelSelector.parse("a in (x,y),b==1")  # "=" and "==" render differently
    assert repr(a) == "LabelSelector.parse('a in (x,y),b=1')"


def test_label_empty() -> None:
    assert LabelSelector.parse("").empty()
    assert LabelSelector.parse("  \t").empty()
    assert not LabelSelector.parse("a").empty()
    assert LabelSelector.parse("").matches({"x": "y"})
    assert LabelSelector.parse("").matches(None)


def test_label_nul_ends_input_like_go_lexer() -> None:
    # Go's lexer reads bytes and takes NUL for the end: at a token start it stops the scan,
    # right after a token it is swallowed.
    assert LabelSelector.parse("\x00x=y").empty()
    assert str(LabelSelector.parse("x\x00,y")) == "x,y"
    assert str(LabelSelector.parse("x=\x00")) == "x="


# ---------------------------------------------------------------------------------------------
# Label selectors: errors, with kube-apiserver's messages
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x,,y", "found ',', expected: identifier after ','"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        (
            "x nott in (y)",
            "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("a !", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        (
            "a notin(",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
        ),
        ("a in (,", "unable to parse requirement: found '', expected: ',', or identifier"),
        ("a in (,=", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a in", "unable to parse requirement: found '' expected: '('"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),
        ("!(", "unable to parse requirement: found '(', expected: identifier"),
        ("x=(a)", "unable to parse requirement: found '(', expected: identifier"),
        ("x<a", f'unable to parse requirement: values[0]: Invalid value: "a": {NOT_INT}'),
        ("x>", f'unable to parse requirement: values[0]: Invalid value: "": {NOT_INT}'),
        (
            "x>99999999999999999999",  # does not fit in int64
            f'unable to parse requirement: values[0]: Invalid value: "99999999999999999999": '
            f"{NOT_INT}",
        ),
        (
            "x>a-",
            f'unable to parse requirement: [values[0]: Invalid value: "a-": {NOT_INT}, '
            f'values[0][x]: Invalid value: "a-": {VALUE_RULE}]',
        ),
        (
            "x>-1",  # an integer, but not a valid label value
            f'unable to parse requirement: values[0][x]: Invalid value: "-1": {VALUE_RULE}',
        ),
        (
            "x=a||y=b",
            f'unable to parse requirement: values[0][x]: Invalid value: "a||y": {VALUE_RULE}',
        ),
        (
            "app in (ok,b@d,-x)",  # indexes count in the sorted value list
            f'unable to parse requirement: [values[0][app]: Invalid value: "-x": {VALUE_RULE}, '
            f'values[1][app]: Invalid value: "b@d": {VALUE_RULE}]',
        ),
        (
            "x=" + "a" * 64,
            f'unable to parse requirement: values[0][x]: Invalid value: "{"a" * 64}": '
            "must be no more than 63 bytes",
        ),
        (
            "x=-" + "a" * 63,
            f'unable to parse requirement: values[0][x]: Invalid value: "-{"a" * 63}": '
            f"must be no more than 63 bytes; {VALUE_RULE}",
        ),
        (
            'x=a"b\\',  # Go's %q escapes quotes and backslashes
            f'unable to parse requirement: values[0][x]: Invalid value: "a\\"b\\\\": {VALUE_RULE}',
        ),
        (
            "x=a\x01",
            f'unable to parse requirement: values[0][x]: Invalid value: "a\\x01": {VALUE_RULE}',
        ),
        (
            "x=\u00e9",
            f'unable to parse requirement: values[0][x]: Invalid value: "\u00e9": {VALUE_RULE}',
        ),
        # Key errors: the parser has no field path, which Go prints as "<nil>".
        (
            "-a",
            f'unable to parse requirement: <nil>: Invalid value: "-a": name part {NAME_RULE}',
        ),
        (
            "a" * 64,
            f'unable to parse requirement: <nil>: Invalid value: "{"a" * 64}": '
            "name part must be no more than 63 bytes",
        ),
        (
            "/a",
            'unable to parse requirement: <nil>: Invalid value: "/a": '
            "prefix part must be non-empty",
        ),
        (
            "a/",
            'unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; '
            f"name part {NAME_RULE}",
        ),
        (
            "Example.com/a",
            'unable to parse requirement: <nil>: Invalid value: "Example.com/a": '
            f"prefix part {SUBDOMAIN_RULE}",
        ),
        (
            "a/b/c=d",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": '
            f"a valid label key {NAME_RULE} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')",
        ),
        (
            "!a.b/c_",
            f'unable to parse requirement: <nil>: Invalid value: "a.b/c_": name part {NAME_RULE}',
        ),
    ],
)
def test_label_parse_errors(text: str, message: str) -> None:
    assert label_error(text) == message


def test_label_prefix_length_limit() -> None:
    prefix = ".".join(["a" * 63] * 4)  # 255 bytes, each DNS label valid
    assert label_error(f"{prefix}/k") == (
        f'unable to parse requirement: <nil>: Invalid value: "{prefix}/k": '
        "prefix part must be no more than 253 bytes"
    )
    ok = ".".join(["a" * 63] * 3 + ["a" * 61])  # 253 bytes
    assert str(LabelSelector.parse(f"{ok}/k")) == f"{ok}/k"


def test_selector_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unable to parse requirement"):
        LabelSelector.parse("x<a")


# ---------------------------------------------------------------------------------------------
# Label selectors: matching
# ---------------------------------------------------------------------------------------------

LABELSET = {"foo": "bar", "baz": "blah"}


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x==y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("foo=bar", LABELSET, True),
        ("baz=blah", LABELSET, True),
        ("foo=bar,baz=blah", LABELSET, True),
        ("foo=blah", LABELSET, False),
        ("baz=bar", LABELSET, False),
        ("foo=bar,foobar=bar,baz=blah", LABELSET, False),
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("x in ()", {"x": ""}, True),
        ("x=", {"x": ""}, True),
        ("x=", {"x": "a"}, False),
        ("x in (a,b)", {"x": "b"}, True),
        ("x notin (a,b)", {"x": "b"}, False),
        ("x notin (a,b)", {"x": "c"}, True),
        ("z>1", {"z": "2"}, True),
        ("z>1", {"z": "v2"}, False),
    ],
)
def test_label_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert LabelSelector.parse(text).matches(labels) is expected


@pytest.mark.parametrize(
    ("text", "when_missing"),
    [
        ("k=v", False),
        ("k==v", False),
        ("k in (v)", False),
        ("k in ()", False),
        ("k=", False),
        ("k!=v", True),
        ("k!=", True),
        ("k notin (v)", True),
        ("k notin ()", True),
        ("k", False),
        ("!k", True),
        ("k>0", False),
        ("k<9", False),
    ],
)
def test_label_operators_on_a_missing_key(text: str, when_missing: bool) -> None:
    sel = LabelSelector.parse(text)
    assert sel.matches({}) is when_missing
    assert sel.matches(None) is when_missing
    assert sel.matches({"other": "v"}) is when_missing


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("k>5", "6", True),
        ("k>5", "5", False),
        ("k<5", "4", True),
        ("k<5", "5", False),
        ("k>5", "007", True),  # leading zeros parse
        ("k>5", "+6", True),  # so does a sign
        ("k<0", "-4", True),
        ("k>007", "8", True),
        ("k>0", "9223372036854775807", True),
        ("k>0", "9223372036854775808", False),  # overflows int64: not an integer
        ("k<0", "-9223372036854775808", True),
        ("k>0", "1_000", False),  # Python's int() would accept these
        ("k>0", " 1", False),
        ("k>0", "\u0661", False),
        ("k>0", "", False),
        ("k<9", "v1", False),
        ("k>0", "0" * 100 + "1", True),
    ],
)
def test_label_gt_lt_need_an_integer_label(text: str, value: str, expected: bool) -> None:
    assert LabelSelector.parse(text).matches({"k": value}) is expected


# ---------------------------------------------------------------------------------------------
# Field selectors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b", r"a=\\,b=v2"]
)
def test_field_good_strings_restring(text: str) -> None:
    assert str(FieldSelector.parse(text)) == text


@pytest.mark.parametrize(
    ("text", "requirements"),
    [
        ("a=avalue", (("a", "=", "avalue"),)),
        (
            "a=avalue,b==bvalue,c!=cvalue",
            (("a", "=", "avalue"), ("b", "=", "bvalue"), ("c", "!=", "cvalue")),
        ),
        ("x=a,a=x", (("a", "=", "x"), ("x", "=", "a"))),
        (r"k=\,,k2=v2", (("k2", "=", "v2"), ("k", "=", ","))),
        (r"k=\\,k2=v2", (("k2", "=", "v2"), ("k", "=", "\\"))),
        (r"k=\\\,,k2=v2", (("k2", "=", "v2"), ("k", "=", "\\,"))),
        (r"k=\=", (("k", "=", "="),)),
        ("a=a,", (("a", "=", "a"),)),
        (",a=a", (("a", "=", "a"),)),
        ("a=b,,c=d", (("a", "=", "b"), ("c", "=", "d"))),
        ("\ud568=\uc218,\ubaa9=\ub85d", (("\ubaa9", "=", "\ub85d"), ("\ud568", "=", "\uc218"))),
        ("a=", (("a", "=", ""),)),
        ("a!=", (("a", "!=", ""),)),
        ("=x", (("", "=", "x"),)),
        ("a!!=b", (("a!", "!=", "b"),)),  # the first operator splits the term
        ("a=!b", (("a", "=", "!b"),)),
        # A term with an empty field and an empty value is dropped, as Go's Transform does.
        ("=", ()),
        ("==", ()),
        ("!=", ()),
        ("a=b,=", (("a", "=", "b"),)),
    ],
)
def test_field_parse(text: str, requirements: tuple[tuple[str, str, str], ...]) -> None:
    sel = FieldSelector.parse(text)
    assert sel.requirements() == requirements
    assert sel.empty() is (requirements == ())
    assert FieldSelector.parse(str(sel)) == sel


def test_field_double_equals_is_normalised() -> None:
    assert FieldSelector.parse("a==b") == FieldSelector.parse("a=b")
    assert str(FieldSelector.parse("b==2,a==1")) == "a=1,b=2"
    assert hash(FieldSelector.parse("a==b")) == hash(FieldSelector.parse("a=b"))
    assert repr(FieldSelector.parse("a==b")) == "FieldSelector.parse('a=b')"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
        # Terms are sorted before parsing, so "b" is reported before "c)" and "x in (a".
        ("x in (a,b,c)", "invalid selector: 'x in (a,b,c)'; can't understand 'b'"),
        ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),
        ("x==a==b", "invalid field selector: unescaped character in value: 61"),
        (r"x=a\,b,c", "invalid selector: 'x=a\\,b,c'; can't understand 'c'"),
        ("k=\\", "invalid field selector: invalid escape sequence: \\"),
        ("k=\\\\\\", "invalid field selector: invalid escape sequence: \\"),
        (r"k=\a", "invalid field selector: invalid escape sequence: \\a"),
        ("k=a=b", "invalid field selector: unescaped character in value: 61"),
    ],
)
def test_field_parse_errors(text: str, message: str) -> None:
    assert field_error(text) == message


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("", ""), ("a", "a"), ("=", r"\="), (",", r"\,"), ("\\", "\\\\"), (r"\=\,\ ", r"\\\=\\\,\\ ")],
)
def test_escape_field_value(raw: str, escaped: str) -> None:
    assert escape_field_value(raw) == escaped
    assert FieldSelector.parse("f=" + escaped).requirements() == (("f", "=", raw),)


FIELDSET = {"foo": "bar", "baz": "blah", "complex": "=value\\,\\"}


@pytest.mark.parametrize(
    ("text", "fields", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x==y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("foo=bar", FIELDSET, True),
        ("foo=bar,baz=blah", FIELDSET, True),
        (r"foo=bar,baz=blah,complex=\=value\\\,\\", FIELDSET, True),
        ("foo=blah", FIELDSET, False),
        ("foo=bar,foobar=bar,baz=blah", FIELDSET, False),
        # A missing field reads as "" (fields.Set.Get).
        ("spec.nodeName=", {}, True),
        ("spec.nodeName!=", {}, False),
        ("spec.nodeName!=n1", {}, True),
        ("spec.nodeName=n1", {}, False),
        ("spec.nodeName!=", {"spec.nodeName": "n1"}, True),
    ],
)
def test_field_matches(text: str, fields: dict[str, str], expected: bool) -> None:
    assert FieldSelector.parse(text).matches(fields) is expected


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

# Few keys and values, so that generated requirements and label sets overlap often.
KEYS = ["a", "b", "app", "example.com/tier", "x.y_z-1", "in"]
VALUES = ["", "v", "w", "1", "2", "10", "007", "in", "notin"]
INTEGERS = ["0", "1", "5", "10", "007"]
LABEL_VALUES = [*VALUES, "x1", "+3", "-4", "99999999999999999999"]
WHITESPACE = st.sampled_from(["", " ", "\t", "\n", "\r", "  "])
SPACE = st.sampled_from([" ", "\t", "\n", " \r "])

Requirement = tuple[str, str, list[str]]


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    key = draw(st.sampled_from(KEYS))
    op = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!", ">", "<"]))
    if op in ("in", "notin"):
        values = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=4))
    elif op in (">", "<"):
        values = [draw(st.sampled_from(INTEGERS))]
    elif op in ("exists", "!"):
        values = []
    else:
        values = [draw(st.sampled_from(VALUES))]
    return key, op, values


@st.composite
def rendered(draw: st.DrawFn, reqs: list[Requirement]) -> str:
    """Selector text for reqs, with the whitespace Go's lexer allows between tokens."""
    parts = []
    for key, op, values in reqs:
        ws = [draw(WHITESPACE) for _ in range(4)]
        if op == "exists":
            text = ws[0] + key + ws[1]
        elif op == "!":
            text = ws[0] + "!" + ws[1] + key + ws[2]
        elif op in ("in", "notin"):
            # Keywords need a separator from the key; an empty value list is written "()".
            text = f"{ws[0]}{key}{draw(SPACE)}{op}{ws[1]}({','.join(values)}){ws[2]}"
        else:
            text = ws[0] + key + ws[1] + op + ws[2] + values[0] + ws[3]
        parts.append(text)
    return ",".join(parts)


INT64 = re.compile(r"[+-]?[0-9]+")


def reference_matches(reqs: list[Requirement], labels: Mapping[str, str]) -> bool:
    """Requirement.Matches as documented in apimachinery, written as plainly as possible."""
    for key, op, values in reqs:
        present = key in labels
        value = labels.get(key, "")
        if op in ("=", "==", "in"):
            ok = present and value in values
        elif op in ("!=", "notin"):
            ok = not present or value not in values
        elif op == "exists":
            ok = present
        elif op == "!":
            ok = not present
        else:
            number = int(value) if INT64.fullmatch(value) else None
            if number is None or not -(2**63) <= number < 2**63:
                ok = False
            elif op == ">":
                ok = number > int(values[0])
            else:
                ok = number < int(values[0])
        if not ok:
            return False
    return True


label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(LABEL_VALUES), max_size=5)


@settings(max_examples=400)
@given(data=st.data(), reqs=st.lists(requirements(), max_size=5), labels=label_sets)
def test_label_matching_agrees_with_reference_model(
    data: st.DataObject, reqs: list[Requirement], labels: dict[str, str]
) -> None:
    text = data.draw(rendered(reqs), label="text")
    sel = LabelSelector.parse(text)
    assert len(sel.requirements()) == len(reqs)
    assert sel.empty() is (not reqs)
    assert sel.matches(labels) is reference_matches(reqs, labels)


@given(data=st.data(), reqs=st.lists(requirements(), max_size=5), labels=label_sets)
def test_label_canonical_form_round_trips(
    data: st.DataObject, reqs: list[Requirement], labels: dict[str, str]
) -> None:
    sel = LabelSelector.parse(data.draw(rendered(reqs)))
    again = LabelSelector.parse(str(sel))
    assert again == sel
    assert str(again) == str(sel)
    assert again.matches(labels) is sel.matches(labels)


# Fragments that exercise every lexer path, keywords and NUL included.
SELECTOR_PIECES = st.sampled_from(
    [*" \t=!(),<>abxz019./-_", "\x00", "in", "notin", "==", "!=", " in ", " notin "]
)


@given(
    text=st.lists(SELECTOR_PIECES, max_size=20).map("".join),
    labels=st.dictionaries(st.sampled_from(["a", "b", "x", "z"]), st.sampled_from(VALUES)),
)
def test_label_parse_of_arbitrary_text_fails_cleanly_or_round_trips(
    text: str, labels: dict[str, str]
) -> None:
    try:
        sel = LabelSelector.parse(text)
    except SelectorError:
        return  # any other exception type fails the test
    again = LabelSelector.parse(str(sel))
    assert again == sel
    assert again.matches(labels) is sel.matches(labels)


FIELD_NAMES = st.sampled_from(["metadata.name", "metadata.namespace", "spec.nodeName", "x"])
FIELD_VALUES = st.text(alphabet=st.sampled_from([*",=\\!ab ", "\u00e9", "\ud568"]))


@given(value=FIELD_VALUES)
def test_field_value_survives_escape_and_parse(value: str) -> None:
    sel = FieldSelector.parse("spec.nodeName=" + escape_field_value(value))
    assert sel.requirements() == (("spec.nodeName", "=", value),)
    assert sel.matches({"spec.nodeName": value})
    assert not sel.matches({"spec.nodeName": value + ","})
    negated = FieldSelector.parse("spec.nodeName!=" + escape_field_value(value))
    assert not negated.matches({"spec.nodeName": value})


@given(
    terms=st.lists(
        st.tuples(FIELD_NAMES, st.sampled_from(["=", "==", "!="]), FIELD_VALUES), max_size=4
    ),
    fields=st.dictionaries(FIELD_NAMES, FIELD_VALUES),
)
def test_field_selector_terms_are_anded_and_round_trip(
    terms: list[tuple[str, str, str]], fields: dict[str, str]
) -> None:
    sel = FieldSelector.parse(",".join(f + op + escape_field_value(v) for f, op, v in terms))
    expected = sorted((f, "!=" if op == "!=" else "=", v) for f, op, v in terms)
    assert sorted(sel.requirements()) == expected
    want = all((fields.get(f, "") == v) is (op != "!=") for f, op, v in terms)
    assert sel.matches(fields) is want
    again = FieldSelector.parse(str(sel))
    assert again == sel
    assert str(again) == str(sel)
