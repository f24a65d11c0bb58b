"""Reading a request's fields: the right type, the right length, finite numbers,
or a ProtocolError naming the field (nothing is applied from a bad request)."""

from __future__ import annotations

import math

import numpy as np

from .wire import ProtocolError

_MISSING = object()
_NUMBERS = {int, float}


def _get(request: dict, key: str, default):
    value = request.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise ProtocolError("missing_field", f"'{request.get('op')}' needs the field '{key}'")
        return default
    return value


def string(request: dict, key: str, default=_MISSING) -> str:
    value = _get(request, key, default)
    if value is not default and not isinstance(value, str):
        raise ProtocolError("bad_value", f"'{key}' must be a string, not {type(value).__name__}")
    return value


def boolean(request: dict, key: str, default=_MISSING) -> bool:
    value = _get(request, key, default)
    if value is not default and not isinstance(value, bool):
        raise ProtocolError("bad_value", f"'{key}' must be true or false, not {value!r:.40}")
    return value


def number(request: dict, key: str, default=_MISSING) -> float:
    value = _get(request, key, default)
    if value is default:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError("bad_value", f"'{key}' must be a number, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ProtocolError("bad_value", f"'{key}' must be finite, not {value}")
    return float(value)


def integer(request: dict, key: str, default=_MISSING, low: int | None = None,
            high: int | None = None) -> int:
    value = _get(request, key, default)
    if value is default:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError("bad_value", f"'{key}' must be an integer, not {value!r:.40}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"{low if low is not None else '-inf'} .. {high if high is not None else 'inf'}"
        raise ProtocolError("bad_value", f"'{key}' = {value} is outside {bounds}")
    return value


def mapping(request: dict, key: str, default=_MISSING) -> dict:
    value = _get(request, key, default)
    if value is not default and not isinstance(value, dict):
        raise ProtocolError("bad_value", f"'{key}' must be a map, not {type(value).__name__}")
    return value


def as_vector(value, what: str, length: int | None = None) -> np.ndarray:
    """A list of finite numbers (of `length`, when given) as a float64 array."""
    if isinstance(value, (bytes, str, dict)) or not hasattr(value, "__len__"):
        raise ProtocolError("bad_value", f"{what} must be a list of numbers, not {type(value).__name__}")
    if length is not None and len(value) != length:
        raise ProtocolError("dim_mismatch", f"{what} has {len(value)} values; it takes {length}")
    if not set(map(type, value)) <= _NUMBERS:  # (bool is not int here: no True for 1.0)
        raise ProtocolError("bad_value", f"{what} must hold numbers only")
    array = np.asarray(value, dtype=np.float64)
    if not np.isfinite(array).all():
        raise ProtocolError("bad_value", f"{what} holds a NaN or an infinity")
    return array


def vector(request: dict, key: str, length: int | None = None, default=_MISSING) -> np.ndarray:
    value = _get(request, key, default)
    if value is default:
        return value
    return as_vector(value, f"'{key}'", length)
