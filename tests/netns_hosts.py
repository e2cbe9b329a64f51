"""Simulated hosts for the multi-host test: Linux network namespaces joined to this one by veth
pairs, with loopback-range addresses only.

Host ``k`` has the address 127.77.0.(k + 1) and sees this namespace at 127.77.0.1 (the same
address on every link, so services here listen on one address for all hosts). A 127/8 address
is local to every namespace, so each side routes the other's address through the veth with a
/32 route in its *local* table (longest prefix before the 127.0.0.0/8 loopback entry) and
enables ``route_localnet`` on the veth (the kernel otherwise drops 127/8 traffic off ``lo``).
A host reaches only what listens on its peer address here, never this namespace's
127.0.0.1 services. Needs CAP_NET_ADMIN (root); ``NetnsUnavailable`` says why otherwise.
"""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

GATEWAY = "127.77.0.1"
"""This namespace's address on every host link: where the shared services listen."""


class NetnsUnavailable(RuntimeError):
    """Namespaces or veth pairs cannot be created here (the message says why)."""


def _ip(*args: str, ns: str | None = None) -> None:
    command = ["ip", *(["netns", "exec", ns, "ip"] if ns else []), *args]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise NetnsUnavailable(f"{' '.join(command)}: {done.stderr.strip()}")


def _sysctl(setting: str, ns: str | None = None) -> None:
    command = [*(["ip", "netns", "exec", ns] if ns else []), "sysctl", "-qw", setting]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise NetnsUnavailable(f"{' '.join(command)}: {done.stderr.strip()}")


@dataclass(frozen=True)
class Host:
    namespace: str
    address: str  # the host's own address
    gateway: str  # this namespace's address on the link (where the services listen)

    @property
    def prefix(self) -> tuple[str, ...]:
        """Command prefix that runs a process on this host."""
        return ("ip", "netns", "exec", self.namespace)


@contextlib.contextmanager
def network_host(index: int) -> Iterator[Host]:
    """A namespace reachable at 127.77.0.<index + 1> (index >= 1), seeing this one at
    127.77.0.1; removed (with its veth pair and routes) on exit."""
    tag = uuid.uuid4().hex[:6]
    ns, here, there = f"rg{tag}", f"rgh{tag}", f"rgn{tag}"
    gateway, address = GATEWAY, f"127.77.0.{index + 1}"
    created = False
    try:
        _ip("netns", "add", ns)
        created = True
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        _ip("link", "set", there, "netns", ns)
        _ip("addr", "add", f"{gateway}/32", "dev", here)
        _ip("link", "set", here, "up")
        _sysctl(f"net.ipv4.conf.{here}.route_localnet=1")
        _ip("route", "add", "table", "local", f"{address}/32", "dev", here, "src", gateway)
        _ip("link", "set", "lo", "up", ns=ns)
        _ip("addr", "add", f"{address}/32", "dev", there, ns=ns)
        _ip("link", "set", there, "up", ns=ns)
        _sysctl(f"net.ipv4.conf.{there}.route_localnet=1", ns=ns)
        _ip("route", "add", "table", "local", f"{gateway}/32", "dev", there, "src", address, ns=ns)
        yield Host(ns, address, gateway)
    finally:
        with contextlib.suppress(NetnsUnavailable):
            _ip("link", "del", here)  # removes both ends and the routes through them
        if created:
            with contextlib.suppress(NetnsUnavailable):
                _ip("netns", "del", ns)
