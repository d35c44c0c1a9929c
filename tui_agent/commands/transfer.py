"""``tui-agent history export ID`` and ``tui-agent history import FILE``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tui_agent.core import export
from tui_agent.core.store import history
from tui_agent.core.textsafe import visible
from tui_agent.core.vault import Vault


def run_transfer(vault: Vault, args: argparse.Namespace) -> int:
    try:
        if args.action == "export":
            return _export(vault, args)
        return _import(vault, args.file)
    except (export.ExportError, export.TargetExists) as exc:
        print(visible(f"error: {exc}"), file=sys.stderr)
        return 1
    except OSError as exc:
        print(visible(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")), file=sys.stderr)
        return 1


def _export(vault: Vault, args: argparse.Namespace) -> int:
    try:
        conversation = history.get_conversation(args.id)
    except LookupError as exc:
        raise export.ExportError(f"{exc} (tui-agent history list shows them)") from None
    if args.format == "json":
        if args.out == "-":
            sys.stdout.write(export.json_text(conversation.id))
            return 0
        out = Path(args.out or export.default_name(conversation, "json"))
        export.write_json(conversation.id, out, force=args.force)
        print(visible(f"wrote {out}"))
        return 0
    if args.out == "-":
        raise export.ExportError("Markdown export copies images beside the file: give --out a file path")
    out = Path(args.out or export.default_name(conversation, "md"))
    result = export.to_markdown(vault, conversation.id, out, reasoning=args.reasoning, force=args.force)
    images = f" and {result.images} image(s) in {out.stem}_files/" if result.images else ""
    print(visible(f"wrote {out}{images}"))
    for problem in result.problems:
        print(visible(f"warning: an image was left out: {problem}"), file=sys.stderr)
    return 0


def _import(vault: Vault, file: str) -> int:
    raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise export.ExportError(f"{file} is not UTF-8 text (byte {exc.start}); nothing was imported") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if text.lstrip().startswith("# ") or file.lower().endswith((".md", ".markdown")):
            # A Markdown export is for reading; it keeps no roles, branches or tool calls to rebuild.
            raise export.ExportError(
                f"{file} looks like a Markdown export: only a JSON export can be imported "
                "(tui-agent history export ID --format json); nothing was imported"
            ) from None
        raise export.ExportError(f"{file} is not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise export.ExportError(f"{file} is nested too deeply to be an export; nothing was imported") from None
    conversation_id = export.import_json(vault, data)
    print(f"imported as conversation {conversation_id}")
    return 0
