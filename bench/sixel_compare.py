"""Our Sixel encoder against textual-image's own, side by side in a real xterm (vt340, 256 registers).

The same three pictures (a photo, a smooth gradient with shapes, a flat-colour drawing) are encoded
by ``tui_agent.ui.sixel`` and by textual-image's public Sixel renderable
(``textual_image.renderable.SixelImage`` rendered by Rich), at the same pixel size, and shown next
to each other in xterm under Xvfb. The screenshot is cut back into the six pictures, and each is
compared with the picture both encoders were given:

- ``mae``: mean absolute error per channel (R, G, B; 0-255) pixel by pixel;
- ``blur_mae``: the same after a Gaussian blur of both (radius 2): what the eye sees at a normal
  viewing distance, where dithering's noise averages out and posterised bands do not.

    python bench/sixel_compare.py --out DIR [--label NAME]
    python bench/sixel_compare.py montage OUT.png DIR [DIR ...]   # ours next to each run's textual-image

Run it with the Python whose textual-image is to be measured (e.g. a throwaway venv with a newer
textual-image). Writes DIR/shot.png (the whole screen), DIR/<picture>-<encoder>.png (the cuts,
palette PNGs: exact, each has at most 256 colours) and DIR/results.json; prints a Markdown table.

Needs: apt-get install xvfb xterm imagemagick xdotool
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FONT = ["-fa", "DejaVu Sans Mono", "-fs", "10"]
VIRTUAL_CELL = (10, 20)  # the cell size textual-image is told (TEXTUAL_CELL_*): pictures are whole cells
PICTURES = {"photo": (20, 12), "gradient": (24, 9), "flat": (24, 9)}  # cells: 200x240, 240x180 px


def pictures() -> dict[str, object]:
    """The three source pictures, at the exact pixel size both encoders get."""
    from importlib.resources import files

    from PIL import Image, ImageDraw

    out: dict[str, object] = {}
    size = {name: (c * VIRTUAL_CELL[0], r * VIRTUAL_CELL[1]) for name, (c, r) in PICTURES.items()}
    with Image.open(str(files("textual_image") / "gracehopper.jpg")) as photo:  # a real photo (public domain)
        out["photo"] = photo.convert("RGB").resize(size["photo"], Image.Resampling.LANCZOS)
    w, h = size["gradient"]
    gradient = Image.new("RGB", (w, h))  # the fake image model's PHOTO picture (tests/bin/flux2), smaller
    gradient.putdata(
        [(x * 255 // (w - 1), y * 255 // (h - 1), (40 + 2 * x + y) % 256) for y in range(h) for x in range(w)]
    )
    draw = ImageDraw.Draw(gradient)
    draw.ellipse((20, 30, 110, 120), fill=(250, 240, 230), outline=(20, 20, 20), width=3)
    draw.rectangle((150, 20, 220, 160), outline=(0, 0, 0), width=2)
    out["gradient"] = gradient
    w, h = size["flat"]
    flat = Image.new("RGB", (w, h), (36, 40, 59))  # a chart/diagram: a handful of solid colours
    draw = ImageDraw.Draw(flat)
    for i, colour in enumerate([(230, 57, 70), (42, 157, 143), (233, 196, 106), (69, 123, 157)]):
        draw.rectangle((16 + i * 52, 150 - 30 * (i + 1), 56 + i * 52, 150), fill=colour)
    draw.ellipse((170, 12, 228, 70), fill=(244, 162, 97))
    draw.line((10, 160, 230, 160), fill=(241, 250, 238), width=2)
    out["flat"] = flat
    return out


def encode(folder: Path) -> None:
    """In a subprocess whose stdout is not a terminal: textual-image does not probe, and takes the
    cell size from TEXTUAL_CELL_WIDTH/HEIGHT (textual-image >= 0.9)."""
    import io
    from importlib.metadata import version

    from rich.console import Console
    from textual_image.renderable import SixelImage

    from tui_agent.ui import sixel

    data: dict[str, dict[str, str]] = {}
    for name, picture in pictures().items():
        picture.save(folder / f"{name}-source.png")  # type: ignore[attr-defined]
        cols, rows = PICTURES[name]
        buffer = io.StringIO()
        Console(file=buffer, force_terminal=True, width=200, height=100).print(
            SixelImage(picture, width=cols, height=rows)  # type: ignore[arg-type]
        )
        text = buffer.getvalue()
        start = text.index("\x1bP")
        theirs = text[start : text.index("\x1b\\", start) + 2]
        data[name] = {"ours": sixel.encode(picture, 256, (0, 0, 0)), "theirs": theirs}  # type: ignore[arg-type]
    (folder / "sixels.json").write_text(json.dumps({"version": version("textual-image"), "sixels": data}))


def show(folder: Path) -> None:
    """Inside xterm (stdlib only): measure the cell, draw each picture twice side by side, wait.

    xterm does not answer ``CSI 16 t`` unless window ops are allowed: the cell size comes from the
    window's size (xdotool) less xterm's two-pixel inner border on each side."""
    geometry = subprocess.run(
        ["xdotool", "getwindowgeometry", os.environ["WINDOWID"]], capture_output=True, text=True, check=True
    ).stdout
    width, height = (int(v) for v in geometry.split("Geometry:")[1].split()[0].split("x"))
    columns, lines = os.get_terminal_size()
    cw, ch = (width - 4) // columns, (height - 4) // lines
    loaded = json.loads((folder / "sixels.json").read_text())
    widest = max(c for c, _ in PICTURES.values()) * VIRTUAL_CELL[0]
    second = 3 + -(-widest // cw) + 2
    out = ["\x1b[2J\x1b[?25l", f"\x1b[1;3Htui-agent (ours)\x1b[1;{second}Htextual-image {loaded['version']}"]
    layout = {"cell": [cw, ch], "pictures": {}}
    row = 2
    for name, (_, rows) in PICTURES.items():
        pixel_rows = rows * VIRTUAL_CELL[1]
        out.append(f"\x1b[{row};3H{loaded['sixels'][name]['ours']}")
        out.append(f"\x1b[{row};{second}H{loaded['sixels'][name]['theirs']}")
        layout["pictures"][name] = {"ours": [2 * cw, (row - 1) * ch], "theirs": [(second - 1) * cw, (row - 1) * ch]}
        row += -(-pixel_rows // ch) + 1
    out.append(f"\x1b[{row};1H")
    sys.stdout.write("".join(out))
    sys.stdout.flush()
    (folder / "layout.json").write_text(json.dumps(layout))
    deadline = time.monotonic() + 120
    while not (folder / "done").exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def free_display() -> int:
    for number in range(400, 700):
        if not Path(f"/tmp/.X{number}-lock").exists() and not Path(f"/tmp/.X11-unix/X{number}").exists():
            return number
    raise RuntimeError("no free X display number")


def measure(shot: object, source: object, origin: tuple[int, int]) -> dict[str, object]:
    """Find the picture near ``origin`` (xterm's border is a few pixels) and compare it with ``source``."""
    from PIL import ImageChops, ImageFilter, ImageStat

    w, h = source.size  # type: ignore[attr-defined]
    best: tuple[float, int, int] | None = None
    for dy in range(-2, 9):
        for dx in range(-2, 9):
            x, y = origin[0] + dx, origin[1] + dy
            cut = shot.crop((x, y, x + w, y + h))  # type: ignore[attr-defined]
            error = sum(ImageStat.Stat(ImageChops.difference(cut, source)).mean)  # type: ignore[arg-type]
            if best is None or error < best[0]:
                best = (error, x, y)
    assert best is not None
    cut = shot.crop((best[1], best[2], best[1] + w, best[2] + h))  # type: ignore[attr-defined]
    mae = ImageStat.Stat(ImageChops.difference(cut, source)).mean  # type: ignore[arg-type]
    blur = ImageFilter.GaussianBlur(2)
    blurred = ImageStat.Stat(ImageChops.difference(cut.filter(blur), source.filter(blur))).mean  # type: ignore[attr-defined]
    colours = len(cut.getcolors(1 << 16) or [])
    return {"cut": cut, "at": [best[1], best[2]], "mae": mae, "blur_mae": blurred, "colours": colours}


def run(out: Path, label: str) -> int:
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sixel-compare-"))
    env = {**os.environ, "TEXTUAL_CELL_WIDTH": str(VIRTUAL_CELL[0]), "TEXTUAL_CELL_HEIGHT": str(VIRTUAL_CELL[1])}
    subprocess.run(
        [sys.executable, __file__, "encode", str(work)], env=env, check=True, stdout=subprocess.PIPE, cwd=ROOT
    )
    number = free_display()
    display = f":{number}"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1000x760x24", "-nolisten", "tcp"])
    xenv = {**os.environ, "DISPLAY": display}
    terminal = None
    try:
        for _ in range(100):
            if subprocess.run(["xdotool", "getmouselocation"], env=xenv, capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        xterm = [
            "xterm", "-ti", "vt340", "-xrm", "XTerm*decTerminalID: vt340", "-xrm", "XTerm*numColorRegisters: 256",
            *FONT, "-geometry", "140x50+0+0", "-e", "python3", __file__, "show", str(work),
        ]  # fmt: skip
        terminal = subprocess.Popen(xterm, env=xenv)
        deadline = time.monotonic() + 120
        while not (work / "layout.json").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("xterm did not draw the pictures")
            time.sleep(0.2)
        previous = b""
        while True:  # the screen has settled when two grabs are equal
            subprocess.run(["import", "-window", "root", str(out / "shot.png")], env=xenv, check=True)
            pixels = Image.open(out / "shot.png").convert("RGB").tobytes()
            if pixels == previous or time.monotonic() > deadline:
                break
            previous = pixels
            time.sleep(0.5)
    finally:
        (work / "done").touch()
        if terminal is not None:
            try:
                terminal.wait(20)
            except subprocess.TimeoutExpired:
                terminal.kill()
                terminal.wait()
        xvfb.terminate()
        xvfb.wait(10)
    shot = Image.open(out / "shot.png").convert("RGB")
    layout = json.loads((work / "layout.json").read_text())
    version = json.loads((work / "sixels.json").read_text())["version"]
    results: dict[str, object] = {"textual_image": version, "label": label, "cell": layout["cell"], "pictures": {}}
    lines = [
        f"textual-image {version} ({label}); xterm cell {layout['cell'][0]}x{layout['cell'][1]} px",
        "| picture | encoder | MAE R/G/B | blurred MAE R/G/B | colours |",
        "|---|---|---|---|---|",
    ]
    for name in PICTURES:
        source = Image.open(work / f"{name}-source.png").convert("RGB")
        entry = {}
        for encoder in ("ours", "theirs"):
            found = measure(shot, source, tuple(layout["pictures"][name][encoder]))
            cut = found.pop("cut")
            tag = "ours" if encoder == "ours" else f"textual-image-{version}"
            exact = cut.getcolors(256)
            (cut.quantize(colors=256, dither=Image.Dither.NONE) if exact else cut).save(out / f"{name}-{tag}.png")
            entry[encoder] = found
            mae = "/".join(f"{v:.1f}" for v in found["mae"])  # type: ignore[attr-defined]
            blur = "/".join(f"{v:.1f}" for v in found["blur_mae"])  # type: ignore[attr-defined]
            lines.append(f"| {name} | {tag} | {mae} | {blur} | {found['colours']} |")
        source.save(out / f"{name}-source.png")
        results["pictures"][name] = entry  # type: ignore[index]
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print("\n".join(lines))
    return 0


def montage(out: Path, runs: list[Path]) -> None:
    """One PNG: our cuts (from the first run) next to textual-image's from each run, as xterm drew them."""
    from PIL import Image, ImageDraw

    columns = [("tui-agent (ours)", runs[0], "ours")]
    for run_dir in runs:
        found = json.loads((run_dir / "results.json").read_text())["textual_image"]
        columns.append((f"textual-image {found}", run_dir, f"textual-image-{found}"))
    cuts = {name: [Image.open(d / f"{name}-{tag}.png").convert("RGB") for _, d, tag in columns] for name in PICTURES}
    width = max(c.width for row in cuts.values() for c in row) + 12
    height = 18 + sum(max(c.height for c in row) + 12 for row in cuts.values())
    sheet = Image.new("RGB", (width * len(columns), height), (0, 0, 0))
    draw = ImageDraw.Draw(sheet)
    for n, (label, _, _) in enumerate(columns):
        draw.text((n * width + 2, 3), label, fill=(255, 255, 255))
    y = 18
    for row in cuts.values():
        for n, cut in enumerate(row):
            sheet.paste(cut, (n * width, y))
        y += max(c.height for c in row) + 12
    sheet.save(out, optimize=True)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args and args[0] == "encode":
        sys.path.insert(0, str(ROOT))
        encode(Path(args[1]))
        return 0
    if args and args[0] == "montage":  # montage OUT.png RUN_DIR [RUN_DIR ...]
        montage(Path(args[1]), [Path(a) for a in args[2:]])
        return 0
    if args and args[0] == "show":
        show(Path(args[1]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", default="")
    parsed = parser.parse_args(args)
    return run(parsed.out, parsed.label)


if __name__ == "__main__":
    sys.exit(main())
