#!/bin/sh
# The node image's entrypoint. Configuration is the environment (ODRADEK_<PROPERTY>, see
# node/config.py: ODRADEK_ZOOKEEPER_CONNECT, ODRADEK_LISTEN_ADDRESS, ...) plus any arguments.
#
#   odradek-node start [--override k=v ...]   run the node in the foreground (exec: it is PID 1's
#                                            child under --init, or PID 1, and gets SIGTERM)
#   odradek-node health                       exit 0 if this node's gRPC health service is SERVING
#                                            (over TLS, presenting the node's own keystore, when
#                                            ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP maps its
#                                            listener to SSL)
#
# Without ODRADEK_NODE_ID the id is the ordinal at the end of the host name, so a Kubernetes
# StatefulSet's pod odradek-2 is node 2. Without ODRADEK_LISTEN_ADDRESS the node listens on
# its host name (what other nodes and clients resolve) at port 9092.
set -eu

if [ -z "${ODRADEK_NODE_ID:-}" ]; then
    ordinal=${HOSTNAME##*-}
    case $ordinal in
        '' | *[!0-9]*)
            echo "odradek-node: set ODRADEK_NODE_ID (host name $HOSTNAME has no -<ordinal>)" >&2
            exit 2
            ;;
    esac
    export ODRADEK_NODE_ID="$ordinal"
fi
export ODRADEK_LISTEN_ADDRESS="${ODRADEK_LISTEN_ADDRESS:-$(hostname -f):9092}"

command=${1:-start}
[ $# -gt 0 ] && shift
case $command in
    start)
        exec odradek node start "$@"
        ;;
    health)
        case ",${ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP:-}," in
            *:SSL,*)
                config=/tmp/odradek-health.properties
                {
                    echo "security.protocol=SSL"
                    if [ -n "${ODRADEK_SSL_TRUSTSTORE_LOCATION:-}" ]; then
                        echo "ssl.truststore.location=$ODRADEK_SSL_TRUSTSTORE_LOCATION"
                    fi
                    if [ -n "${ODRADEK_SSL_KEYSTORE_LOCATION:-}" ]; then
                        echo "ssl.keystore.location=$ODRADEK_SSL_KEYSTORE_LOCATION"
                    fi
                } >"$config"
                exec odradek node health --bootstrap-server "$ODRADEK_LISTEN_ADDRESS" \
                    --command-config "$config" "$@"
                ;;
        esac
        exec odradek node health --bootstrap-server "$ODRADEK_LISTEN_ADDRESS" "$@"
        ;;
    *)
        exec "$command" "$@"
        ;;
esac
