"""Plain option values (str, int, float, bool, a list of str) taken without pydantic.

typer 0.29 checks every option's value through a pydantic TypeAdapter it builds at first use:
importing pydantic and building one adapter per option of `gpubottle run` took ~0.1 s of CPU at
every gpubottle command (a parse alone 0.21 -> 0.12 s on the 2-core VM), before the script's first
line (0.191 -> 0.130 s after launch, median of 15): a cost of the user's run, said in its account.
Our options are all plain types whose text click has already split out, so a well-formed value is
converted here directly; anything else (a malformed number, another type, a parser, a range) goes to
typer's own coercion, which accepts or rejects it with its own message, as before.

Installed through typer's parameter class (`_TyperParameter.get_runtime_param`, private): where a
typer lacks it (older or newer versions), nothing is installed and typer works as it ships.
tests/unit/commands/test_plain_options.py holds both paths to the same values.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, Optional

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_installed = False


def to_int(value: Any) -> Any:
    if type(value) is int:  # a default
        return value
    if isinstance(value, str) and _INT.fullmatch(value):
        return int(value)
    raise ValueError(value)


def to_float(value: Any) -> Any:
    if type(value) in (int, float):  # a default
        return float(value)
    if isinstance(value, str) and _FLOAT.fullmatch(value):
        return float(value)
    raise ValueError(value)


def _str(value: Any) -> Any:
    if isinstance(value, str):
        return value
    raise ValueError(value)


def _bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    raise ValueError(value)


def _str_list(value: Any) -> Any:
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError(value)


_CONVERT: dict[Any, Callable[[Any], Any]] = {
    int: to_int, float: to_float, str: _str, bool: _bool, List[str]: _str_list, list[str]: _str_list,
}


def converter(annotation: Any, parameter_info: Any) -> Optional[Callable[[Any], Any]]:
    """How to convert a value of this annotation without pydantic, or None (typer's way: any other
    annotation, a Union, Literal or list of another type; an option with its own parser or range).
    Optional[...] arrives here unwrapped."""
    try:
        convert = _CONVERT.get(annotation)
    except TypeError:  # an annotation that cannot be a key
        return None
    if convert is None or any(getattr(parameter_info, name, None) is not None
                              for name in ("parser", "click_type", "min", "max")):
        return None
    return convert


def install() -> bool:
    """Take plain values without pydantic from now on (once per process); False where this typer
    has no such hook."""
    global _installed
    if _installed:
        return True
    try:
        from typer import _coercion, core
    except ImportError:
        return False
    param_cls = getattr(core, "_TyperParameter", None)
    base = getattr(_coercion, "RuntimeParam", None)
    original = getattr(param_cls, "get_runtime_param", None)
    if param_cls is None or base is None or original is None:
        return False
    typers: Callable[[Any], Any] = original

    class PlainRuntimeParam(base):  # type: ignore[misc, valid-type]
        """A frozen dataclass like typer's own (parameter_info, annotation); the conversion is
        looked up per call, so no field is added."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            convert = converter(self.annotation, self.parameter_info)
            try:
                if convert is None:
                    raise ValueError(self.annotation)
                return convert(value)
            except ValueError:
                # Malformed here ("3.0" for an int, " 5", "1_000"...): typer's coercion decides,
                # with its own error message where it rejects it.
                return typers(param)._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if getattr(self, "_runtime_param", None) is None:
            desc = getattr(self, "type_descriptor", None)
            if (desc is not None and getattr(desc, "file_annotation", None) is None
                    and converter(desc.annotation, desc.parameter_info) is not None):
                try:
                    return PlainRuntimeParam(parameter_info=desc.parameter_info, annotation=desc.annotation)
                except TypeError:  # a typer whose RuntimeParam takes other fields: its own way
                    pass
        return typers(self)

    param_cls.get_runtime_param = get_runtime_param
    _installed = True
    return True
