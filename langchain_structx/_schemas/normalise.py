"""Schema normalisation: whatever the user gives becomes a set of named variants.

A user may describe the output as a Pydantic model, a dataclass, a TypedDict
(from `typing` or `typing_extensions`; a generic one with its arguments too), a
JSON-schema dict of any draft from 4 on (see `_drafts`), a `Union` of any of
these, or a JSON schema whose top level is a `oneOf`/`anyOf` of objects (split
only when each branch keeps its meaning on its own, see `_unions`). Each of those
becomes one or more `Variant`s: a name, a description, a JSON schema and a
validator that checks data against the *original* schema.

This module knows nothing of models or of LangChain.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

import typing_extensions
from pydantic import BaseModel, TypeAdapter
from pydantic import ValidationError as PydanticValidationError
from pydantic.errors import PydanticUserError

from langchain_structx._exceptions import OutputValidationError, SchemaError, ValidationIssue
from langchain_structx._parsing.coerce import whole_numbers
from langchain_structx._schemas.drafts import refs_apart, upgrade
from langchain_structx._schemas.typeddicts import pydantic_ready
from langchain_structx._schemas.unions import from_tool_format, split_union
from langchain_structx._validation.bounds import (
    cap_issues,
    clip,
    clip_path,
    preview,
)
from langchain_structx._validation.guard import UNCHECKABLE, guard
from langchain_structx._validation.validate import JSONSchemaValidator
from langchain_structx.limits import DEFAULT_LIMITS, Limits

SchemaOrigin = Literal["pydantic", "dataclass", "typeddict", "json_schema"]
"""Where a variant's schema came from; it decides what a valid output looks like."""

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One shape the output may take.

    Attributes:
        name: Identifier used for tools, envelopes and routing.
        description: What the shape is for, shown to the model.
        origin: Where the schema came from (a Pydantic model, a dataclass, a
            TypedDict or a JSON schema).
        json_schema: The JSON schema of the shape, with its own `$defs`.
        source: The object the user gave (a class or a dict).
    """

    name: str
    description: str
    origin: SchemaOrigin
    json_schema: dict[str, Any]
    source: Any
    _check: Callable[[Any, Limits], Any] = field(repr=False, compare=False)

    def validate(self, data: Any, limits: Limits = DEFAULT_LIMITS) -> Any:
        """Validate parsed data against the original schema.

        Args:
            data: A JSON-like value.
            limits: Bounds on the value's depth and size and on the checking time.

        Returns:
            A model instance for Pydantic models and dataclasses, a dict otherwise.

        Raises:
            OutputValidationError: Listing every problem with its JSON path.
        """
        return self._check(data, limits)


@dataclass(frozen=True)
class SchemaSet:
    """The variants of a response format, in the order the user gave them.

    Attributes:
        variants: One entry per shape; a plain schema has exactly one.
        source: What the user passed.
    """

    variants: tuple[Variant, ...]
    source: Any

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        """Names of the variants, in order."""
        return tuple(v.name for v in self.variants)

    @functools.cached_property
    def name_set(self) -> frozenset[str]:
        """Names of the variants, for membership tests."""
        return frozenset(self.names)

    @property
    def is_union(self) -> bool:
        """Whether the output may take more than one shape."""
        return len(self.variants) > 1

    def get(self, name: str) -> Variant | None:
        """Return the variant called `name`, or None."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        return None


def normalize(schema: Any, *, name: str | None = None) -> SchemaSet:
    """Turn any supported schema description into a `SchemaSet`.

    Args:
        schema: A Pydantic model, dataclass, TypedDict, JSON-schema dict, a Union
            (or a list) of those, or a dict whose top level is `oneOf`/`anyOf` of
            objects.
        name: Name for a single schema; ignored for unions.

    Returns:
        The named variants.

    Raises:
        SchemaError: For unsupported types, unnamed duplicates and invalid dicts.

    Examples:
        >>> from typing_extensions import TypedDict
        >>> class Point(TypedDict):
        ...     x: int
        >>> normalize(Point).names
        ('Point',)
    """
    members = list(_flatten(schema))
    if not members:
        raise SchemaError(f"No schema given: {clip(repr(schema), 200)} is an empty union.")
    variants: tuple[Variant, ...]
    if len(members) == 1:
        variants = (_variant(members[0], name),)
    else:
        variants = tuple(_variant(m, None, index=i) for i, m in enumerate(members))
    _check_unique(variants)
    return SchemaSet(variants=variants, source=schema)


def _flatten(schema: Any) -> Iterator[Any]:
    if get_origin(schema) in (Union, types.UnionType) or isinstance(schema, (list, tuple)):
        for arg in get_args(schema) or schema:
            yield from _flatten(arg)
        return
    if isinstance(schema, Mapping):
        # A tool definition's parameters; an older draft's forms in Draft 2020-12's
        # words; then each part's `$ref` with rules beside it in an `allOf`, as
        # inliners expect (after the split, which names a branch by its `$ref`).
        schema = upgrade(from_tool_format(schema))
        yield from (refs_apart(part) for part in split_union(schema) or [schema])
        return
    yield schema


def _check_unique(variants: tuple[Variant, ...]) -> None:
    seen: set[str] = set()
    for variant in variants:
        if variant.name in seen:
            raise SchemaError(
                f"Two schemas share the name {variant.name!r}; give each union member a "
                "distinct class name or JSON-schema title."
            )
        seen.add(variant.name)


def _variant(schema: Any, name: str | None, *, index: int | None = None) -> Variant:
    if isinstance(schema, Mapping):
        return _dict_variant(dict(schema), name, index)
    # A generic TypedDict or dataclass with its arguments (`Page[Item]`) is its class.
    origin = get_origin(schema)
    cls = origin if isinstance(origin, type) else schema
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return _typed_variant(schema, "pydantic", name, index)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return _typed_variant(schema, "dataclass", name, index)
    if typing_extensions.is_typeddict(cls):
        return _typed_variant(schema, "typeddict", name, index)
    raise SchemaError(
        f"Unsupported schema {clip(repr(schema), 200)}{_unsupported_because(schema)}. Use a "
        "Pydantic model, a dataclass, a TypedDict, a JSON-schema dict, or a Union of these."
    )


def _unsupported_because(schema: Any) -> str:
    """Why a near-miss a user is likely to write is not a schema."""
    v1 = sys.modules.get("pydantic.v1")
    if isinstance(schema, type) and v1 is not None and issubclass(schema, v1.BaseModel):
        return " (a pydantic.v1 model: derive it from pydantic.BaseModel instead)"
    if schema is type(None):
        return " (None cannot be a variant: an answer always takes one of the shapes)"
    if isinstance(schema, BaseModel) or dataclasses.is_dataclass(schema):
        return " (an instance: pass its class)"
    if isinstance(schema, str):
        return " (a string: pass the class, or the JSON schema as a dict)"
    if get_origin(schema) is typing.Annotated:
        # Its metadata (validators, constraints) would be lost with the type alone.
        return (
            " (Annotated: pass the type inside it, and put what annotates it on a field or "
            "in a validator; a union's variants are told apart by their names without a "
            "discriminator)"
        )
    if isinstance(schema, type) and issubclass(schema, tuple) and hasattr(schema, "_fields"):
        return " (a NamedTuple, which JSON holds as an array: make it a dataclass)"
    if isinstance(schema, type) and issubclass(schema, enum.Enum):
        return " (an Enum: make it a field of a model)"
    plain = (str, int, float, bool, list, dict)
    if get_origin(schema) is not None or any(schema is t for t in plain):
        return " (a plain type: make it a field of a model)"
    return ""


def _typed_variant(
    schema: Any, origin: SchemaOrigin, name: str | None, index: int | None
) -> Variant:
    try:
        target = pydantic_ready(schema) if origin == "typeddict" else schema
        adapter: TypeAdapter[Any] = TypeAdapter(target)
        json_schema = adapter.json_schema()
    except (PydanticUserError, NameError) as exc:
        # Pydantic's own errors, and forward references nothing defines.
        raise SchemaError(
            f"Pydantic cannot describe {getattr(schema, '__name__', schema)!r} as a JSON "
            f"schema: {type(exc).__name__}: {clip(str(exc), 300)}"
        ) from exc
    variant_name = _variant_name(name, schema.__name__, index)
    return Variant(
        name=variant_name,
        description=_typed_description(get_origin(schema) or schema, origin, json_schema),
        origin=origin,
        json_schema=json_schema,
        source=schema,
        _check=_pydantic_checker(adapter, variant_name),
    )


def _typed_description(schema: Any, origin: SchemaOrigin, json_schema: dict[str, Any]) -> str:
    if origin == "dataclass":
        doc = schema.__doc__ or ""
        # dataclasses invent a docstring from the signature; it says nothing new.
        return "" if doc.startswith(f"{schema.__name__}(") else doc.strip()
    described = json_schema.get("description")
    return str(described).strip() if described else (schema.__doc__ or "").strip()


def json_value_validator(adapter: TypeAdapter[Any]) -> Callable[[Any], Any]:
    """Pydantic's validation of a value parsed from JSON, as Pydantic defines it for JSON.

    Python mode and JSON mode differ only for strict types: in Python mode they want
    the Python object itself (a `date`, an `Enum` member, a tuple, the dataclass),
    which no reply can hold; in JSON mode they take what JSON says for it, and stay
    strict (`"1"` is still no integer). So a schema that is strict anywhere is checked
    on the value written back as JSON, unless the value is not JSON at all.

    Examples:
        >>> import datetime
        >>> from pydantic import BaseModel, ConfigDict
        >>> class Day(BaseModel):
        ...     model_config = ConfigDict(strict=True)
        ...     date: datetime.date
        >>> json_value_validator(TypeAdapter(Day))({"date": "2024-05-01"})
        Day(date=datetime.date(2024, 5, 1))
    """
    # Pydantic's validator itself: the adapter's methods only add a layer around it.
    validate_python = adapter.validator.validate_python
    if not _strict_somewhere(adapter.core_schema):
        return validate_python
    validate_json = adapter.validator.validate_json

    def validate(data: Any) -> Any:
        try:
            text = json.dumps(data)
        except (TypeError, ValueError):  # a value built in Python: Python mode judges it
            return validate_python(data)
        return validate_json(text)

    return validate


def _strict_somewhere(core_schema: Any) -> bool:
    nodes = [core_schema]
    while nodes:
        node = nodes.pop()
        if isinstance(node, dict):
            if node.get("strict") is True:  # a strict type, or a strict model's config
                return True
            nodes.extend(v for k, v in node.items() if k != "metadata")
        elif isinstance(node, (list, tuple)):
            nodes.extend(node)
    return False


def _pydantic_checker(adapter: TypeAdapter[Any], name: str) -> Callable[[Any, Limits], Any]:
    validate = json_value_validator(adapter)

    def check(data: Any, limits: Limits) -> Any:
        try:
            return validate(data)
        except PydanticValidationError as exc:
            errors = exc.errors(include_url=False)
            issues = [_pydantic_issue(err, limits) for err in errors[: limits.max_issues]]
            raise OutputValidationError(name, cap_issues(issues, len(errors), limits)) from None
        except UNCHECKABLE:
            raise
        except Exception as exc:
            # The user's own code (a validator, a custom type) failed on a value it
            # did not expect. LangChain's agent takes whatever its parsing raises
            # for a wrong answer; so does this, keeping the exception as the cause.
            issue = ValidationIssue((), _raised(exc, limits.max_value_chars * 4))
            raise OutputValidationError(name, [issue]) from exc

    return guard(check, name)


def _raised(exc: Exception, limit: int) -> str:
    try:
        detail = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - an exception that cannot say what it is
        detail = type(exc).__name__
    return clip(f"a validator raised {detail}", limit)


def _pydantic_issue(err: Mapping[str, Any], limits: Limits) -> ValidationIssue:
    path = clip_path(tuple(err["loc"]), limits.max_value_chars)
    return ValidationIssue(path, _pydantic_message(err, limits))


def _pydantic_message(err: Mapping[str, Any], limits: Limits) -> str:
    if err.get("type") == "missing":
        return "required field is missing"
    if err.get("type") in ("extra_forbidden",):
        return "unexpected field"
    if err.get("type") == "json_invalid":  # JSON mode's reader: a lone surrogate, deep nesting
        reason = f"the value could not be checked in JSON mode ({err['msg']})"
        return clip(reason, limits.max_value_chars * 4)
    message = clip(str(err["msg"]), limits.max_value_chars * 4)
    return f"{message} (got {preview(err.get('input'), limits.max_value_chars)})"


def _dict_variant(schema: dict[str, Any], name: str | None, index: int | None) -> Variant:
    variant_name = _variant_name(name, str(schema.get("title") or ""), index)
    validator = JSONSchemaValidator(schema)
    return Variant(
        name=variant_name,
        description=str(schema.get("description") or ""),
        origin="json_schema",
        json_schema=schema,
        source=schema,
        _check=_dict_checker(validator, schema, variant_name),
    )


def _dict_checker(
    validator: JSONSchemaValidator, schema: dict[str, Any], name: str
) -> Callable[[Any, Limits], Any]:
    def check(data: Any, limits: Limits) -> Any:
        issues = validator.issues(data, limits)
        if issues:
            raise OutputValidationError(name, issues)
        return whole_numbers(data, schema)

    return guard(check, name, validator.reference_steps)


def _variant_name(given: str | None, own: str, index: int | None) -> str:
    """The name passed, else the schema's own (class name or title), else a generic one.

    Providers take only ASCII letters, digits, `_` and `-` in tool names, so other
    characters become `_`. An own name with letters or digits of another script
    only (`联系人`) gives way to the generic name, as no title does; a name of
    punctuation alone is a mistake.
    """
    generic = "response_format" if index is None else f"response_format_{index + 1}"
    name = given or own or generic
    # Only the first 64 characters can be kept: a tenant's title may be megabytes long.
    cleaned = "".join(ch if ch in _NAME_CHARS else "_" for ch in name.strip()[:64])
    if cleaned.strip("_"):
        return cleaned
    if not given and any(ch.isalnum() for ch in name):
        return generic
    raise SchemaError(f"Cannot derive a usable name from {clip(repr(name), 200)}; pass name=...")
