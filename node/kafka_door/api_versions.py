"""ApiVersions (key 18), v0-v3: the advertised registry, and the answer to a version the door
does not know.

Kafka's ``KafkaApis.handleApiVersionsRequest`` / ``ApiVersionsRequest.getErrorResponse``: a
request of a version above the broker's is answered in the v0 body format (the header is v0 for
every ApiVersions version) with UNSUPPORTED_VERSION (35) and the API list, so the client learns
the broker's range and retries with a version it has. A v3 request whose client software name or
version is not valid (``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``) gets INVALID_REQUEST (42)
with the list, as Kafka answers it.

Answered on the loop thread (no I/O, no lock): the list is built once.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16

from node.kafka_door.build import nested
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import API_VERSIONS_KEY, encode_response, response_class
from node.kafka_door.registry import Registry

__all__ = ["Responder"]

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_NO_THROTTLE = datetime.timedelta(0)


class Responder:
    """Answers ApiVersions from a registry."""

    def __init__(self, registry: Registry) -> None:
        self._advertised = registry.advertised()

    def _keys(self, cls: type[Any]) -> tuple[Any, ...]:
        return tuple(
            cls(api_key=i16(k), min_version=i16(lo), max_version=i16(hi))
            for k, lo, hi in self._advertised
        )

    def unsupported(self, correlation_id: int) -> bytes:
        """The v0 answer to a version above the door's: UNSUPPORTED_VERSION and ApiVersions'
        own range (KIP-511; ``ApiVersionsRequest.getErrorResponse``)."""
        own = next(item for item in self._keys(ApiVersionV0) if item.api_key == API_VERSIONS_KEY)
        body = ApiVersionsResponseV0(error_code=ErrorCode.unsupported_version, api_keys=(own,))
        return encode_response(API_VERSIONS_KEY, correlation_id, body)

    def answer(self, ctx: RequestContext, request: Any) -> Any:
        """The answer to a version the door serves (the door encodes it and counts its error)."""
        version = ctx.api_version
        cls = response_class(API_VERSIONS_KEY, version)
        item_cls = nested(cls, "ApiVersion")
        error = ErrorCode.none
        if version >= 3:
            name = request.client_software_name
            software_version = request.client_software_version
            if not (_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(software_version)):
                error = ErrorCode.invalid_request
            else:
                ctx.connection.client_software = (name, software_version)
        fields: dict[str, Any] = {"error_code": error, "api_keys": self._keys(item_cls)}
        if version >= 1:
            fields["throttle_time"] = _NO_THROTTLE
        return cls(**fields)
