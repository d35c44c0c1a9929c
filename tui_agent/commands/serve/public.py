"""``serve --public-url``: the address browsers use when ``serve`` runs behind a reverse proxy.

Behind nginx or Caddy the browser names the proxy, not us: ``Host: agent.example.com`` (no port,
or 443) and ``Origin: https://agent.example.com``. The guard accepts exactly that name, port and
origin besides its own local names; any other name (a DNS-rebinding one) is still refused. Only the
root of a host name is supported: the page and the links the app opens use absolute paths
(``/static/``, ``/ws``, ``/media/``), so a path prefix would need rewriting them all.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
# A DNS name as it travels in Host headers (letters, digits, hyphens; IDNs in their xn-- form).
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")


class PublicURLError(ValueError):
    """Why a ``--public-url`` is refused (one line)."""


@dataclass(frozen=True)
class PublicURL:
    scheme: str  # "http" or "https"
    host: str  # lower case; a DNS name in ASCII (xn-- for IDNs) or an IP literal without brackets
    port: int  # as given, or the scheme's default

    @property
    def netloc(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == DEFAULT_PORTS[self.scheme] else f"{name}:{self.port}"

    @property
    def origin(self) -> str:
        """What a browser sends as ``Origin`` from the page (default ports left out, as browsers do)."""
        return f"{self.scheme}://{self.netloc}"

    @property
    def default_port(self) -> int:
        return DEFAULT_PORTS[self.scheme]


def _host(name: str) -> str:
    if name.startswith("[") and name.endswith("]"):
        try:
            return str(ipaddress.IPv6Address(name[1:-1]))
        except ValueError:
            raise PublicURLError(f"not an IPv6 address: {name}") from None
    try:
        return str(ipaddress.IPv4Address(name))
    except ValueError:
        pass
    try:
        ascii_name = name.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise PublicURLError(f"not a host name: {name!r}") from None
    labels = ascii_name.removesuffix(".").split(".")
    if len(ascii_name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise PublicURLError(f"not a host name: {name!r}")
    return ".".join(labels)


def parse_public_url(text: str) -> PublicURL:
    """``https://agent.example.com`` -> PublicURL; PublicURLError (one line) for anything else."""
    text = text.strip()
    if any(c.isspace() for c in text) or not text:
        raise PublicURLError("give a URL such as https://agent.example.com")
    try:
        parts = urlsplit(text)
    except ValueError:  # a bracketed host that is no IPv6 address
        raise PublicURLError(f"{text}: not an IPv6 address in brackets") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise PublicURLError(f"{text}: use an http:// or https:// URL, such as https://agent.example.com")
    netloc = parts.netloc
    if not netloc:
        raise PublicURLError(f"{text}: no host name")
    if "@" in netloc:
        raise PublicURLError("no user or password in the URL (the token is the credential)")
    if parts.path not in ("", "/"):
        raise PublicURLError(
            f"{text}: a path ({parts.path}) is not supported; serve from the root of a host name "
            "(e.g. a subdomain: https://agent.example.com)"
        )
    if parts.query or parts.fragment:
        raise PublicURLError(f"{text}: no query or fragment (the printed link adds the token)")
    try:
        port = parts.port
    except ValueError:
        raise PublicURLError(f"{text}: the port must be a number from 1 to 65535") from None
    if port == 0:
        raise PublicURLError(f"{text}: the port must be a number from 1 to 65535")
    hostname = netloc[: netloc.find("]") + 1] if netloc.startswith("[") else netloc.partition(":")[0]
    return PublicURL(scheme, _host(hostname), port or DEFAULT_PORTS[scheme])
