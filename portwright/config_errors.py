"""How a bad ``portwright.toml`` is reported: the first validation error turned into a
:class:`~portwright.errors.ConfigError` naming the file, line and key (or the
``PORTWRIGHT_*`` variable that set the value), what was found and how to fix it."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ValidationError

from portwright import environment
from portwright.errors import ConfigError


def line_from_message(message: str) -> int | None:
    match = re.search(r"line (\d+)", message)
    return int(match.group(1)) if match else None


def config_error(
    exc: ValidationError, path: Path, text: str, env_sources: dict[tuple[str, ...], str],
    root: type[BaseModel], *, example: str = "see `portwright init` for an example",
) -> ConfigError:
    """The :class:`ConfigError` of the first validation error of ``root`` (the whole
    config): the variable that set the value, else the file, line and key, with a fix
    (``example`` says where a missing key or table is shown)."""
    first = exc.errors()[0]
    loc = tuple(str(part) for part in first["loc"])
    key = ".".join(loc)
    found = first.get("input")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        message = f"required key is missing ({key})"
    elif first["type"] == "extra_forbidden":
        message = f"unknown key {loc[-1]!r}"
    elif found is not None:  # None: a default checked against the other keys
        message = f"{message}; found {found!r}"
    more = len(exc.errors()) - 1
    if more:
        message += f" (and {more} more error{'s' if more > 1 else ''})"
    env_name = next((env for keys, env in env_sources.items() if loc[: len(keys)] == keys), None)
    if env_name is not None:
        return ConfigError(message, file=environment.where(env_name), key=key,
                           fix=f"correct or unset {env_name}")
    return ConfigError(message, file=path, line=locate_key(text, loc), key=key,
                       fix=_fix_for(first["type"], loc, root, example))


def _fix_for(kind: str, loc: tuple[str, ...], root: type[BaseModel], example: str) -> str:
    section = ".".join(loc[:-1])
    if kind == "missing":
        table = _submodel(root, loc)
        if table is not None:
            needed = [name for name, f in table.model_fields.items() if f.is_required()]
            keys = ", ".join(f"`{name} = ...`" for name in needed)
            return (f"add the [{'.'.join(loc)}] table" + (f" with {keys}" if keys else "")
                    + f" ({example})")
        where = f"under [{section}]" if section else "at the top"
        return f"add `{loc[-1]} = ...` {where} ({example})"
    if kind == "extra_forbidden":
        valid = _valid_keys(root, loc[:-1])
        return f"remove or rename it; valid keys here: {', '.join(valid)}"
    name = [part for part in loc if not part.isdigit()][-1] if loc else "the key"
    return f"set `{name}` to a valid value (the expected type is in the message)"


def _submodel(root: type[BaseModel], section: tuple[str, ...]) -> type[BaseModel] | None:
    """The model of the table at ``section`` (None: not a table)."""
    model = root
    for part in section:
        field = model.model_fields.get(part)
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _valid_keys(root: type[BaseModel], section: tuple[str, ...]) -> list[str]:
    model = _submodel(root, section)
    return [] if model is None else sorted(model.model_fields)


def locate_key(text: str, loc: tuple[str, ...]) -> int | None:
    """Best line for ``loc`` in TOML ``text``: the key's own line, else its table header."""
    lines = text.splitlines()
    header_re = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+")
    key_re = re.compile(r"^\s*\"?([A-Za-z0-9_.-]+)\"?\s*=")
    for depth in range(len(loc), 0, -1):
        table, key = loc[: depth - 1], loc[depth - 1]
        current: tuple[str, ...] = ()
        for number, line in enumerate(lines, start=1):
            header = header_re.match(line)
            if header:
                current = tuple(p.strip().strip('"') for p in header.group(1).split("."))
                if current == loc[:depth]:
                    return number
                continue
            match = key_re.match(line)
            if match:
                dotted = tuple(match.group(1).split("."))
                if current + dotted[:-1] == table and dotted[-1] == key:
                    return number
    return None
