"""Issue 22: the benchmarks count the calls that fail (``errors=N``) and never crash on them.

The thread-per-call baseline crashed once with ``Connection error`` at 100 x 100 and printed no
RESULT line; here the same loop meets a server that fails every third request and one that is
not there at all.
"""

from __future__ import annotations

import re

from bench.common import against_floor, bare_loop, floors
from tests.support.fake_llm import FakeLLM, http_500
from tests.support.fixtures import closed_port


def _errors(lines: str) -> dict[str, int]:
    return {mode: int(n) for mode, n in re.findall(r"mode=(\S+) .*?errors=(\d+)", lines)}


def test_the_bare_loops_count_failed_calls_and_go_on():
    with FakeLLM() as fake:
        # litellm's event loop (warm-up, then 3 x 3 calls) meets three 500s, the openai SDK's two,
        # the thread pool after them one.
        fake.script("bare", ["warm", "ok", "ok", http_500(), "ok", "ok", http_500(), "ok", "ok", http_500(),
                             "warm", http_500(), "ok", "ok", "ok", "ok", "ok", "ok", "ok", http_500(),
                             "warm", "ok", "ok", http_500()] + ["ok"] * 10)
        lines = bare_loop(fake.base_url, conversations=3, messages=3, concurrency=1, latency=0.001, workload="t")
    assert [line.split()[2] for line in lines.splitlines()] == ["mode=bare-acompletion", "mode=openai-sdk", "mode=bare-completion"]
    assert _errors(lines) == {"bare-acompletion": 3, "openai-sdk": 2, "bare-completion": 1}


def test_a_server_that_is_gone_is_counted_not_fatal():
    lines = bare_loop(f"http://127.0.0.1:{closed_port()}/v1", conversations=2, messages=2, concurrency=2,
                      latency=0.001, workload="t")
    assert _errors(lines) == {"bare-acompletion": 4, "openai-sdk": 4, "bare-completion": 4}
    assert "error_kinds=" in lines


def test_each_line_is_set_against_the_openai_sdk_on_its_own_workload():
    bare = ("RESULT workload=w mode=openai-sdk ratio=1.10 wall_s=2.00 calls=4 errors=0\n"
            "RESULT workload=v mode=openai-sdk ratio=1.10 wall_s=8.00 calls=4 errors=0")
    walls = floors(bare)
    assert walls == {"w": 2.0, "v": 8.0}
    lines = against_floor(["RESULT workload=w mode=worker wall_s=3.00", "RESULT workload=u mode=worker wall_s=3.00"], walls)
    assert lines == ["RESULT workload=w mode=worker wall_s=3.00 vs_openai_sdk=1.50", "RESULT workload=u mode=worker wall_s=3.00"]
