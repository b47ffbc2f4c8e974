"""The Sasl service of a SASL_SSL listener: gRPC's face of
:class:`~node.security.sasl.SaslSessions`.

A successful exchange ends with a session token, which the client sends in the metadata
``odradek-sasl-token`` (:data:`SASL_TOKEN_METADATA_KEY`) of every later call to that node; the
:class:`~node.grpc_door.authentication.AuthenticationInterceptor` turns it back into
``User:<name>``. Thread-safe (the sessions are).
"""

from __future__ import annotations

import grpc

from node.security.sasl import SaslSessions
from odradek.errors import OdradekError, UnsupportedSaslMechanismError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["SASL_TOKEN_METADATA_KEY", "SaslServicer"]

SASL_TOKEN_METADATA_KEY = "odradek-sasl-token"


class SaslServicer(pb_grpc.SaslServicer):
    """The Sasl service of a SASL_SSL listener."""

    def __init__(self, sessions: SaslSessions) -> None:
        self._sessions = sessions

    def SaslHandshake(  # noqa: N802
        self, request: pb.SaslHandshakeRequest, context: grpc.ServicerContext
    ) -> pb.SaslHandshakeResponse:
        mechanisms = list(self._sessions.mechanisms)
        try:
            session_id = self._sessions.handshake(request.mechanism)
        except UnsupportedSaslMechanismError as e:
            return pb.SaslHandshakeResponse(error_code=e.code, mechanisms=mechanisms)
        return pb.SaslHandshakeResponse(mechanisms=mechanisms, session_id=session_id)

    def SaslAuthenticate(  # noqa: N802
        self, request: pb.SaslAuthenticateRequest, context: grpc.ServicerContext
    ) -> pb.SaslAuthenticateResponse:
        try:
            auth_bytes, token = self._sessions.authenticate(request.session_id, request.auth_bytes)
        except OdradekError as e:
            return pb.SaslAuthenticateResponse(error_code=e.code, error_message=e.message)
        return pb.SaslAuthenticateResponse(auth_bytes=auth_bytes, token=token)
