"""memory_sql's walls on PostgreSQL: a role of its own, a schema of views, and one function.

The model's statement runs inside ``tui_agent_memory.run_select``, a ``SECURITY DEFINER``
function owned by ``tui_agent_memory``, a role that cannot log in, may read only the views of the
``tui_agent_memory`` schema and may write nothing. While a security-definer function runs,
PostgreSQL itself refuses to change the role (``SET ROLE``, ``set_config('role', ...)``,
``SET SESSION AUTHORIZATION``: "cannot set parameter role within security-definer function"),
and the refusal holds in everything the function calls, however deep (``ts_stat`` running SQL
text included): nothing the statement runs can leave the role, whoever the app's own user is (a
superuser too). The function runs the statement to its end inside itself and hands back JSON
rows: no cursor outlives it, so no part of the statement runs after it returned.

The views are security barriers that leave out ``memory_tool`` rows (and their revisions and
attachments), so the seed's ``role != 'memory_tool'`` holds whatever the SQL says; the tables
themselves (settings, profiles, mcp_servers, media_blobs...) are granted nothing. The app's
user is a member of the role (core/tools/pg_run.py switches to it with ``SET LOCAL ROLE`` before
calling the function, in a READ ONLY transaction); nobody else may call the function.

``setup_sql`` is idempotent: ``tui-agent db setup`` runs it, ``--print`` shows it to a DBA, and
memory_sql runs it by itself the first time when the connected user may (``ensure``).
"""

from __future__ import annotations

import re
from typing import Any

from tui_agent.core.tools.pg_names import (  # noqa: F401  (this module's names too)
    HIDDEN_ROLE,
    MARK,
    MESSAGE_COLUMNS,
    ROLE,
    RUN_SELECT,
    SCHEMA,
    VERSION,
    VIEW_COLUMNS,
    VIEWS,
    SetupMissing,
)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def setup_sql(members: list[str], tables_schema: str = "public") -> str:
    """The whole set-up, safe to run again; ``members``: the users who run tui-agent."""
    t = quote_ident(tables_schema)
    s = quote_ident(SCHEMA)
    visible = f"SELECT id FROM {t}.messages WHERE role IS DISTINCT FROM '{HIDDEN_ROLE}'"
    grants = "\n".join(f"GRANT {ROLE} TO {quote_ident(member)};" for member in members)
    return f"""-- tui-agent: memory_sql's role, views and grants (idempotent; run as the owner of the tables)
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
        CREATE ROLE {ROLE} NOLOGIN NOINHERIT;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;  -- made meanwhile by another database
END $$;
ALTER ROLE {ROLE} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT;
{grants}
CREATE SCHEMA IF NOT EXISTS {s};
REVOKE ALL ON SCHEMA {s} FROM PUBLIC;
CREATE OR REPLACE VIEW {s}.messages WITH (security_barrier) AS
    SELECT {MESSAGE_COLUMNS} FROM {t}.messages WHERE role IS DISTINCT FROM '{HIDDEN_ROLE}'
    WITH LOCAL CHECK OPTION;
CREATE OR REPLACE VIEW {s}.conversations WITH (security_barrier) AS
    SELECT id, title, created_at, updated_at, leaf_id FROM {t}.conversations;
CREATE OR REPLACE VIEW {s}.message_revisions WITH (security_barrier) AS
    SELECT id, message_id, content, reason, created_at FROM {t}.message_revisions WHERE message_id IN ({visible});
CREATE OR REPLACE VIEW {s}.attachments WITH (security_barrier) AS
    SELECT id, message_id, position, path, mime FROM {t}.attachments WHERE message_id IN ({visible});
-- group_concat as in SQLite, for models that write SQLite's dialect
CREATE OR REPLACE FUNCTION {s}.group_concat_step(acc text, value text, sep text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $f$
    SELECT CASE WHEN value IS NULL THEN acc WHEN acc IS NULL THEN value ELSE acc || sep || value END $f$;
CREATE OR REPLACE FUNCTION {s}.group_concat_step(acc text, value text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $f$ SELECT {s}.group_concat_step(acc, value, ',') $f$;
CREATE OR REPLACE AGGREGATE {s}.group_concat(text, text) (SFUNC = {s}.group_concat_step, STYPE = text);
CREATE OR REPLACE AGGREGATE {s}.group_concat(text) (SFUNC = {s}.group_concat_step, STYPE = text);
-- The statement runs inside this function, as its owner {ROLE}: PostgreSQL refuses to change the
-- role within a security-definer function, in everything it calls. The header row (n = 0) names
-- the columns (the statement under LIMIT 0: nothing of it runs); then at most max_rows + 1 rows.
CREATE OR REPLACE FUNCTION {RUN_SELECT}(statement text, max_rows integer)
    RETURNS TABLE (n integer, row_json json)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {s}, pg_catalog, pg_temp AS $f$
DECLARE
    found_row record;
BEGIN
    n := 0;
    EXECUTE 'SELECT row_to_json(memory_sql_z) FROM (SELECT memory_sql_s.* FROM (SELECT) AS memory_sql_v '
        || 'LEFT JOIN (SELECT * FROM (' || statement || ') AS memory_sql_i LIMIT 0) AS memory_sql_s ON true) '
        || 'AS memory_sql_z' INTO row_json;
    RETURN NEXT;
    FOR found_row IN EXECUTE statement LOOP
        n := n + 1;
        row_json := to_json(found_row);
        RETURN NEXT;
        EXIT WHEN n > max_rows;
    END LOOP;
END $f$;
GRANT CREATE ON SCHEMA {s} TO {ROLE};  -- an owner needs it (only while it becomes one)
ALTER FUNCTION {RUN_SELECT}(text, integer) OWNER TO {ROLE};
REVOKE CREATE ON SCHEMA {s} FROM {ROLE};
REVOKE ALL ON FUNCTION {RUN_SELECT}(text, integer) FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM PUBLIC, {ROLE};
GRANT USAGE ON SCHEMA {s} TO {ROLE};
GRANT SELECT ON {s}.messages, {s}.conversations, {s}.message_revisions, {s}.attachments TO {ROLE};
COMMENT ON SCHEMA {s} IS '{MARK}';
"""


def state(conn: Any) -> str:
    """ "" when memory_sql can run as this connection's user, else what is missing, in words."""
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s), "
            "EXISTS (SELECT FROM pg_roles WHERE rolname = %s)",
            (SCHEMA, ROLE),
        )
        mark, role = cursor.fetchone()
        if not role:
            return f"the role {ROLE} does not exist"
        if mark != MARK:
            return f"the schema {SCHEMA} is missing or was made by another version"
        cursor.execute(
            "SELECT p.prosecdef AND p.proowner = (SELECT oid FROM pg_roles WHERE rolname = %s) "
            "FROM pg_proc p WHERE p.oid = to_regprocedure(%s)",
            (ROLE, f"{RUN_SELECT}(text, integer)"),
        )
        row = cursor.fetchone()
        if row is None or not row[0]:
            return f"the function {RUN_SELECT} is missing or is not run as {ROLE}"
        cursor.execute("SELECT pg_has_role(session_user, %s, 'MEMBER')", (ROLE,))
        if not cursor.fetchone()[0]:
            return f"this user is not a member of the role {ROLE}"
    return ""


def apply(conn: Any, members: list[str] | None = None) -> None:
    """Run the set-up on ``conn`` (psycopg, autocommit) in one transaction, for its user by default."""
    with conn.transaction(), conn.cursor() as cursor:
        cursor.execute("SELECT session_user, current_schema()")
        user, schema = cursor.fetchone()
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (0x7475_6D65,))  # "tume": one set-up at a time
        cursor.execute(setup_sql(members or [user], schema or "public"))


def check_name(name: str) -> str:
    """A role name given on the command line: plain identifiers only (it is written into SQL)."""
    if not _NAME.match(name):
        raise ValueError(f"not a plain PostgreSQL role name: {name!r}")
    return name


def missing_message(what: str, user: str) -> str:
    return (
        f"memory_sql on PostgreSQL needs its own role and views ({what}) and {user} may not create them: "
        "run `tui-agent db setup` as the tables' owner, or give a DBA the SQL of `tui-agent db setup --print`"
    )
