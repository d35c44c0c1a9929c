"""Peewee models. The tables themselves are created by ``migrations``, never by ``create_tables``."""

from __future__ import annotations

from datetime import UTC, datetime

import peewee as pw


def utcnow() -> str:
    """Timestamps are ISO text in UTC, readable from the ``sqlite3`` shell and by the memory tool."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


class BaseModel(pw.Model):
    class Meta:
        legacy_table_names = False


class Setting(BaseModel):
    key = pw.TextField(primary_key=True)
    value = pw.TextField()

    class Meta:
        table_name = "settings"


class OptionalFloatField(pw.FloatField):
    """A number or nothing; nothing is stored as '' so the NOT NULL column needs no migration."""

    def db_value(self, value: object) -> object:
        return "" if value is None or value == "" else super().db_value(value)

    def python_value(self, value: object) -> object:
        return None if value is None or value == "" else super().python_value(value)


class Profile(BaseModel):
    id = pw.AutoField()
    name = pw.TextField(unique=True)
    base_url = pw.TextField()
    api_key_env = pw.TextField(default="")
    chat_model = pw.TextField()
    vision_model = pw.TextField()
    image_backend = pw.TextField(default="command")
    image_model = pw.TextField(default="")
    image_command = pw.TextField(default='["flux2", "{prompt}", "{output}"]')
    image_base_url = pw.TextField(default="")
    images_per_request = pw.IntegerField(default=2)
    image_timeout_s = pw.FloatField(default=300)
    web_search_backend = pw.TextField(default="duckduckgo")
    web_search_url = pw.TextField(default="")
    system_prompt = pw.TextField(default="")
    memory = pw.TextField(default="")
    temperature = OptionalFloatField(default=0.7)  # None: not sent (models that accept only the default)
    max_tool_rounds = pw.IntegerField(default=6)
    sql_update_approval = pw.TextField(default="ask")
    request_timeout_s = pw.FloatField(default=60)
    context_budget_tokens = pw.IntegerField(default=12000)
    mcp_timeout_s = pw.FloatField(default=60)
    sql_update_max_rows = pw.IntegerField(default=50)
    sql_update_max_value_bytes = pw.IntegerField(default=65536)
    chat_accepts_images = pw.TextField(default="auto")
    created_at = pw.TextField(default=utcnow)
    updated_at = pw.TextField(default=utcnow)

    class Meta:
        table_name = "profiles"


class Conversation(BaseModel):
    id = pw.AutoField()
    title = pw.TextField(default="")
    leaf_id = pw.IntegerField(null=True)  # the active branch's last message (see store.branches)
    created_at = pw.TextField(default=utcnow)
    updated_at = pw.TextField(default=utcnow)

    class Meta:
        table_name = "conversations"


class Message(BaseModel):
    id = pw.AutoField()
    conversation = pw.ForeignKeyField(Conversation, backref="messages", on_delete="CASCADE")
    conversation_id: int
    role = pw.TextField()
    content = pw.TextField(default="")
    tool_name = pw.TextField(null=True)
    tool_call_id = pw.TextField(null=True)
    tool_arguments = pw.TextField(null=True)
    tool_calls = pw.TextField(null=True)
    model = pw.TextField(null=True)
    status = pw.TextField(default="complete")
    prompt_tokens = pw.IntegerField(null=True)
    completion_tokens = pw.IntegerField(null=True)
    created_at = pw.TextField(default=utcnow)
    parent_id = pw.IntegerField(null=True)  # the message before on its branch (see store.branches)
    reasoning = pw.TextField(null=True)

    class Meta:
        table_name = "messages"


class Attachment(BaseModel):
    id = pw.AutoField()
    message = pw.ForeignKeyField(Message, backref="attachments", on_delete="CASCADE")
    message_id: int
    position = pw.IntegerField()
    path = pw.TextField()
    mime = pw.TextField(default="image/png")

    class Meta:
        table_name = "attachments"


class MessageRevision(BaseModel):
    id = pw.AutoField()
    message = pw.ForeignKeyField(Message, backref="revisions", on_delete="CASCADE")
    message_id: int
    content = pw.TextField()
    reason = pw.TextField(default="")
    created_at = pw.TextField(default=utcnow)

    class Meta:
        table_name = "message_revisions"


class McpServer(BaseModel):
    """An MCP server the user added (global); ``McpServerProfile`` rows turn it on or off per profile."""

    id = pw.AutoField()
    name = pw.TextField(unique=True)
    transport = pw.TextField()
    command = pw.TextField(default="")
    args = pw.TextField(default="[]")
    env = pw.TextField(default="{}")
    cwd = pw.TextField(default="")
    url = pw.TextField(default="")
    headers = pw.TextField(default="{}")
    policy = pw.TextField(default="ask")
    tool_policies = pw.TextField(default="{}")
    timeout_s = pw.FloatField(null=True)
    enabled = pw.BooleanField(default=True)
    created_at = pw.TextField(default=utcnow)

    class Meta:
        table_name = "mcp_servers"


class McpServerProfile(BaseModel):
    server = pw.ForeignKeyField(McpServer, on_delete="CASCADE")
    profile = pw.ForeignKeyField(Profile, on_delete="CASCADE")
    enabled = pw.BooleanField()

    class Meta:
        table_name = "mcp_server_profiles"
        primary_key = pw.CompositeKey("server", "profile")


MODELS: list[type[BaseModel]] = [Setting, Profile, Conversation, Message, Attachment, MessageRevision]
MODELS += [McpServer, McpServerProfile]
