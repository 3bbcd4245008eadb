"""The site's settings for a benchmark server: its logging (standard error, the server's log
file: a 500 under load must say why), without a warning for every 4xx."""
from config.settings import *  # noqa: F403

LOGGING = {**LOGGING, "loggers": {"django": {"level": "WARNING"}, "django.request": {"level": "ERROR"}}}  # noqa: F405
