"""memory_sql tests on both stores: which one is bound, and a PostgreSQL store's whole content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from store_rows import rows

from tui_agent.core.store.models import Message


def is_postgresql() -> bool:
    return (
        getattr(Message._meta.database, "store_url", None) is not None
        and Message._meta.database.store_url.is_postgresql
    )


def pg_dump() -> list[str]:
    """Every table and column of the store, and every row of each: what a refusal must leave as it was."""
    tables = [
        row["t"]
        for row in rows(
            "SELECT table_schema || '.' || table_name AS t FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        )
    ]
    columns = rows(
        "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3"
    )
    dump = [repr(tables), repr(columns)]
    for table in tables:
        dump.append(repr(rows(f"SELECT * FROM {table} ORDER BY 1")))
    return dump


async def sql(env: Any, query: str, approve: Any = None) -> Any:
    """memory_sql run as the model would call it, on the test's vault and profile."""
    from tui_agent.core.tools.base import ToolContext
    from tui_agent.core.tools.registry import default_registry

    ctx = ToolContext(env.vault, env.reload_profile(), approve)
    return await default_registry().execute("memory_sql", {"query": query}, ctx)


def contents() -> list[str]:
    """Every message's content, in order."""
    return [m.content for m in Message.select().order_by(Message.id)]


def answering(answer: bool, asked: list[str] | None = None) -> Any:
    """An approval that answers ``answer`` to every question, keeping the questions in ``asked``."""

    async def approve(tool: Any, question: str) -> bool:
        if asked is not None:
            asked.append(question)
        return answer

    return approve


def edit_first_message() -> tuple[Any, Any]:
    """The model's two replies: a memory_sql UPDATE of message 1 (it needs approval), then "Done."."""
    import json

    from fake_openai import Reply

    query = json.dumps({"query": "UPDATE messages SET content = 'edited' WHERE id = 1"})
    return Reply(tool_calls=[("memory_sql", query)]), Reply(text="Done.")


async def declined_question(env: Any, query: str) -> list[str]:
    """``query`` run and declined at its approval: the lines of the question the user was asked."""
    asked: list[str] = []
    result = await sql(env, query, answering(False, asked))
    assert result.error == "the user declined this UPDATE; nothing was changed"
    (question,) = asked
    return question.splitlines()


def exited(pid: int) -> bool:
    """Gone or a zombie: it has run its exit (and sent its children their parent-death signal)."""
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
