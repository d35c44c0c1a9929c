"""Run tests on both stores: ``pytestmark = BOTH_BACKENDS`` in a module (or ``@BOTH_BACKENDS`` on a
test) runs each test that uses the ``env`` fixture (or asks for ``store_backend``) once on SQLite
and once on PostgreSQL; the ``env`` fixture and every command the test starts then use that store
(see conftest's ``pytest_generate_tests`` and ``store_backend``)."""

import pytest

BOTH_BACKENDS = pytest.mark.both_backends
