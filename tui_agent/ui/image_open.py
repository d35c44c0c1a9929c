"""Opening an image from the chat outside the app: an external viewer, a saved copy (the full-size
screen and the browser tab: ``image_show``).

Each action reports only what really happened: no viewer found says so, a viewer that fails
says its exit status, a saved copy names its real path. Viewer processes are always reaped.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.ui.images")


def viewer_command() -> str | None:
    return shutil.which("xdg-open") or (shutil.which("open") if sys.platform == "darwin" else None)


def open_external(app: App[Any], path: Path) -> subprocess.Popen[bytes] | None:
    """Start the desktop's viewer; a thread waits for it (no zombie) and reports a failure."""
    opener = viewer_command()
    if opener is None:
        app.notify("No external image viewer found (xdg-open is not installed). Nothing was opened.", severity="error")
        return None
    try:
        process = subprocess.Popen(
            [opener, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
    except OSError as exc:
        app.notify(f"Could not start {Path(opener).name}: {exc}", severity="error")
        return None
    app.notify(f"Asked {Path(opener).name} to open {path.name}")
    threading.Thread(target=_reap, args=(app, process, Path(opener).name), name="viewer-reaper", daemon=True).start()
    return process


def _reap(app: App[Any], process: subprocess.Popen[bytes], name: str) -> None:
    _, err = process.communicate()
    if process.returncode != 0:
        reason = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {process.returncode}"]
        log.warning("%s failed (%s): %s", name, process.returncode, reason[0])
        try:
            app.call_from_thread(app.notify, f"{name} could not open the image: {reason[0]}", severity="error")
        except RuntimeError:  # the app has exited meanwhile
            pass


def downloads_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_downloads_dir())


def save_copy(app: App[Any], path: Path, folder: Path | None = None) -> Path | None:
    """Copy the image to the downloads folder under a name that does not overwrite anything."""
    folder = folder or downloads_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target, out = _new_file(folder, path)
        with out, path.open("rb") as source:
            shutil.copyfileobj(source, out)
        if target.stat().st_size != path.stat().st_size:
            raise OSError(f"the copy has {target.stat().st_size} bytes, the image {path.stat().st_size}")
    except OSError as exc:
        app.notify(f"Could not save a copy of {path.name}: {exc}", severity="error")
        return None
    app.notify(f"Saved a copy: {target}")
    return target


def _new_file(folder: Path, path: Path) -> tuple[Path, Any]:
    """A file created for this copy only (``name.png``, else ``name-1.png``...): created exclusively,
    so that nothing already there (an earlier copy, another program's file) is ever overwritten."""
    n = 0
    while True:
        target = folder / (path.name if n == 0 else f"{path.stem}-{n}{path.suffix}")
        try:
            return target, target.open("xb")
        except FileExistsError:
            n += 1


async def have_file(app: App[Any], vault: Vault | None, path: Path) -> bool:
    """Whether ``path`` is here (with PostgreSQL: fetched from the database, on the store's thread,
    if another machine made it); if not, the user is told why in one line."""
    from tui_agent.core.media_files import MediaUnavailable, local_file
    from tui_agent.core.store import worker
    from tui_agent.core.store.errors import STORE_FAILURES
    from tui_agent.core.textsafe import visible
    from tui_agent.ui.errors import store_unavailable

    try:
        await worker.run(local_file, vault.root if vault is not None else None, path)
    except STORE_FAILURES as exc:
        app.notify(store_unavailable(exc), severity="error", markup=False)
        return False
    except MediaUnavailable as exc:
        message = f"{path.name} is no longer in the vault" if exc.missing else str(exc)
        app.notify(visible(message), severity="error", markup=False)
        return False
    return True
