"""Run a test module on both stores: ``pytestmark = BOTH_BACKENDS`` runs each of its tests once on
SQLite and once on PostgreSQL (conftest's ``store_backend`` fixture; the ``env`` fixture and every
command the test starts then use that store). A test that does not use ``env`` asks for
``store_backend`` itself."""

import pytest

BOTH_BACKENDS = pytest.mark.parametrize("store_backend", ["sqlite", "postgresql"], indirect=True)
