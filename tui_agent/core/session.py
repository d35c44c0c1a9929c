"""Opening a vault for use: folders, logging, database, first-run profile. Used by every entry point."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tui_agent.core import profiles, trust
from tui_agent.core.store import backends, location
from tui_agent.core.store.db import open_store
from tui_agent.core.store.errors import DATABASE_ERRORS, describe
from tui_agent.core.store.models import Profile
from tui_agent.core.vault import Vault, resolve_vault, setup_logging

if TYPE_CHECKING:
    import peewee as pw

log = logging.getLogger("tui_agent")

FIRST_RUN_LOCK = 0x7475_6962  # "tuib": the first run's default profile


class Session:
    def __init__(self, vault: Vault, db: pw.Database, url: location.StoreURL | None = None) -> None:
        self.vault = vault
        self.db = db
        self.url = url or location.default_url(vault.root)
        self.active: Profile | None = None  # the active profile, as read when the session opened

    def profile(self, name: str | None = None) -> Profile:
        """The named or active profile, validated (raises ProfileError naming the field)."""
        if name is None and self.active is not None:
            profiles.validate_profile(self.active)  # read already: not read again
            return self.active
        return profiles.resolve_profile(name)

    def close(self) -> None:
        self.db.close()


def open_session(vault_arg: str | None = None) -> Session:
    """Open the vault; a database that cannot be used raises StoreError (its message says what to do)."""
    root, found_here = resolve_vault(vault_arg)
    vault = Vault(root).init()
    # A vault that came with the current folder runs no program and sends no key until trusted.
    trusted = not found_here or trust.is_trusted(vault.root)
    trust.set_current(vault.root, trusted=trusted)
    setup_logging(vault)
    url = location.resolve(vault.root, trusted=trusted)  # an untrusted vault's local settings: not used
    db = open_store(url)
    try:
        try:
            active: Profile | None = profiles.active_profile()  # one is active (the first, if none was chosen)
        except profiles.ProfileError:
            active = None
            # The first run (there is no profile): of many processes starting at once, exactly one
            # creates the profile (the transaction takes the write lock before it counts).
            with db.atomic():
                backends.of(db).serialize(FIRST_RUN_LOCK)  # machines starting at once on one server
                profiles.ensure_default_profile()
    except DATABASE_ERRORS as exc:
        db.close()
        raise describe(exc, url.where()) from None
    session = Session(vault, db, url)
    session.active = active
    return session
