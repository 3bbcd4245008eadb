PY ?= python3
VENV = .venv
PORT ?= 8000

SERVICES_ENV = STOREBENCH_REQUIRE_SERVICES=1 \
	DATABASE_URL=postgresql://postgres@127.0.0.1:5432/storebench_test \
	REDIS_URL=redis://127.0.0.1:6379/0 \
	CELERY_BROKER_URL=amqp://guest:guest@127.0.0.1:5672//

.PHONY: run test test-services clean

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

run: $(VENV)/.installed
	$(VENV)/bin/python manage.py migrate --noinput
	$(VENV)/bin/python manage.py load_demo
	@echo
	@echo "StoreBench console: http://127.0.0.1:$(PORT)/"
	@echo "Demo logins: admin/admin (superuser), coordinator/coordinator, participant/participant"
	@echo
	$(VENV)/bin/uvicorn config.asgi:application --host 127.0.0.1 --port $(PORT)

test: $(VENV)/.installed
	$(VENV)/bin/pytest

test-services: $(VENV)/.installed
	$(SERVICES_ENV) $(VENV)/bin/pytest -m services

clean:
	rm -rf $(VENV) .staticfiles *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +
