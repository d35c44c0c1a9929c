"""Pictures in tests, whatever the store: gone for good (the file and, with PostgreSQL, the
database's copy), or only gone from a vault's cache."""

from __future__ import annotations

from pathlib import Path

from tui_agent.core.store import backends, media_store


def remove_picture(vault_root: Path, relative: str) -> None:
    """``media/...`` gone from the vault and, with PostgreSQL, from the database (its path row)."""
    (vault_root / relative).unlink()
    if media_store.in_database():
        store = backends.current()
        store.execute(f"DELETE FROM media_paths WHERE path = {store.param}", (relative,))


def damage_picture(relative: str) -> None:
    """The database's copy of ``media/...`` no longer matches its sha256 (PostgreSQL only)."""
    store = backends.current()
    store.execute(
        f"UPDATE media_blobs SET data = {store.param} WHERE sha256 = (SELECT sha256 FROM media_paths WHERE path = {store.param})",
        (b"\x89PNG damaged", relative),
    )


def picture_tool_row(conversation_id: int, paths: list[str], model: str | None = None) -> None:
    """The stored result of a generate_image call that made ``paths``, as the loop stores it."""
    import json

    from tui_agent.core.store import history

    data: dict[str, object] = {"paths": paths, "prompt": "shapes", "count": len(paths)}
    if model is not None:
        data = {"paths": paths, "prompt": "shapes", "model": model, "count": len(paths)}
    arguments = json.dumps({"prompt": "shapes", "path": "shapes/shape.png", "count": len(paths), "reason": "r"})
    history.add_message(
        conversation_id,
        "image_tool",
        json.dumps({"status": "ok", "data": data}),
        attachments=paths,
        tool_name="generate_image",
        tool_call_id="c1",
        tool_arguments=arguments,
    )
