// The page of `tui-agent serve`: xterm.js with the image addon (Sixel), talking to one app process
// over the session's websocket (textual-serve's protocol: JSON text frames up, binary frames down).
//
// The access token never becomes a cookie: the printed URL carries it once, the page keeps it in
// this tab's sessionStorage (which no other origin, port or tab can read), drops it from the address
// bar, and sends it in the websocket handshake as a subprotocol. Links the app opens (/media/,
// /gallery/, downloads) arrive signed by the server over this websocket.
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { ImageAddon } from "@xterm/addon-image";
import { Unicode11Addon } from "@xterm/addon-unicode11";

const TOKEN_KEY = "tui-agent-token";
const PROTOCOL = "tui-agent";

function takeToken() {
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get("token");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete("token");
    const rest = url.searchParams.toString();
    history.replaceState(null, "", url.pathname + (rest ? "?" + rest : "") + url.hash);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function hex(text) {
  return Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("");
}

function openLink(url, newTab) {
  // Our own paths (signed by the server), or a web link (http/https) in a tab that cannot reach back.
  const target = new URL(url, window.location.origin);
  if (target.origin === window.location.origin) {
    window.open(target.pathname + target.search, newTab ? "_blank" : "_self");
  } else if (target.protocol === "https:" || target.protocol === "http:") {
    window.open(target.href, "_blank", "noopener,noreferrer");
  }
}

class Session {
  constructor(element, token) {
    this.element = element;
    this.token = token;
    this.socket = null;
    this.instance = undefined;
    this.focusReported = false;
    this.terminal = new Terminal({
      allowProposedApi: true,
      fontSize: Number(element.dataset.fontSize) || 16,
      scrollback: 0,
      // The last family is the page's own (static/page.css): the glyphs the app draws that few
      // system fonts have, such as the header's ⭘ and ␛ for an escape character.
      fontFamily: "'Roboto Mono', Monaco, 'Courier New', monospace, 'Noto Sans Symbols 2'",
    });
    this.fitAddon = new FitAddon();
    this.terminal.loadAddon(this.fitAddon);
    this.terminal.loadAddon(new Unicode11Addon());
    this.terminal.unicode.activeVersion = "11";
    // Sixel only (the app's own encoder); no iTerm images and no size reports into the keyboard stream.
    this.images = new ImageAddon({ enableSizeReports: false, iipSupport: false });
    this.terminal.loadAddon(this.images);
    this.terminal.open(element);
    window.tuiAgent = this; // for tests and the bench: the terminal and its image storage
    const screen = this.terminal.element.querySelector(".xterm-screen");
    screen.addEventListener("blur", () => this.send(["blur"]), true);
    screen.addEventListener("focus", () => this.send(["focus"]), true);
    this.terminal.onResize((size) => this.send(["resize", { width: size.cols, height: size.rows }]));
    this.terminal.onData((data) => this.send(["stdin", data]));
    window.addEventListener("resize", () => this.fit());
    // The page is the app: it takes the keyboard when it loads and whenever its tab or window comes
    // back, so keys typed before any click reach the app.
    this.terminal.focus();
    window.addEventListener("focus", () => this.focus());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.focus();
    });
  }

  // Textual's web driver starts the app believing it is blurred (it posts AppBlur as it starts), and
  // a blurred app draws no keys in its footer. That start-up message is queued before the app's first
  // frame is written, so once that frame is here the page says where the keyboard really is.
  reportFocusOnce() {
    if (this.focusReported) return;
    const buffer = this.terminal.buffer.active;
    for (let y = 0; y < buffer.length; y++) {
      if (buffer.getLine(y).translateToString(true).trim()) {
        this.focusReported = true;
        this.send([document.hasFocus() && this.element.contains(document.activeElement) ? "focus" : "blur"]);
        return;
      }
    }
  }

  focus() {
    // Not while a notice (session ended, refused) offers its button instead.
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.terminal.focus();
  }

  send(message) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  fit() {
    this.fitAddon.fit();
  }

  // The size of one cell in CSS pixels, which is what a Sixel pixel maps to in the image addon.
  cell() {
    const dims = this.terminal._core._renderService.dimensions.css.cell;
    return `${Math.floor(dims.width * 100) / 100}x${Math.floor(dims.height * 100) / 100}`;
  }

  connect() {
    this.fit();
    const size = this.fitAddon.proposeDimensions() || { cols: 80, rows: 24 };
    const query = `?width=${size.cols}&height=${size.rows}&cell=${this.cell()}`;
    this.socket = new WebSocket(this.element.dataset.sessionWebsocketUrl + query, [
      PROTOCOL,
      `${PROTOCOL}.auth.${hex(this.token)}`,
    ]);
    this.socket.binaryType = "arraybuffer";
    let opened = false;
    this.socket.addEventListener("open", () => {
      opened = true;
      this.element.classList.add("-connected");
      this.fit();
      this.send(["resize", { width: this.terminal.cols, height: this.terminal.rows }]);
      document.body.classList.add("-loaded");
      this.terminal.focus();
    });
    // Never opened: the server refused the session (all its --max-sessions in use) or was unreachable.
    this.socket.addEventListener("close", () => document.body.classList.add(opened ? "-closed" : "-refused"));
    this.socket.addEventListener("message", (event) => this.receive(event.data));
  }

  receive(data) {
    if (typeof data !== "string") {
      const bytes = new Uint8Array(data);
      this.terminal.write(bytes, () => this.reportFocusOnce());
      if (bytes.length > 10) document.body.classList.add("-first-byte");
      return;
    }
    const [kind, payload] = JSON.parse(data);
    if (kind === "instance_id") {
      this.instance = payload;
    } else if (kind === "open_url") {
      openLink(payload.url, payload.new_tab);
    } else if (kind === "download_url") {
      openLink(payload, true);
    }
  }
}

function start() {
  const element = document.getElementById("terminal");
  const token = takeToken();
  if (!token) {
    document.body.classList.add("-no-token");
    return;
  }
  const session = new Session(element, token);
  session.connect();
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", start);
} else {
  start();
}

document.addEventListener("click", (event) => {
  if (event.target && (event.target.id === "restart" || event.target.id === "retry")) window.location.reload();
});
