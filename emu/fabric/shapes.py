"""What ofan-emu reads from files and from other programs (ofan-topo's JSON,
the state file, the hosts' and the simulator's reports) is checked against
a shape before any of it is used, so that a torn, old or foreign document
gets one error naming what is wrong instead of a KeyError or TypeError deep
in the code that reads it.

gives:    check(value, shape, where) -> value, or ShapeError; parse_json(text,
          shape, where) -> the document, or ShapeError
A shape is one of:
    int, float, str, bool     that type (an int is not a bool; a float is any
                              finite number)
    Optional(s)               None or s
    [s]                       a list of s
    {"key": s, "key?": s}     a map with these keys (those marked ? may be
                              missing; others may be there too)
    MapOf(s)                  a map of string keys to s
    OneOf(a, b, ...)          one of these values
"""
import json
import math
from dataclasses import dataclass
from typing import Any


class ShapeError(ValueError):
    """A document that does not have the shape its reader needs."""


@dataclass(frozen=True)
class Optional:
    shape: Any


@dataclass(frozen=True)
class MapOf:
    shape: Any


class OneOf:
    def __init__(self, *values: Any) -> None:
        self.values = values


def _what(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _finite(v: int | float) -> bool:
    """A number a float holds, not inf or NaN (an int past 1.8e308 is not)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _key(key: str) -> str:
    """A map key as the error names it: as is, or quoted when it has
    characters that would break the one-line message."""
    return key if key.isprintable() and "." not in key else _what(key)


def check(value: Any, shape: Any, where: str) -> Any:
    """value if it has `shape`; ShapeError naming the first place it differs."""
    if isinstance(shape, Optional):
        if value is not None:
            check(value, shape.shape, where)
    elif isinstance(shape, OneOf):
        if not any(type(value) is type(v) and value == v for v in shape.values):
            raise ShapeError(f"{where}: {_what(value)} (one of "
                             f"{', '.join(map(repr, shape.values))})")
    elif shape is bool:
        if not isinstance(value, bool):
            raise ShapeError(f"{where}: {_what(value)} is not true/false")
    elif shape is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ShapeError(f"{where}: {_what(value)} is not an integer")
    elif shape is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or \
                not _finite(value):
            raise ShapeError(f"{where}: {_what(value)} is not a number")
    elif shape is str:
        if not isinstance(value, str):
            raise ShapeError(f"{where}: {_what(value)} is not a string")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise ShapeError(f"{where}: {_what(value)} is not a list")
        for i, item in enumerate(value):
            check(item, shape[0], f"{where}[{i}]")
    elif isinstance(shape, MapOf):
        if not isinstance(value, dict):
            raise ShapeError(f"{where}: {_what(value)} is not a map")
        for key, item in value.items():
            if not isinstance(key, str):
                raise ShapeError(f"{where}: key {_what(key)} is not a string")
            check(item, shape.shape, f"{where}.{_key(key)}")
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ShapeError(f"{where}: {_what(value)} is not a map")
        for key, sub in shape.items():
            optional = key.endswith("?")
            key = key.rstrip("?")
            if key not in value:
                if optional:
                    continue
                raise ShapeError(f"{where}: no {key!r}")
            check(value[key], sub, f"{where}.{key}")
    else:
        raise TypeError(f"shapes.check: {shape!r} is not a shape")
    return value


def parse_json(text: str, shape: Any, where: str) -> Any:
    """The JSON document in `text` if it has `shape`; ShapeError otherwise."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ShapeError(f"{where}: not JSON ({e})") from None
    return check(doc, shape, where)
