"""Run an LLM call on a fresh event loop the way the engine does: its SDK clients closed with the loop.

``asyncio.run(achat(...))`` would leave the direct path's aiohttp sessions open when the loop
closes (the engine closes them in ``Engine.close``), and aiohttp reports each one at exit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import simulation.llm.direct as direct

T = TypeVar("T")


def run_closing(job: Awaitable[T]) -> T:
    """Return ``asyncio.run(job)``'s value, closing the loop's SDK clients before the loop."""

    async def main() -> T:
        try:
            return await job
        finally:
            await direct.aclose_clients()

    return asyncio.run(main())
