"""Bad ``--cron`` expressions to ``schedule create``: refused here, before any connection
(nothing listens at the Temporal address the cases set), naming ``--cron``, the field and
its value or the rule broken, with a right expression as the fix."""

from __future__ import annotations

from tests.bad_input.harness import Case

NOWHERE = {"PORTWRIGHT_TEMPORAL__ADDRESS": "127.0.0.1:9"}


def cron(case_id: str, expression: str, *says: str) -> Case:
    return Case(case_id, ("schedule", "create", "--cron", expression, "run", "some-row"),
                says=("--cron", *says, "0 3 * * *"), env=NOWHERE)


CASES = [
    cron("schedule-cron-hour-24", "0 24 * * *", "field 2 (hour)", "'24'", "0 to 23"),
    cron("schedule-cron-four-fields", "0 3 * *", "4 fields"),
    cron("schedule-cron-eight-fields", "0 0 0 3 * * * *", "8 fields"),
    cron("schedule-cron-quartz-question-mark", "0 0 ? * MON", "field 3 (day of month)", "'?'"),
    cron("schedule-cron-day-of-week-8", "0 3 * * 8", "field 5 (day of week)", "'8'"),
    cron("schedule-cron-month-name-too-short", "0 3 1 ja *", "field 4 (month)", "'ja'"),
    cron("schedule-cron-backwards-range", "0 3 * * sat-sun", "'sat-sun'", "ends before"),
    cron("schedule-cron-step-zero", "*/0 * * * *", "step '0'"),
    cron("schedule-cron-year-1999", "0 3 * * * 1999", "field 6 (year)", "2000 to 2100"),
    cron("schedule-cron-unknown-macro", "@reboot", "@reboot", "not a macro"),
    cron("schedule-cron-every-too-short", "@every 500ms", "shorter than a second"),
    cron("schedule-cron-every-bad-unit", "@every 1H", "'1H' is not a duration"),
    cron("schedule-cron-every-phase-too-long", "@every 1h/2h", "phase '2h'"),
    cron("schedule-cron-unknown-time-zone", "CRON_TZ=Mars/Olympus 0 3 * * *", "'Mars/Olympus'"),
    cron("schedule-cron-time-zone-alone", "TZ=UTC", "no fields follow"),
    cron("schedule-cron-empty", "", "0 fields"),
    cron("schedule-cron-blank", "   ", "0 fields"),
    cron("schedule-cron-long-comment", "0 3 * * * # " + "x" * 300, "longer than 200 bytes"),
]
