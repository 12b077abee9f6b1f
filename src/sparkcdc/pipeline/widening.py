"""The one type a routed target's column takes when its source tables disagree.

Sharded tables drift: one shard got ``BIGINT`` where the others have ``INT``, or a wider
``DECIMAL``. The target column must hold every shard's values exactly, so types widen only
where no value changes: integers to the wider integer, integers and decimals to a decimal
with room for both, small integers and floats to double, dates to timestamps, and numbers,
dates, times and booleans to strings (their text). Anything else (a ``BIGINT`` and a
``DOUBLE``, bytes and text, a decimal wider than 38 digits) has no such type, and the
pipeline refuses to start rather than round or garble values.
"""

from __future__ import annotations

from pyspark.sql import types as T

_INTEGRAL_RANK: dict[type[T.DataType], int] = {
    T.ByteType: 0,
    T.ShortType: 1,
    T.IntegerType: 2,
    T.LongType: 3,
}
#: Decimal digits each integral type needs.
_INTEGRAL_DIGITS: dict[type[T.DataType], int] = {
    T.ByteType: 3,
    T.ShortType: 5,
    T.IntegerType: 10,
    T.LongType: 20,
}
_EXACT_IN_DOUBLE = (T.ByteType, T.ShortType, T.IntegerType, T.FloatType, T.DoubleType)
_TEXTUAL = (
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.DecimalType,
    T.FloatType,
    T.DoubleType,
    T.BooleanType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
    T.StringType,
)
MAX_PRECISION = 38


def widen(a: T.DataType, b: T.DataType) -> T.DataType | None:
    """The narrowest type holding every value of ``a`` and of ``b`` unchanged, or None."""
    if a == b:
        return a
    ranks = _INTEGRAL_RANK.get(type(a)), _INTEGRAL_RANK.get(type(b))
    if ranks[0] is not None and ranks[1] is not None:
        return a if ranks[0] >= ranks[1] else b
    left, right = _as_decimal(a), _as_decimal(b)
    if left is not None and right is not None:
        return _wider_decimal(left, right)
    if isinstance(a, _EXACT_IN_DOUBLE) and isinstance(b, _EXACT_IN_DOUBLE):
        return T.DoubleType()
    if {type(a), type(b)} == {T.DateType, T.TimestampType}:
        return T.TimestampType()
    if {type(a), type(b)} == {T.DateType, T.TimestampNTZType}:
        return T.TimestampNTZType()
    if isinstance(a, _TEXTUAL) and isinstance(b, _TEXTUAL) and T.StringType() in (a, b):
        return T.StringType()
    return None


def _as_decimal(t: T.DataType) -> T.DecimalType | None:
    if isinstance(t, T.DecimalType):
        return t
    digits = _INTEGRAL_DIGITS.get(type(t))
    return None if digits is None else T.DecimalType(digits, 0)


def _wider_decimal(a: T.DecimalType, b: T.DecimalType) -> T.DecimalType | None:
    scale = max(a.scale, b.scale)
    whole = max(a.precision - a.scale, b.precision - b.scale)
    if whole + scale > MAX_PRECISION:
        return None
    return T.DecimalType(whole + scale, scale)
