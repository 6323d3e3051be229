"""An asyncio transport that forwards everything to the real one, for a protocol that
wraps another (`conn_limits.py` around uvicorn's).

The wrapped protocol writes, closes and pauses through it as through the real transport.
The one call kept back is `set_protocol`: uvicorn hands an upgraded connection to its
WebSocket protocol that way, and done on the real transport it would take the connection
away from the wrapper; here it swaps the protocol the wrapper forwards to instead, so the
wrapper sees the connection to its end. Only asyncio's public Transport interface is used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Protocol


class Wrapper(Protocol):
    """The wrapping protocol: the protocol it forwards to now, and how to change it."""

    @property
    def inner(self) -> asyncio.BaseProtocol: ...

    def switch(self, protocol: asyncio.BaseProtocol) -> None: ...


class ForwardingTransport(asyncio.Transport):
    """`real`'s methods, with `set_protocol`/`get_protocol` acting on `owner`'s inner one."""

    __slots__ = ("_owner", "_real")

    def __init__(self, real: asyncio.Transport, owner: Wrapper) -> None:
        super().__init__()
        self._real = real
        self._owner = owner

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._owner.switch(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._owner.inner

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._real.get_extra_info(name, default)

    def is_closing(self) -> bool:
        return self._real.is_closing()

    def close(self) -> None:
        self._real.close()

    def abort(self) -> None:
        self._real.abort()

    def is_reading(self) -> bool:
        return self._real.is_reading()

    def pause_reading(self) -> None:
        self._real.pause_reading()

    def resume_reading(self) -> None:
        self._real.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._real.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._real.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._real.get_write_buffer_limits()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._real.write(data)

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self._real.writelines(list_of_data)

    def write_eof(self) -> None:
        self._real.write_eof()

    def can_write_eof(self) -> bool:
        return self._real.can_write_eof()


__all__ = ["ForwardingTransport", "Wrapper"]
