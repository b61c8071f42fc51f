"""The engine: many conversations and judge results in flight at once, on one event loop.

A *job* is a coroutine (one conversation, one judge result). Its LLM calls are awaited on the
loop (``achat``: ``litellm.acompletion``), so a hundred calls in flight cost a hundred sockets,
not a hundred OS threads. Its database steps are queued with ``await db(fn, ...)`` and run by
the thread that drives the loop, *between* loop turns, one after the other:

- Django's ORM stays synchronous, in the thread that owns its connection (the test database
  of a unit test, the worker's own connection), never inside a running loop;
- a process is a single SQLite writer, so writers never sleep in SQLite's busy handler;
- a step is its own transaction, as before: a crash loses at most the calls in flight.

Two ways to drive it:

- ``Engine.run(jobs, concurrency=n)``: in the calling thread until the jobs are done (tests,
  eager Celery, ``simulate --inline``, ``judge --inline``, the benchmarks);
- ``shared_engine().call(job)``: a worker process's engine thread, fed by Celery tasks. Each
  task blocks on its job's future (so its broker message stays unacknowledged until the job
  ends: ``acks_late`` crash recovery is unchanged) while the engine thread makes every call
  and every write. Run the worker with ``--pool threads --concurrency N`` so N tasks can wait
  at once; see docs/engine.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import simulation.llm.direct as direct
from core.transient import backoff_delays, drop_broken_connections, is_transient

logger = logging.getLogger("simulation.engine")
T = TypeVar("T")
Job = Callable[[], Coroutine[Any, Any, Any]]

_current: contextvars.ContextVar[Engine] = contextvars.ContextVar("evalsite_engine")


class EngineBusy(RuntimeError):
    """The calling thread's engine is already running (a job may not drive another engine)."""


class Engine:
    """An event loop plus a queue of database steps, driven by one thread."""

    # How often a long-lived engine closes database connections past their age (CONN_MAX_AGE).
    CONNECTION_CHECK_SECONDS = 30.0

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._steps: deque[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], asyncio.Future[Any]]] = deque()
        self._batches: dict[Callable[[list[Any]], list[Any]], list[tuple[Any, asyncio.Future[Any]]]] = {}
        self._wake: asyncio.Future[None] | None = None
        self._driving = False
        self.steps_run = 0  # database steps executed (for benchmarks and tests)
        self.batches_run = 0
        self.steps_retried = 0  # steps run again after a transient error (an outage)
        # A step that met a transient error: (attempts so far, its waits) until it succeeds.
        self._outages: dict[asyncio.Future[Any], tuple[int, Iterator[float]]] = {}

    # -- inside jobs ---------------------------------------------------------------------------
    async def db(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` in the driving thread between loop turns; return its value."""
        future: asyncio.Future[Any] = self.loop.create_future()
        self._steps.append((fn, args, kwargs, future))
        self._signal()
        return await future

    async def db_batch(self, handler: Callable[[list[Any]], list[Any]], item: Any) -> Any:
        """Queue ``item`` for ``handler``, which gets every item queued in this turn at once.

        ``handler(items)`` runs in the driving thread and returns one value per item (an
        exception instance is raised in that item's job only): the jobs in flight share one
        transaction and a few statements instead of one each.
        """
        future: asyncio.Future[Any] = self.loop.create_future()
        self._batches.setdefault(handler, []).append((item, future))
        self._signal()
        return await future

    def _signal(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    # -- driving -------------------------------------------------------------------------------
    def _run_steps(self) -> None:
        while self._steps or self._batches:
            self._run_single_steps()
            batches, self._batches = self._batches, {}
            for handler, entries in batches.items():
                self._run_batch(handler, entries)

    def _run_batch(self, handler: Callable[[list[Any]], list[Any]], entries: list[tuple[Any, asyncio.Future[Any]]]) -> None:
        live = [(item, future) for item, future in entries if not future.cancelled()]
        if not live:
            return
        try:
            values = handler([item for item, _ in live])
        except Exception as exc:
            values = [exc] * len(live)
        for (item, future), value in zip(live, values, strict=True):
            if isinstance(value, BaseException):
                if not self._again_later(future, value, lambda item=item, future=future: self._requeue_batch(handler, item, future)):
                    future.set_exception(value)
            else:
                self._outages.pop(future, None)
                future.set_result(value)
        self.batches_run += 1
        self.steps_run += len(live)

    def _requeue_batch(self, handler: Callable[[list[Any]], list[Any]], item: Any, future: asyncio.Future[Any]) -> None:
        if not future.cancelled():
            self._batches.setdefault(handler, []).append((item, future))
            self._signal()

    def _again_later(self, future: asyncio.Future[Any], exc: BaseException, requeue: Callable[[], None]) -> bool:
        """Queue a step that met an outage again after a backoff; False when it must fail now.

        An outage of the database (a terminated connection, a restart) says nothing about the
        work: the step runs again once it is back, and the job waits (never the loop), so an
        LLM call already paid for is stored, not made again. Broken connections are closed
        first, so the next attempt opens a fresh one. Errors of the work itself, and an
        outage longer than ``EVALSITE_OUTAGE_SECONDS``, are the job's to handle.
        """
        if not is_transient(exc):
            self._outages.pop(future, None)
            return False
        attempts, waits = self._outages.get(future) or (0, backoff_delays())
        delay = next(waits, None)
        if delay is None:
            self._outages.pop(future, None)
            logger.error("a database step gave up after %d attempt(s) through an outage: %s", attempts + 1, exc)
            return False
        self._outages[future] = (attempts + 1, waits)
        drop_broken_connections()
        logger.warning("a database step met an outage (%s: %s); again in %.1f s", type(exc).__name__, exc, delay)
        self.steps_retried += 1
        self.loop.call_later(delay, requeue)
        return True

    def _run_single_steps(self) -> None:
        while self._steps:
            fn, args, kwargs, future = self._steps.popleft()
            if future.cancelled():
                continue
            try:
                value = fn(*args, **kwargs)
            except Exception as exc:  # handed to the job that asked; BaseException stops the driver
                step = (fn, args, kwargs, future)
                if not self._again_later(future, exc, lambda step=step: self._requeue_step(step)):
                    future.set_exception(exc)
            else:
                self._outages.pop(future, None)
                future.set_result(value)
            self.steps_run += 1

    def _requeue_step(self, step: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], asyncio.Future[Any]]) -> None:
        if not step[3].cancelled():
            self._steps.append(step)
            self._signal()

    def _turn(self, until: asyncio.Future[Any] | None) -> None:
        """Run the loop until a job queues a database step (or ``until`` is done); run the steps."""
        if not self._steps and not self._batches and not (until is not None and until.done()):
            self._wake = self.loop.create_future()
            if until is not None:
                until.add_done_callback(lambda _f: self._signal())
            self.loop.run_until_complete(self._wake)
            self._wake = None
        self._run_steps()

    async def _guarded(self, job: Job, gate: asyncio.Semaphore | None) -> Any:
        _current.set(self)
        if gate is None:
            return await job()
        async with gate:
            return await job()

    def run(self, jobs: Sequence[Job], *, concurrency: int = 0, return_exceptions: bool = False) -> list[Any]:
        """Run ``jobs`` (at most ``concurrency`` at once; 0 = all) in this thread; return their values.

        An exception of a job is raised here (after the others finished) unless
        ``return_exceptions``, which returns it in the job's place.
        """
        if self._driving or self.loop.is_running():
            raise EngineBusy("this thread's engine is already running")
        if not jobs:
            return []
        self._driving = True
        try:
            gate = asyncio.Semaphore(concurrency) if concurrency and concurrency < len(jobs) else None
            tasks = [self.loop.create_task(self._guarded(job, gate), context=contextvars.copy_context()) for job in jobs]
            done = self.loop.create_future()
            remaining = [len(tasks)]

            def one_done(_task: asyncio.Task[Any]) -> None:
                remaining[0] -= 1
                if remaining[0] == 0 and not done.done():
                    done.set_result(None)

            for task in tasks:
                task.add_done_callback(one_done)
            while not done.done() or self._steps or self._batches:
                self._turn(done)
            # Let callbacks scheduled by the last steps (connection cleanup...) run once.
            self.loop.run_until_complete(asyncio.sleep(0))
        finally:
            self._driving = False
        results: list[Any] = []
        first_error: BaseException | None = None
        for task in tasks:
            exc = task.exception() if not task.cancelled() else asyncio.CancelledError()
            if exc is not None:
                if not isinstance(exc, Exception):
                    raise exc  # a crash (SIGKILL stand-in, KeyboardInterrupt) is never swallowed
                first_error = first_error or exc
                results.append(exc)
            else:
                results.append(task.result())
        if first_error is not None and not return_exceptions:
            raise first_error
        return results

    def close(self) -> None:
        """Cancel what is left on the loop (litellm's logging worker...) and close it."""
        if self.loop.is_closed() or self.loop.is_running():
            return
        pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(direct.aclose_clients())  # their aiohttp sessions belong to this loop
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def run_one(self, job: Job) -> Any:
        """Run one job in this thread and return its value (or raise its exception)."""
        return self.run([job])[0]

    # -- a long-lived engine thread (worker processes) -----------------------------------------
    def serve(self, stop: threading.Event) -> None:
        """Drive jobs submitted from other threads until ``stop`` is set (runs in its own thread)."""
        from django.db import close_old_connections

        self._driving = True
        checked = time.monotonic()
        while not stop.is_set():
            self._wake = self.loop.create_future()
            if not self._steps and not self._batches:
                self.loop.run_until_complete(self._wake)
            self._wake = None
            self._run_steps()
            if time.monotonic() - checked > self.CONNECTION_CHECK_SECONDS:
                close_old_connections()
                checked = time.monotonic()

    def submit(self, job: Job) -> concurrent.futures.Future[Any]:
        """Start ``job`` on this (serving) engine from another thread; return its future."""
        return self.submit_many([job])[0]

    def submit_many(self, jobs: Sequence[Job]) -> list[concurrent.futures.Future[Any]]:
        """Start ``jobs`` on this (serving) engine from another thread, in one hand-over; return their futures."""
        results: list[concurrent.futures.Future[Any]] = [concurrent.futures.Future() for _ in jobs]

        def start() -> None:
            for job, result in zip(jobs, results, strict=True):
                task = self.loop.create_task(self._guarded(job, None), context=contextvars.copy_context())
                task.add_done_callback(lambda t, result=result: _settle(result, t))
            self._signal()

        self.loop.call_soon_threadsafe(start)
        return results


def _settle(result: concurrent.futures.Future[Any], task: asyncio.Task[Any]) -> None:
    """Hand a finished loop task's outcome to the other thread's future."""
    if task.cancelled():
        result.set_exception(concurrent.futures.CancelledError())
    elif task.exception() is not None:
        result.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        result.set_result(task.result())


async def db(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a database step of the current job in its engine's driving thread."""
    return await _current.get().db(fn, *args, **kwargs)


async def db_batch(handler: Callable[[list[Any]], list[Any]], item: Any) -> Any:
    """Queue a batched database step of the current job (see ``Engine.db_batch``)."""
    return await _current.get().db_batch(handler, item)


def current_engine() -> Engine | None:
    """Return the engine running the current job, or None outside a job."""
    return _current.get(None)


_local = threading.local()


def local_engine() -> Engine:
    """Return this thread's engine (created once; its loop and HTTP clients are reused)."""
    engine = getattr(_local, "engine", None)
    if engine is None or engine.loop.is_closed():
        engine = Engine()
        _local.engine = engine
    return engine


def run_jobs(jobs: Sequence[Job], *, concurrency: int = 0) -> list[Any]:
    """Run ``jobs`` to the end in the calling thread (its own engine); return their values.

    A thread that already runs an event loop (Playwright's sync API, an async caller) cannot
    drive another: the jobs then run on a helper thread with its own engine and connection.
    """
    if asyncio._get_running_loop() is None:
        return local_engine().run(jobs, concurrency=concurrency)
    outcome: dict[str, Any] = {}

    def helper() -> None:
        from django.db import connections

        engine = Engine()
        try:
            outcome["value"] = engine.run(jobs, concurrency=concurrency)
        except BaseException as exc:  # handed back to the caller's thread
            outcome["error"] = exc
        finally:
            engine.close()
            connections.close_all()

    thread = threading.Thread(target=helper, name="evalsite-engine-helper")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_job(job: Job) -> Any:
    """Run one job to the end in the calling thread (see ``run_jobs``); return its value."""
    return run_jobs([job])[0]


def run_group(jobs: Sequence[Job], *, inline: bool) -> list[Any]:
    """Run one task message's group of jobs; return their values, raising the first error once all ended.

    In a worker the group runs together on the process's engine thread; ``inline`` (eager
    Celery: tests, no worker) runs the jobs one after the other, as one-unit messages ran, so
    what a job finds in a cache stays deterministic.
    """
    outcomes = [run_job(job) for job in jobs] if inline else shared_engine().call_many(jobs)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    for error in errors[1:]:
        logger.error("a job of the same group also failed: %r", error)
    if errors:
        raise errors[0]
    return outcomes


def _import_litellm() -> None:
    # Jobs submitted meanwhile wait on the loop, not yet claimed: no lease can go stale.
    from simulation.llm.client import _litellm

    started = time.monotonic()
    try:
        _litellm()
    except Exception:  # the first call will say what is wrong
        logger.exception("importing litellm failed")
    logger.info("engine ready (litellm loaded in %.1f s)", time.monotonic() - started)


class EngineThread:
    """A worker process's engine, in a daemon thread that makes every call and every write."""

    def __init__(self) -> None:
        self.engine = Engine()
        self._waiting: set[concurrent.futures.Future[Any]] = set()
        self._waiting_lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.warm = threading.Event()  # set once litellm is imported and jobs run
        self.thread = threading.Thread(target=self._main, name="evalsite-engine", daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        from django.db import connections

        asyncio.set_event_loop(self.engine.loop)
        self._ready.set()
        try:
            _import_litellm()  # before the first job: never on a turn of the loop
            self.warm.set()
            self.engine.serve(self._stop)
        except BaseException as exc:  # the engine must never die silently: tasks would wait forever
            logger.exception("the engine thread stopped")
            with self._waiting_lock:
                waiting = list(self._waiting)
            for future in waiting:  # their tasks fail (and are delivered again): never hang
                if not future.done():
                    future.set_exception(RuntimeError(f"the engine thread stopped: {exc!r}"))
            raise
        finally:
            connections.close_all()

    def call(self, job: Job, timeout: float | None = None) -> Any:
        """Run ``job`` on the engine thread; block until it ends and return its value."""
        if not self.thread.is_alive():
            raise RuntimeError("the engine thread is not running")
        future = self.engine.submit(job)
        with self._waiting_lock:
            self._waiting.add(future)
        try:
            return future.result(timeout=timeout)
        finally:
            with self._waiting_lock:
                self._waiting.discard(future)

    def call_many(self, jobs: Sequence[Job], timeout: float | None = None) -> list[Any]:
        """Run ``jobs`` on the engine thread together; block until all end and return their values.

        One task message's group of work: the jobs are started in one hand-over to the loop.
        A job's exception is returned in its place (the others run on), so one failure never
        hides what the rest did; the caller decides what to raise.
        """
        if not self.thread.is_alive():
            raise RuntimeError("the engine thread is not running")
        futures = self.engine.submit_many(jobs)
        with self._waiting_lock:
            self._waiting.update(futures)
        try:
            concurrent.futures.wait(futures, timeout=timeout)
            values: list[Any] = []
            for future in futures:
                if not future.done():
                    raise TimeoutError("the engine did not finish the group in time")
                error = future.exception()
                values.append(error if error is not None else future.result())
            return values
        finally:
            with self._waiting_lock:
                self._waiting.difference_update(futures)

    def stop(self) -> None:
        self._stop.set()
        self.engine.loop.call_soon_threadsafe(self.engine._signal)
        self.thread.join(timeout=10)


_shared: EngineThread | None = None
_shared_pid = 0
_shared_lock = threading.Lock()


def _forget_after_fork() -> None:
    # An event loop (its epoll descriptor, its connections) must not be shared with the
    # parent: a forked child builds its own engines on first use.
    global _shared, _shared_lock
    _shared = None
    _shared_lock = threading.Lock()
    _local.__dict__.pop("engine", None)


os.register_at_fork(after_in_child=_forget_after_fork)


def shared_engine() -> EngineThread:
    """Return this process's engine thread (started on first use, again after a fork)."""
    global _shared, _shared_pid
    with _shared_lock:
        if _shared is None or _shared_pid != os.getpid() or not _shared.thread.is_alive():
            _shared = EngineThread()
            _shared_pid = os.getpid()
        return _shared

