"""Who may talk to ``tui-agent serve``: the token, the Host and Origin rules, the cookie, the access log.

A browser sends our cookie to every port of the same host name (cookies ignore ports), and a page
on ``http://127.0.0.1:OTHER/`` is "same-site" with ours. So a cookie alone proves nothing: every
request must also come from our own origin. The rules, for every route and the websocket upgrade:

- ``Host`` must name this server: ``localhost``, a loopback or local IP literal, the bind name or
  this machine's host name, always with our port. A DNS name an attacker controls (rebinding) fails.
- ``Origin``, when sent (browsers always send it on a websocket upgrade and on cross-origin
  fetches), must be exactly ``http://<that host>``.
- ``Sec-Fetch-Site``, when sent, must be ``same-origin`` or ``none`` (typed into the address bar),
  which refuses ``<img>``/``<iframe>`` loads from other ports that send no ``Origin``. A request
  carrying the token itself in the query may come from anywhere the user clicked it.
- the token, from ``?token=`` or the instance's cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Any

SAFE_FETCH_SITES = {"same-origin", "none"}


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


def split_host_header(value: str) -> tuple[str, int] | None:
    """``"127.0.0.1:8000"`` -> ``("127.0.0.1", 8000)``; ``"[::1]:80"`` -> ``("::1", 80)``; None if malformed."""
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
        return name, 80
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
        return None
    return name, int(rest[1:])


@dataclass
class Guard:
    """The checks for one running server (``port`` is the real, bound port)."""

    token: str
    bind_host: str
    port: int
    _local_ips: dict[str, bool] = field(default_factory=dict)

    @property
    def cookie_name(self) -> str:
        """Unique to this server (port and token): two servers never overwrite each other's cookie."""
        digest = hashlib.sha256(self.token.encode()).hexdigest()[:10]
        return f"tui_agent_{self.port}_{digest}"

    @property
    def cookie_value(self) -> str:
        """Derived from the token, so the browser's cookie jar never holds the token itself."""
        return hmac.new(self.token.encode(), f"cookie {self.cookie_name}".encode(), hashlib.sha256).hexdigest()

    def token_ok(self, query_token: str | None, cookie: str | None) -> bool:
        if query_token is not None:
            return hmac.compare_digest(query_token.encode(), self.token.encode())
        return cookie is not None and hmac.compare_digest(cookie.encode(), self.cookie_value.encode())

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

        The result is rebuilt from the parsed, checked parts, never copied from the header.
        """
        parsed = split_host_header(host_header or "")
        if parsed is None:
            return None
        name, port = parsed
        if port != self.port or not self._name_ok(name):
            return None
        return f"http://{url_host(name)}" + ("" if port == 80 else f":{port}")

    def refusal(self, headers: Any, query_token: str | None, cookie: str | None) -> str | None:
        """Why this request is refused (a short reason), or None when it may pass."""
        origin = self.origin_for(headers.get("Host"))
        if origin is None:
            return "this server answers only to its own address (Host)"
        sent_origin = headers.get("Origin")
        if sent_origin is not None and sent_origin != origin:
            return "request from another origin"
        if query_token is None and headers.get("Sec-Fetch-Site", "none") not in SAFE_FETCH_SITES:
            return "request from another origin"
        if not self.token_ok(query_token, cookie):
            return "missing or wrong access token; use the URL tui-agent serve printed"
        return None
