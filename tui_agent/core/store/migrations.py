"""Schema versions. One step per version; each step is plain SQL so old steps never change.

The schema version lives in the database (``PRAGMA user_version``).
"""

from __future__ import annotations

import sqlite3

V1 = """
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE profiles (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    base_url TEXT NOT NULL,
    api_key_env TEXT NOT NULL DEFAULT '',
    chat_model TEXT NOT NULL,
    vision_model TEXT NOT NULL,
    image_backend TEXT NOT NULL DEFAULT 'command',
    image_model TEXT NOT NULL DEFAULT '',
    image_command TEXT NOT NULL DEFAULT '["flux2", "{prompt}", "{output}"]',
    image_base_url TEXT NOT NULL DEFAULT '',
    images_per_request INTEGER NOT NULL DEFAULT 2,
    image_timeout_s REAL NOT NULL DEFAULT 300,
    web_search_backend TEXT NOT NULL DEFAULT 'duckduckgo',
    web_search_url TEXT NOT NULL DEFAULT '',
    system_prompt TEXT NOT NULL DEFAULT '',
    memory TEXT NOT NULL DEFAULT '',
    temperature REAL NOT NULL DEFAULT 0.7,
    max_tool_rounds INTEGER NOT NULL DEFAULT 6,
    sql_update_approval TEXT NOT NULL DEFAULT 'ask',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    tool_name TEXT,
    tool_call_id TEXT,
    tool_arguments TEXT,
    tool_calls TEXT,
    model TEXT,
    status TEXT NOT NULL DEFAULT 'complete',
    created_at TEXT NOT NULL
);
CREATE INDEX messages_conversation ON messages(conversation_id, id);
CREATE TABLE attachments (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    path TEXT NOT NULL,
    mime TEXT NOT NULL DEFAULT 'image/png'
);
CREATE INDEX attachments_message ON attachments(message_id, position);
"""

V2 = """
ALTER TABLE messages ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE messages ADD COLUMN completion_tokens INTEGER;
ALTER TABLE profiles ADD COLUMN request_timeout_s REAL NOT NULL DEFAULT 60;
ALTER TABLE profiles ADD COLUMN context_budget_tokens INTEGER NOT NULL DEFAULT 12000;
CREATE TABLE message_revisions (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    content TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX message_revisions_message ON message_revisions(message_id, id);
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='id');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
"""

# Branches (regenerate, edit and resend): a parent link per message, the active leaf per
# conversation (see store/branches.py). NULL parents mean "the message before", so existing
# conversations are one straight branch without rewriting them.
V_BRANCHES = """
ALTER TABLE messages ADD COLUMN parent_id INTEGER;
ALTER TABLE conversations ADD COLUMN leaf_id INTEGER;
CREATE INDEX messages_parent ON messages(parent_id);
"""

V_MCP = """
ALTER TABLE profiles ADD COLUMN mcp_timeout_s REAL NOT NULL DEFAULT 60;
CREATE TABLE mcp_servers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    transport TEXT NOT NULL,
    command TEXT NOT NULL DEFAULT '',
    args TEXT NOT NULL DEFAULT '[]',
    env TEXT NOT NULL DEFAULT '{}',
    cwd TEXT NOT NULL DEFAULT '',
    url TEXT NOT NULL DEFAULT '',
    headers TEXT NOT NULL DEFAULT '{}',
    policy TEXT NOT NULL DEFAULT 'ask',
    tool_policies TEXT NOT NULL DEFAULT '{}',
    timeout_s REAL,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL
);
CREATE TABLE mcp_server_profiles (
    server_id INTEGER NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
    profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
    enabled INTEGER NOT NULL,
    PRIMARY KEY (server_id, profile_id)
);
"""

V_SQL_CAPS = """
ALTER TABLE profiles ADD COLUMN sql_update_max_rows INTEGER NOT NULL DEFAULT 50;
ALTER TABLE profiles ADD COLUMN sql_update_max_value_bytes INTEGER NOT NULL DEFAULT 65536;
"""

# Reasoning (thinking) of a reply, kept apart from its content and never sent back to the model.
V_REASONING = """
ALTER TABLE messages ADD COLUMN reasoning TEXT;
"""

# Whether chat_model takes images: auto (yes only when it is the vision_model), yes, no.
V_CHAT_IMAGES = """
ALTER TABLE profiles ADD COLUMN chat_accepts_images TEXT NOT NULL DEFAULT 'auto';
"""

STEPS: list[str] = [V1, V2, V_BRANCHES, V_MCP, V_SQL_CAPS, V_REASONING, V_CHAT_IMAGES]
LATEST = len(STEPS)


def current_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: int = LATEST) -> int:
    """Apply every step above the database's version up to ``target``; return the new version.

    Each step runs in its own transaction together with the version bump, so a crash
    leaves the database at a whole version.
    """
    version = current_version(conn)
    if version > LATEST:
        raise RuntimeError(
            f"database schema version {version} is newer than this tui-agent ({LATEST}); upgrade tui-agent"
        )
    while version < target:
        conn.execute("BEGIN IMMEDIATE")
        # Another process may have migrated while we waited for the write lock: read it again.
        version = current_version(conn)
        if version >= target:
            conn.execute("ROLLBACK")
            break
        script = STEPS[version]
        try:
            for statement in _split(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        version += 1
    return version


def _split(script: str) -> list[str]:
    """Split a migration script into complete statements (triggers contain semicolons)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer.strip()[:80]}")
    return statements
