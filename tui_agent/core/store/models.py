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
    temperature = pw.FloatField(default=0.7)
    max_tool_rounds = pw.IntegerField(default=6)
    sql_update_approval = pw.TextField(default="ask")
    request_timeout_s = pw.FloatField(default=60)
    context_budget_tokens = pw.IntegerField(default=12000)
    chat_accepts_images = pw.TextField(default="auto")
    created_at = pw.TextField(default=utcnow)
    updated_at = pw.TextField(default=utcnow)

    class Meta:
        table_name = "profiles"


class Conversation(BaseModel):
    id = pw.AutoField()
    title = pw.TextField(default="")
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


MODELS: list[type[BaseModel]] = [Setting, Profile, Conversation, Message, Attachment, MessageRevision]
