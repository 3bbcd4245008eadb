"""Celery application, configured from Django settings (``CELERY_*`` names).

With no ``CELERY_BROKER_URL`` the settings make tasks run in-process (eager); with
one, tasks go to the broker (RabbitMQ ``amqp://`` or Redis ``redis://``) and run on
``celery -A config worker`` processes, and ``celery -A config beat`` sends the
periodic ones below.

Delivery: the job tasks acknowledge late (``acks_late`` on each task), so a worker
killed mid-task leaves its message with the broker.  RabbitMQ redelivers it as soon
as the dead worker's connection closes; Redis redelivers it after the transport's
``visibility_timeout`` (``CELERY_BROKER_TRANSPORT_OPTIONS`` in the settings, in seconds; it must exceed the longest task, or a
slow task is delivered twice, which the idempotent tasks tolerate but waste).  One
message is reserved per worker process at a time (prefetch multiplier 1), so a
killed worker holds back no queued work, and long cells spread over all workers.

Nothing here reads a setting: importing the app (as ``config`` does) must not load the
settings, so that a process refused by them (``config.refusals``) can say why; the periodic
tasks (``CELERY_BEAT_SCHEDULE``) are settings too.  The Procfile and the make targets run
``manage.py check`` before each process, which says a refusal in one line and stops there (a
worker or beat would print it under a traceback).
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("storebench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.worker_prefetch_multiplier = 1
# One broker can serve several deployments (or test runs): each uses its own queue.
app.conf.task_default_queue = os.environ.get("STOREBENCH_CELERY_QUEUE", "celery")
app.conf.task_ignore_result = True
app.conf.broker_connection_retry_on_startup = True
# The periodic tasks are the settings' CELERY_BEAT_SCHEDULE (their intervals come from the environment).
app.autodiscover_tasks()
