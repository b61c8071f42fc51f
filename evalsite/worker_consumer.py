"""The worker's consumer, with celery 5.7's reconnect after a broker restart made safe (issue 32).

Celery 5.7's ``Consumer.on_connection_error_after_connected`` closes the broken connection and sets
``self.connection = None`` *before* the blueprint restarts. kombu's close clears the transport's
``client``; every channel still in use then fails on it: a task finishing after the restart acks
its message through such a channel, and kombu's Redis transport reads
``self.connection.client.hostname`` (``AttributeError: 'NoneType' object has no attribute
'hostname'``), which is not a connection error, so the consumer stops for good ("Unrecoverable
error"), the worker finishes its tasks and exits, and nothing runs until a person restarts it.
The Gossip and Events steps meet the same None while restarting.

Here the broken connection is only collected (its channels' resources released), as celery 5.3
did; the Connection bootstep closes it when the blueprint restarts, after the steps that use it
have stopped. An ack that meets the dead channel fails as a connection error (logged) and the
message is delivered again after the visibility timeout; the app's leases make a second
delivery harmless (a finished result is left alone). Set by ``CELERY_WORKER_CONSUMER``.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer
from celery.worker.state import active_requests

logger = logging.getLogger("evalsite.worker")


class Consumer(CeleryConsumer):
    def on_connection_error_after_connected(self, exc: Any) -> None:
        logger.warning("connection to the broker lost (%r): reconnecting", exc)
        try:
            if self.connection is not None:
                self.connection.collect()
        except Exception:  # a half-dead connection: its clean-up may fail too
            logger.debug("collecting the broken connection failed", exc_info=True)
        if self.app.conf.worker_cancel_long_running_tasks_on_connection_loss:
            for request in tuple(active_requests):
                if request.task.acks_late and not request.acknowledged:
                    try:
                        request.cancel(self.pool)
                    except Exception:
                        logger.warning("could not cancel %r after the connection loss", request, exc_info=True)
