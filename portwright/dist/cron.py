"""The cron expressions of Temporal schedules, checked before the service is asked.

``ScheduleSpec.cron_expressions`` are parsed by the Temporal server, which turns each into a
calendar (or an interval). Its dialect is its own (no library parses the same one), so this
module follows the server's parser (``service/worker/scheduler``, ``parseCronString``) and
what its frontend checks after it, rule for rule; ``tests/dist/test_cron.py`` holds every
rule's cases and, against a real dev server, checks that the two agree on each:

- an optional time zone first, ``TZ=NAME`` or ``CRON_TZ=NAME`` up to the first space (an
  IANA name as the tz database spells it, ``UTC``, ``Local``, or empty for UTC);
- an optional comment from ``#`` (at most 200 bytes);
- ``@every DURATION[/PHASE]`` (Go durations, ``h m s ms us ns`` and ``d`` for 24 hours: at
  least one second; the phase at least zero and shorter than the interval);
- or a macro, ``@yearly`` / ``@annually``, ``@monthly``, ``@weekly``, ``@daily`` /
  ``@midnight``, ``@hourly``;
- or 5 fields (minute, hour, day of month, month, day of week), 6 (and a year) or 7 (a
  second first, then those six), separated by white space. A field is a comma-separated
  list of ``*``, ``N``, ``N-M`` (M not before N), each with an optional ``/STEP`` (at
  least 1); a number is decimal with an optional sign. Months take names by a prefix of
  three letters or more (``jan``, ``Sept``), days of the week by one of two or more
  (``mo``, ``FRI``); 0 and 7 are both Sunday. Ranges: second and minute 0-59, hour 0-23,
  day of month 1-31, month 1-12, day of week 0-7, year 2000-2100.

There are no ``?``, ``L``, ``W`` or ``#`` specifiers (``#`` starts the comment), and a
date that never comes (``0 0 31 2 *``) is accepted, as the server accepts it.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from fractions import Fraction

from portwright.errors import UsageError

__all__ = ["EXAMPLE", "CronError", "check_cron"]

EXAMPLE = '"0 3 * * *" (every day at 03:00 UTC), "*/15 * * * mon-fri", "@daily", ' \
          '"@every 6h", "CRON_TZ=Europe/Paris 30 2 * * *"'
"""Right ones, for the fix of every error."""

MAX_COMMENT = 200
"""Longest comment (bytes) the server keeps."""

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
          "@hourly": "0 * * * *"}

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    """Names of the values (from ``low``), matched by a prefix of ``shortest`` letters."""
    shortest: int = 0


SECOND = _Field("second", 0, 59)
MINUTE = _Field("minute", 0, 59)
HOUR = _Field("hour", 0, 23)
DAY_OF_MONTH = _Field("day of month", 1, 31)
MONTH = _Field("month", 1, 12, MONTHS, 3)
DAY_OF_WEEK = _Field("day of week", 0, 7, DAYS, 2)
YEAR = _Field("year", 2000, 2100)
LAYOUTS = {5: (MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK),
           6: (MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK, YEAR),
           7: (SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK, YEAR)}


class CronError(ValueError):
    """What is wrong with a cron expression, in words."""


def check_cron(expression: str, option: str = "--cron") -> None:
    """Raise :class:`UsageError` naming ``option``, what is wrong with ``expression`` (which
    field, what value) and right examples, unless the Temporal server would take it."""
    try:
        parse(expression)
    except CronError as exc:
        raise UsageError(f"{expression!r} is not a cron expression Temporal takes: {exc}",
                         key=option, fix=f"give one like {EXAMPLE}") from exc


def parse(expression: str) -> None:
    """Check ``expression`` as the server parses it; :class:`CronError` says what is
    wrong."""
    text = expression.strip()
    zone: str | None = None
    if text.startswith(("TZ=", "CRON_TZ=")):
        prefix, space, rest = text.partition(" ")
        if not space:
            raise CronError(f"it names a time zone ({prefix}) but no fields follow")
        zone = prefix.partition("=")[2]
        text = rest
    text, _, comment = text.partition("#")
    text = text.strip()
    if text.startswith("@every"):
        _every(text)  # the server drops the time zone of an interval: not checked
        return
    if zone is not None:
        _time_zone(zone)
    if len(comment.strip().encode("utf-8")) > MAX_COMMENT:
        raise CronError(f"its comment (after #) is longer than {MAX_COMMENT} bytes")
    fields = MACROS.get(text, text).split()
    layout = LAYOUTS.get(len(fields))
    if layout is None:
        said = f"{len(fields)} field{'s' if len(fields) != 1 else ''}"
        word = text.split()[0] if text.startswith("@") else ""
        if word in MACROS:
            said = f"{said}: {word} and more after it (a macro stands alone)"
        elif word:
            said = f"{word}, which is not a macro ({', '.join(MACROS)}, @every)"
        raise CronError(f"it has {said}; it takes 5 (minute hour day-of-month month "
                        "day-of-week), 6 (and a year) or 7 (a second first)")
    for number, (field, value) in enumerate(zip(layout, fields, strict=True), start=1):
        _field(field, value, f"field {number} ({field.name}) {value!r}")
    _fires(dict(zip(layout, fields, strict=True)))


_LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""Days of each month in its longest year (February: a leap year's 29)."""


def _fires(fields: dict[_Field, str]) -> None:
    """A schedule whose days of month fall in none of its months (``31 2``: February has
    no 31st) never fires: the server takes it and never starts anything. Both day fields
    restricted fire on either (the day of week then suffices), as the server reads them."""
    if fields[DAY_OF_WEEK] != "*" or fields[DAY_OF_MONTH] == "*":
        return
    days = _values(DAY_OF_MONTH, fields[DAY_OF_MONTH])
    months = _values(MONTH, fields[MONTH])
    if any(day <= _LONGEST_MONTH[month - 1] for day in days for month in months):
        return
    if YEAR in fields and days == {29} and months == {2}:
        return  # every year named may be a common one: the server would say no more
    named = ", ".join(MONTHS[m - 1].capitalize() for m in sorted(months))
    raise CronError(f"it never fires: day {fields[DAY_OF_MONTH]!r} of the month falls in no "
                    f"month it names ({named} {'has' if len(months) == 1 else 'have'} no "
                    "such day)")


def _values(field: _Field, text: str) -> set[int]:
    """The values a field that :func:`_field` took stands for."""
    out: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if body == "*":
            start, end = field.low, field.high
        elif "-" in body:
            first, last = body.split("-")
            start = _value(field, first, field.low) or field.low
            end = _value(field, last, start) or field.high
        else:
            start = _value(field, body, field.low) or field.low
            end = field.high if step_text else start
        out.update(range(start, end + 1, step))
    return out


def _time_zone(name: str) -> None:
    if name in ("", "UTC", "Local"):
        return
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise CronError(f"time zone {name!r} is not in the tz database (names are "
                        "case-sensitive, e.g. Europe/Paris, America/New_York, UTC)") from exc


def _field(field: _Field, text: str, where: str) -> None:
    """One field: a comma-separated list of ``*``, ``N`` or ``N-M``, each ``/STEP`` or not."""
    for part in text.split(","):
        body, slash, step = part.partition("/")
        if slash:
            if "/" in step:
                raise CronError(f"{where} has more than one / in {part!r}")
            if step == "":
                raise CronError(f"{where} has no step after / in {part!r}")
            if _integer(step) is None or int(step) < 1:
                raise CronError(f"{where} has step {step!r}; a step is a whole number, 1 "
                                "or more")
        if body == "*":
            continue
        if "-" in body:
            ends = body.split("-")
            if len(ends) != 2:
                raise CronError(f"{where} has more than one - in {part!r}")
            start = _value(field, ends[0], field.low)
            if start is None:
                raise CronError(f"{where}: {ends[0]!r} is not {_allowed(field)}")
            if _value(field, ends[1], start) is None:
                raise CronError(f"{where}: the range {body!r} ends before it starts or past "
                                f"the end ({_allowed(field)})")
        elif _value(field, body, field.low) is None:
            said = "is" if body == text else f"holds {body!r},"
            raise CronError(f"{where} {said} not {_allowed(field)}")


def _allowed(field: _Field) -> str:
    names = ""
    if field is MONTH:
        names = " or a month's name (jan, feb, … or whole)"
    elif field is DAY_OF_WEEK:
        names = " (0 and 7: Sunday) or a day's name (su, mon, … or whole)"
    return f"a number from {field.low} to {field.high}{names}, or *"


def _value(field: _Field, text: str, low: int) -> int | None:
    """The value of ``text`` in ``field`` when it lies in ``low``..``field.high``."""
    found: int | None = None
    if field.names and len(text) >= field.shortest:
        lowered = text.lower()
        found = next((field.low + i for i, name in enumerate(field.names)
                      if name.startswith(lowered)), None)
    if found is None:
        found = _integer(text)
    return found if found is not None and low <= found <= field.high else None


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _integer(text: str) -> int | None:
    """A decimal integer as Go's ``strconv.Atoi`` reads one (sign, ASCII digits)."""
    return int(text) if _INTEGER.fullmatch(text) else None


_UNITS = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "\u00b5s": Fraction(1, 10**6),
          "\u03bcs": Fraction(1, 10**6), "ms": Fraction(1, 1000), "s": Fraction(1),
          "m": Fraction(60), "h": Fraction(3600), "d": Fraction(86400)}
_TERM = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h|d)")
_LONGEST = Fraction(2**63 - 1, 10**9)
"""The longest duration Go holds (int64 nanoseconds), in seconds."""


def _every(text: str) -> None:
    """``@every INTERVAL[/PHASE]``: the interval at least a second, the phase shorter."""
    _, space, spec = text.partition(" ")
    if not space:
        raise CronError("@every needs an interval after a space, e.g. \"@every 6h\"")
    interval, slash, phase = spec.partition("/")
    every = _duration(interval)
    if every < 1:
        raise CronError(f"@every {interval}: the interval is shorter than a second")
    if slash:
        offset = _duration(phase)
        if offset < 0:
            raise CronError(f"@every {spec}: the phase {phase!r} is negative")
        if offset >= every:
            raise CronError(f"@every {spec}: the phase {phase!r} is not shorter than the "
                            "interval")


def _duration(text: str) -> Fraction:
    """Seconds of a Go duration (``1h30m``, ``1.5h``, ``90s``, ``-2m``), ``d`` being 24
    hours, as Temporal reads one."""
    wrong = CronError(f"{text!r} is not a duration: a number and a unit, repeated (1h30m, "
                      "1.5h, 90s, 2d; units d h m s ms us ns)")
    body = text[1:] if text[:1] in ("+", "-") else text
    sign = -1 if text.startswith("-") else 1
    if body == "0":
        return Fraction(0)
    total, at = Fraction(0), 0
    while at < len(body):
        term = _TERM.match(body, at)
        if term is None or term.group(1) in ("", "."):
            raise wrong
        whole, _, part = term.group(1).partition(".")
        number = Fraction(int(whole or "0")) + (Fraction(int(part), 10 ** len(part))
                                                if part else 0)
        total += number * _UNITS[term.group(2)]
        at = term.end()
    if not body or total > _LONGEST:
        raise wrong
    return sign * total
