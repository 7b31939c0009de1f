"""Fixtures shared by every test: the testing config, and a free loopback port."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Tests read config/testing.toml unless a run chose otherwise.
os.environ.setdefault("PBEM_CONFIG", str(ROOT / "config" / "testing.toml"))


# Test servers listen on ports below the kernel's ephemeral range (32768 and up on Linux), so that no
# outgoing connection of the machine's is ever given one of them.  Under pytest-xdist (`make test` runs
# the suite on every core) each worker is a process of its own and takes its ports from a range of its
# own: a port one worker found free can never be handed to another before the first listens on it.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_PORTS_FROM, _PORTS_TO = 20000, 32000
_SPAN = (_PORTS_TO - _PORTS_FROM) // max(_WORKERS, 1)
_pick = random.Random()


def free_port() -> int:
    """A loopback port nobody is listening on right now, and none that another test worker can be given."""
    while True:
        port = _PORTS_FROM + _WORKER * _SPAN + _pick.randrange(_SPAN)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # Taken (a service of the machine's, or a server of this run's): try another.
        return port


# The longest tests (by name), run first: `make test` runs the suite on two workers (pytest-xdist), and a
# long test started last would leave one worker running alone at the end.  Seconds as measured on CI, roughly;
# update them when `--durations` shows a new long test.  The Postfix tests share port 25 and take turns
# (a lock), so they go to one worker, the other long tests to the other.
SHARED_PORT_25 = {
    "test_the_upgrade_as_documented_loses_no_mail_that_arrives_meanwhile": 82,
    "test_two_listeners_fail_over_and_status_sees_the_mail_waiting_when_both_are_down": 70,
    "test_a_game_by_mail_through_postfix_survives_a_listener_restart": 49,
    "test_the_pipe_as_documented_waits_for_a_missing_setting_and_never_bounces": 39,
}
LONG_TESTS = {
    "test_two_of_each_process_apply_every_move_reminder_timeout_and_mail_once": 111,
    "test_status_sees_a_listener_and_a_scheduler_that_died_hang_or_stopped": 48,
    "test_two_sweepers_remind_and_time_out_exactly_once": 34,
    "test_what_a_list_shows_of_a_game_changes_only_with_its_version": 30,
    "test_mail_load_with_deliveries_and_sign_ups": 24,
    "test_ingest_stores_and_answers_with_exit_codes": 20,
    "test_a_plug_in_without_a_time_out_rule_is_ended_by_the_servers_own": 20,
    "test_importing_this_servers_own_export_adds_nothing_and_says_already_here": 15,
    "test_nginx_as_deployed_logs_secret_links_without_their_secret": 15,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the long tests first, dealt so that each of two workers gets about half of their time.

    xdist hands the first tests out one at a time to each worker in turn, so the even places go to one
    worker and the odd places to the other (a lane each, the shorter lane padded with ordinary tests);
    with another number of workers the order is merely good."""
    def seconds(item: pytest.Item, table: dict[str, int]) -> int:
        return table.get(getattr(item, "originalname", item.name), 0)

    port_25 = sorted((i for i in items if seconds(i, SHARED_PORT_25)),
                     key=lambda i: -seconds(i, SHARED_PORT_25))
    long = sorted((i for i in items if seconds(i, LONG_TESTS)), key=lambda i: -seconds(i, LONG_TESTS))
    lanes: tuple[list[pytest.Item], list[pytest.Item]] = (port_25, [])
    totals = [sum(seconds(i, SHARED_PORT_25) for i in port_25), 0]
    for item in long:
        lane = 0 if totals[0] < totals[1] else 1
        lanes[lane].append(item)
        totals[lane] += seconds(item, LONG_TESTS)
    chosen = set(port_25 + long)
    rest = iter([i for i in items if i not in chosen])
    first: list[pytest.Item] = []
    for turn in range(max(len(lanes[0]), len(lanes[1]))):
        first += [lane[turn] if turn < len(lane) else next(rest, None) for lane in lanes]
    items[:] = [i for i in first if i is not None] + list(rest)
