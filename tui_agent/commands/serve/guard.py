"""Who may talk to ``tui-agent serve``: the token, the Host and Origin rules, signed links.

A browser sends a host's cookies to every port of it, so any other local web server the user
visits would receive a cookie of ours: nothing here is a cookie. The credentials, none of which a
browser ever sends on its own:

- the token itself in ``?token=`` (the printed URL; a script or curl);
- on the websocket upgrade, the token as a subprotocol (``tui-agent.auth.<hex of the token>``): the
  page keeps the token in its tab's ``sessionStorage`` and sends it there (``web/src/main.js``);
- for ``/media/``, ``/gallery/`` and ``/download/``, a short-lived signed link (``?exp=&sig=``, an
  HMAC of the path and the expiry under a key derived from the token) that the server hands to the
  page over that session's websocket, or puts in the gallery pages it renders.

The page itself (``/``) and its script and styles (``/static/``) hold no secret: they need no
credential, and the page without a token in its tab asks for the printed link. Every request must
also name this server and come from its own page:

- ``Host`` must name this server: ``localhost``, a loopback or local IP literal, the bind name or
  this machine's host name, always with our port; or, behind a reverse proxy, exactly the host and
  port of ``--public-url`` (``public.py``). A DNS name an attacker controls (rebinding) fails.
- ``Origin``, when sent (browsers always send it on a websocket upgrade and on cross-origin
  fetches), must be exactly ``http://<that host>``, or the public URL's origin for its Host.
- ``Sec-Fetch-Site``, when sent, must be ``same-origin`` or ``none`` (typed into the address bar),
  which refuses ``<img>``/``<iframe>`` loads from other ports that send no ``Origin``; only a
  top-level navigation to ``/`` (the printed link clicked on another site's page) may be cross-site.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from tui_agent.commands.serve.public import PublicURL

SAFE_FETCH_SITES = {"same-origin", "none"}
PUBLIC_PREFIX = "/static/"
SIGNED_PREFIXES = ("/media/", "/gallery/", "/download/")
PROTOCOL = "tui-agent"
AUTH_PROTOCOL = PROTOCOL + ".auth."
LINK_TTL_S = 15 * 60
NO_TOKEN = "missing or wrong access token; use the URL tui-agent serve printed"
EXPIRED = "this link has expired; open it again from the app"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host == ""


def is_local_address(ip: str) -> bool:
    """True if this machine owns ``ip`` (binding to it succeeds only then; nothing is sent)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    if address.is_loopback:
        return True
    if address.is_unspecified or address.is_multicast:
        return False
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((ip, 0))
    except OSError:
        return False
    return True


def primary_address(bind_host: str) -> str:
    """An address a browser can use for a server bound to ``bind_host`` (0.0.0.0 and :: included)."""
    if not is_unspecified(bind_host):
        return bind_host
    six = ":" in bind_host
    try:
        # Connecting a UDP socket sends nothing; it picks the interface of the default route.
        with socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("2001:db8::1", 9) if six else ("192.0.2.1", 9))
            address = str(probe.getsockname()[0])
        if is_local_address(address) and not is_unspecified(address):
            return address
    except OSError:
        pass
    return "::1" if six else "127.0.0.1"


def url_host(host: str) -> str:
    """``host`` as it goes into a URL (IPv6 literals in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def split_host_header(value: str, default_port: int = 80) -> tuple[str, int] | None:
    """``"127.0.0.1:8000"`` -> ``("127.0.0.1", 8000)``; ``"[::1]:80"`` -> ``("::1", 80)``; None if malformed.

    A Host without a port names ``default_port`` (80 for us; 443 behind an https proxy)."""
    value = value.strip().lower()
    if not value or any(c.isspace() or c in "/@?#\\" for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        try:
            name = str(ipaddress.IPv6Address(name))
        except ValueError:
            return None
    else:
        name, colon, port_text = value.partition(":")
        rest = colon + port_text
        try:
            name = str(ipaddress.IPv4Address(name))
        except ValueError:
            pass
    if not rest:
        return name, default_port
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
        return None
    return name, int(rest[1:])


@dataclass
class Guard:
    """The checks for one running server (``port`` is the real, bound port)."""

    token: str
    bind_host: str
    port: int
    public: PublicURL | None = None  # --public-url: the name browsers use through a reverse proxy
    _local_ips: dict[str, bool] = field(default_factory=dict)

    @property
    def _link_key(self) -> bytes:
        """The signing key of links, derived from the token (the token itself never signs)."""
        return hmac.new(self.token.encode(), b"tui-agent link signing", hashlib.sha256).digest()

    def _signature(self, path: str, expires: int) -> str:
        return hmac.new(self._link_key, f"{path}\n{expires}".encode(), hashlib.sha256).hexdigest()[:32]

    def sign(self, path: str, query: str = "", ttl: float = LINK_TTL_S) -> str:
        """``path`` (not yet quoted) as a link that works for ``ttl`` seconds: ``/media/a.png?exp=..&sig=..``."""
        expires = int(time.time() + ttl)
        extra = f"{query}&" if query else ""
        return f"{quote(path)}?{extra}exp={expires}&sig={self._signature(path, expires)}"

    def signed_ok(self, path: str, query: Mapping[str, str]) -> bool | None:
        """True for a good signature in time, False for a good one expired, None for none or a wrong one."""
        expires, sig = query.get("exp", ""), query.get("sig", "")
        if not expires.isdigit() or len(expires) > 12 or not sig:
            return None
        if not hmac.compare_digest(sig.encode(), self._signature(path, int(expires)).encode()):
            return None
        return int(expires) >= time.time()

    def token_ok(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    def protocol_token(self, header: str | None) -> str | None:
        """The token a page sent as a websocket subprotocol (hex-encoded), if any."""
        for item in (header or "").split(","):
            item = item.strip()
            if item.startswith(AUTH_PROTOCOL):
                try:
                    return bytes.fromhex(item.removeprefix(AUTH_PROTOCOL)).decode()
                except ValueError:
                    return None
        return None

    def _local(self, ip: str) -> bool:
        if ip not in self._local_ips:
            self._local_ips[ip] = is_local_address(ip)
        return self._local_ips[ip]

    def _name_ok(self, name: str) -> bool:
        if name == "localhost" or name == self.bind_host.lower():
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return name in {socket.gethostname().lower(), socket.getfqdn().lower()}
        return self._local(name)

    def origin_for(self, host_header: str | None) -> str | None:
        """Our origin as the request named it (``http://host:port``), or None if it does not name us.

        The result is rebuilt from the parsed, checked parts, never copied from the header. Behind a
        proxy (``--public-url``), a Host naming the public host and port gives the public origin.
        """
        public = self.public
        if public is not None:
            if split_host_header(host_header or "", public.default_port) == (public.host, public.port):
                return public.origin
        parsed = split_host_header(host_header or "")
        if parsed is None:
            return None
        name, port = parsed
        if port != self.port or not self._name_ok(name):
            return None
        return f"http://{url_host(name)}" + ("" if port == 80 else f":{port}")

    def refusal(self, method: str, path: str, headers: Any, query: Mapping[str, str]) -> str | None:
        """Why this request is refused (a short reason), or None when it may pass. No cookie counts."""
        origin = self.origin_for(headers.get("Host"))
        if origin is None:
            return "this server answers only to its own address (Host)"
        sent_origin = headers.get("Origin")
        if sent_origin is not None and sent_origin != origin:
            return "request from another origin"
        query_token = query.get("token")
        site_ok = headers.get("Sec-Fetch-Site", "none") in SAFE_FETCH_SITES
        if path == "/":
            if query_token is not None and not self.token_ok(query_token):
                return NO_TOKEN
            # The printed link clicked on another site's page is a cross-site top-level navigation.
            navigation = headers.get("Sec-Fetch-Mode") == "navigate" and headers.get("Sec-Fetch-Dest") == "document"
            if site_ok or navigation or self.token_ok(query_token):
                return None
            return "request from another origin"
        if not site_ok:
            return "request from another origin"
        if path.startswith(PUBLIC_PREFIX) and method in ("GET", "HEAD"):
            return None
        if self.token_ok(query_token):
            return None
        if path == "/ws":
            sent = self.protocol_token(headers.get("Sec-WebSocket-Protocol"))
            return None if self.token_ok(sent) else NO_TOKEN
        if path.startswith(SIGNED_PREFIXES) and method in ("GET", "HEAD"):
            signed = self.signed_ok(path, query)
            if signed is not None:
                return None if signed else EXPIRED
        return NO_TOKEN
