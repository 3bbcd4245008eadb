"""Django project configuration for StoreBench.

The Celery app is imported here so that it is set up whenever Django starts,
and so that ``@shared_task`` functions bind to it.
"""
from .celery import app as celery_app

__all__ = ("celery_app",)
