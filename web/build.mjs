// Builds the page's script and style sheet into tui_agent/commands/serve/static/ (what the wheel
// ships), or into the folder given as the first argument (the test compares the two).
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, "..", "tui_agent", "commands", "serve", "static"));
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, "src", "main.js")],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  legalComments: "none",
  logLevel: "warning",
  outfile: join(out, "tui-agent.js"),
});
copyFileSync(join(here, "node_modules", "@xterm", "xterm", "css", "xterm.css"), join(out, "xterm.css"));
// The page's symbol font (static/page.css names it): the subset of Noto Sans Symbols 2 that holds
// Control Pictures and Miscellaneous Symbols and Arrows, with its licence.
const symbols = join(here, "node_modules", "@fontsource", "noto-sans-symbols-2");
copyFileSync(join(symbols, "files", "noto-sans-symbols-2-symbols-400-normal.woff2"), join(out, "noto-sans-symbols-2.woff2"));
copyFileSync(join(symbols, "LICENSE"), join(out, "noto-sans-symbols-2.LICENSE.txt"));
console.log(`built ${join(out, "tui-agent.js")}`);
