PY ?= python3
VENV = .venv
PORT ?= 8000

SERVICES_ENV = STOREBENCH_REQUIRE_SERVICES=1 STOREBENCH_SERVICES_STAGE=1 \
	DATABASE_URL=postgresql://postgres@127.0.0.1:5432/storebench_test \
	REDIS_URL=redis://127.0.0.1:6379/0 \
	CELERY_BROKER_URL=amqp://guest:guest@127.0.0.1:5672//

.PHONY: run test test-services lint clean release console mcp worker beat

# Production processes (set DJANGO_SECRET_KEY, DATABASE_URL, REDIS_URL and
# CELERY_BROKER_URL first; see Procfile and the README's deploy section). Each target runs one process in the foreground.
# `make release` brings the virtual environment up to date with pyproject.toml (once per release, before
# the processes start); the process targets only build it when it is missing: a supervisor starting web,
# worker and beat at once after an upgrade would otherwise run one pip install per process into the same
# environment, and a restarted web process would wait for pip.
PROCESS_VENV = $(if $(wildcard $(VENV)/.installed),,$(VENV)/.installed)
HOST ?= 127.0.0.1
MCP_PORT ?= 8765
MCP_EPISODES ?= --episode steady:7
MCP_STATE ?=
WEB_CONCURRENCY ?= 2
WORKER_CONCURRENCY ?= 2
BEAT_SCHEDULE_FILE ?= var/celerybeat-schedule

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

# `make run` is the development server: debug on (the demo logins need it).
run: export DJANGO_DEBUG = 1
run: export STOREBENCH_SITE_URL ?= http://127.0.0.1:$(PORT)
run: $(VENV)/.installed
	$(VENV)/bin/python manage.py migrate --noinput
	$(VENV)/bin/python manage.py load_demo
	@echo
	@echo "StoreBench console: http://127.0.0.1:$(PORT)/"
	@echo "Demo logins: admin/admin (superuser), coordinator/coordinator, participant/participant"
	@echo
	$(VENV)/bin/uvicorn config.asgi:application --host 127.0.0.1 --port $(PORT)

# On every core, at most four (pytest-xdist; each worker takes whole test files and has its
# own test database). TEST_WORKERS=0 runs in one process, with plain tracebacks.
TEST_WORKERS ?= auto
test: $(VENV)/.installed
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile

# Ruff (rules in pyproject.toml) on everything, mypy (django-stubs) on the code outside tests.
lint: $(VENV)/.installed
	$(VENV)/bin/pip install -q 'ruff>=0.6' 'mypy>=1.11' 'django-stubs>=5'
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy environment mcp_client shifts console studies jobs explorer config benchmarks

# The whole suite again on PostgreSQL, Redis and RabbitMQ (the services-marked tests
# included): what passes on SQLite must pass on the production database too.
test-services: $(VENV)/.installed
	$(SERVICES_ENV) $(VENV)/bin/pytest -m 'services or not services'

# The schema, once per release (not on every web process's start: several would race).
release: $(VENV)/.installed
	$(VENV)/bin/python manage.py migrate --noinput

console: $(PROCESS_VENV)
	$(VENV)/bin/python manage.py check --fail-level ERROR
	$(VENV)/bin/uvicorn config.asgi:application --host $(HOST) --port $(PORT) --proxy-headers --workers $(WEB_CONCURRENCY) --timeout-graceful-shutdown 30

mcp: $(PROCESS_VENV)
	$(VENV)/bin/storebench mcp --http --host $(HOST) --port $(MCP_PORT) $(if $(MCP_STATE),--state $(MCP_STATE)) $(MCP_EPISODES)

worker: $(PROCESS_VENV)
	$(VENV)/bin/python manage.py check --fail-level ERROR
	$(VENV)/bin/celery -A config worker --loglevel=INFO --concurrency=$(WORKER_CONCURRENCY)

beat: $(PROCESS_VENV)
	mkdir -p $(dir $(BEAT_SCHEDULE_FILE))
	$(VENV)/bin/python manage.py check --fail-level ERROR
	$(VENV)/bin/celery -A config beat --loglevel=INFO --schedule=$(BEAT_SCHEDULE_FILE)

clean:
	rm -rf $(VENV) .staticfiles *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +
