"""``schedule create --cron`` checks the expression itself, before it connects: exactly what
the Temporal server takes (:mod:`portwright.dist.cron`). Every case below was put to a real
dev server, and :func:`test_the_server_agrees_on_every_case` puts them again: the server
and the check must agree on each (the server's answer is what the lists record)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.dist.cron import CronError, check_cron, parse
from portwright.errors import UsageError
from tests.conftest import GitRepo

ROOT = Path(__file__).resolve().parents[2]

ACCEPTED = [
    "0 3 * * *", "*/15 * * * *", "0 0 * * MON-FRI", "0 0 * * mon-fri", "0 0 * * tu",
    "0 0 1 jan *", "0 0 1 janu *", "0 0 * * 7", "0 0 31 1-2 *", "0 3 * * * 2026",
    "0 0 3 * * * 2026", "@daily", "@hourly", "@weekly", "@monthly", "@yearly", "@annually",
    "@midnight", "@every 1h", "@every 1h30m", "@every 2d", "@every 1h/15m", "@everyday 1h",
    "@every 1.5h", "@daily # nightly", "0 3 * * * # comment", "TZ=America/New_York 0 3 * * *",
    "CRON_TZ=Europe/Paris 0 3 * * *", "TZ=UTC 0 3 * * *", "TZ=Local 0 3 * * *",
    "TZ= 0 3 * * *", "TZ=UTC @daily", "TZ=Nowhere/City @every 1h", "1-5/2,8 * * * *",
    "*/+2 * * * *", "+5 * * * *", "0 0 * * 1#2", "05 03 * * *", "0\t3\t*\t*\t*",
    " 0 3 * * * ", "0 3 * * * #", "0 3 * * sun,sat", "0 3 * * 0-7", "0 3 * * 3-7/3",
    "0 3 * * su-sa", "@every 1s", "@every 1h/0s", "@every 1.5d", "@every 1d2h", "@every .5h",
    "@every 1d/1h", "@every 1h # hourly", "@every +1h", "@every 2562047h", "TZ=EST 0 3 * * *",
    "0 3 * * * 2026-2030/2", "0 3 * * * *", "0 3 * * * 2000", "0 3 * * * 2100",
    "0 3 * * 7-7", "0 3 1-31/40 * *", "0 3 * * 00000000000000000000001", "0 3 * * Sunday",
    "0 3 * DEC *", "0 3 * dece *", "0 3 * 1-dec *", "0,59 0,23 1,31 1,12 0,7 2000,2100",
]

# the server takes these and never starts anything: refused, saying so
NEVER_FIRES = [
    ("0 0 31 2 *", "February has no such day"), ("0 0 30-31 feb *", "February"),
    ("0 0 31 4,6,9,11 *", "April, June, September, November have no such day"),
]

# the expression, and what the message must say (the field and the value, or the rule)
REJECTED = [
    ("0 0 * * t", "field 5 (day of week) 't'"), ("0 0 1 ja *", "field 4 (month) 'ja'"),
    ("0 0 1 januaryx *", "'januaryx'"), ("0 0 * * 8", "from 0 to 7"),
    ("60 * * * *", "field 1 (minute) '60' is not a number from 0 to 59"),
    ("0 24 * * *", "field 2 (hour) '24' is not a number from 0 to 23"),
    ("0 0 0 * *", "field 3 (day of month) '0'"), ("0 0 32 * *", "from 1 to 31"),
    ("0 0 * 13 *", "field 4 (month) '13'"), ("0 3 * * * 1999", "field 6 (year) '1999'"),
    ("0 3 * * * 2101", "from 2000 to 2100"), ("60 0 3 * * * 2026", "field 1 (second) '60'"),
    ("0 3 * *", "it has 4 fields; it takes 5"), ("0 0 0 3 * * * *", "it has 8 fields"),
    ("@reboot", "@reboot, which is not a macro"), ("@DAILY", "@DAILY, which is not a macro"),
    ("@daily extra", "2 fields"),
    ("@every 0s", "shorter than a second"), ("@every -1h", "shorter than a second"),
    ("@every 500ms", "shorter than a second"), ("@every 999ms", "shorter than a second"),
    ("@every 1µs", "shorter than a second"), ("@every", "needs an interval"),
    ("@every 1x", "'1x' is not a duration"), ("@every  1h", "' 1h' is not a duration"),
    ("@every 1h30", "'1h30' is not a duration"), ("@every 1H", "'1H' is not a duration"),
    ("@every 1e3s", "not a duration"), ("@every 1_0s", "not a duration"),
    ("@every 10000000000h", "not a duration"), ("@every 2h/30m/5m", "'30m/5m'"),
    ("@every 1h /5m", "'1h ' is not a duration"),
    ("@every 1h/2h", "phase '2h' is not shorter"), ("@every 1h/1h", "not shorter"),
    ("@every 60m/1d", "not shorter"), ("@every 1h/-5m", "phase '-5m' is negative"),
    ("TZ=Nowhere/City 0 3 * * *", "time zone 'Nowhere/City'"),
    ("TZ=Europe/paris 0 3 * * *", "'Europe/paris'"), ("TZ=utc 0 3 * * *", "'utc'"),
    ("TZ=../etc 0 3 * * *", "'../etc'"), ("TZ=UTC", "no fields follow"),
    ("TZ=UTC\t0 3 * * *", "time zone"), ("tz=UTC 0 3 * * *", "field 1 (minute) 'tz=UTC'"),
    ("CRON_TZ=America/New_York TZ=UTC 0 3 * * *", "'TZ=UTC'"),
    ("5-1 * * * *", "the range '5-1' ends before it starts"),
    ("0 3 * * 7-0", "the range '7-0'"), ("0 3 * * sat-sun", "the range 'sat-sun'"),
    ("0 3 * mar-feb *", "the range 'mar-feb'"),
    ("*/0 * * * *", "step '0'"), ("*/-1 * * * *", "step '-1'"),
    ("5/ * * * *", "no step after /"), ("*/ * * * *", "no step after /"),
    ("/5 * * * *", "holds ''"), ("1/2/3 * * * *", "more than one /"),
    ("1-2-3 * * * *", "more than one -"), ("1,,2 * * * *", "holds ''"),
    ("*-5 * * * *", "'*' is not"), ("1-* * * * *", "the range '1-*'"),
    ("? * * * *", "'?'"), ("L * * * *", "'L'"), ("0 0 ? * *", "field 3 (day of month) '?'"),
    ("0 0 L * *", "'L'"), ("0 0 * * 5L", "'5L'"), ("0 0 1W * *", "'1W'"), ("#", "0 fields"),
    ("a b c d e", "field 1 (minute) 'a'"), ("0 3 * * 1_0", "'1_0'"),
    ("0 3 * * \u0663", "field 5 (day of week)"),
    ("0 3 * * 99999999999999999999999", "field 5 (day of week)"),
    ("0 3 * * * # " + "x" * 201, "comment (after #) is longer than 200 bytes"),
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_what_the_server_takes_is_taken(expression: str) -> None:
    parse(expression)
    check_cron(expression)


@pytest.mark.parametrize(("expression", "says"), [*REJECTED, *NEVER_FIRES])
def test_a_refused_expression_says_what_is_wrong(expression: str,
                                                  says: str) -> None:
    with pytest.raises(CronError, match=None) as caught:
        parse(expression)
    assert says in str(caught.value)
    with pytest.raises(UsageError) as usage:
        check_cron(expression)
    assert usage.value.key == "--cron"
    assert usage.value.fix is not None
    assert '"0 3 * * *"' in usage.value.fix  # a right one
    assert repr(expression) in usage.value.message


def test_the_server_agrees_on_every_case(temporal_address: str) -> None:
    from temporalio.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleSpec
    from temporalio.service import RPCError, RPCStatusCode

    async def verdicts() -> dict[str, bool]:
        client = await Client.connect(temporal_address)
        out: dict[str, bool] = {}
        for i, expression in enumerate([*ACCEPTED, *(e for e, _ in REJECTED),
                                        *(e for e, _ in NEVER_FIRES)]):
            ident = f"cron-probe-{i}"
            schedule = Schedule(action=ScheduleActionStartWorkflow(
                "portwright.run", id=ident, task_queue="cron-probe"),
                spec=ScheduleSpec(cron_expressions=[expression]))
            try:
                await client.create_schedule(ident, schedule)
            except RPCError as exc:
                assert exc.status == RPCStatusCode.INVALID_ARGUMENT, exc
                out[expression] = False
                continue
            out[expression] = True
            await client.get_schedule_handle(ident).delete()
        return out

    server = asyncio.run(verdicts())
    ours = {}
    for expression in server:
        try:
            parse(expression)
            ours[expression] = True
        except CronError:
            ours[expression] = False
    never = {e for e, _ in NEVER_FIRES}
    assert {e: v for e, v in ours.items() if e not in never} == \
        {e: v for e, v in server.items() if e not in never}
    assert all(server[e] for e in ACCEPTED)
    # the server takes a schedule that never fires; portwright says so instead
    assert all(server[e] and not ours[e] for e in never)


def _repo(make_repo: Callable[[str], GitRepo]) -> Path:
    repo = make_repo("downstream")
    repo.commit("init", {"README.md": "x\n"})
    return repo.path


@pytest.mark.parametrize(("cron", "says"), [
    ("0 24 * * *", "field 2 (hour) '24'"),
    ("0 3 * *", "it has 4 fields"),
    ("CRON_TZ=Mars/Olympus 0 3 * * *", "'Mars/Olympus'"),
])
def test_schedule_create_refuses_a_bad_cron_before_it_connects(
        make_repo: Callable[[str], GitRepo], cron: str, says: str) -> None:
    repo = _repo(make_repo)
    # nothing answers at this address: the cron is refused before any connection
    done = subprocess.run(
        [sys.executable, "-m", "portwright", "-C", str(repo), "schedule", "create", "--cron",
         cron, "run", "some-row"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200",
             "PORTWRIGHT_TEMPORAL__ADDRESS": "127.0.0.1:9"})
    assert done.returncode == 2, done.stdout + done.stderr
    text = " ".join(done.stderr.split())
    assert "[--cron]" in text, text
    assert says in text, text
    assert 'fix: give one like "0 3 * * *"' in text, text
    assert "Traceback" not in done.stderr
    assert "Temporal" in text  # says whose dialect
