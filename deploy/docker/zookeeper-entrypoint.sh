#!/bin/sh
# The ZooKeeper image's entrypoint: writes zoo.cfg from the environment, then runs the server
# in the foreground (exec, so SIGTERM reaches it).
#
#   ZOO_CLIENT_PORT           2181
#   ZOO_CLIENT_PORT_ADDRESS   0.0.0.0 (a loopback address such as 127.0.0.10 under host networking)
#   ZOO_TICK_TIME             2000 ms; sessions may last 2 to 20 ticks unless the next two say
#   ZOO_MIN_SESSION_TIMEOUT   2 ticks
#   ZOO_MAX_SESSION_TIMEOUT   60000 ms
#   ZOO_DATA_DIR              /var/lib/zookeeper/data
#   JAVA_OPTS                 -Xmx256m
#
# TLS (all three, or none): ZooKeeper also serves TLS on the secure port, through Netty, with PEM
# stores, client certificates required and x509 authentication (a client's certificate subject
# is its identity in znode ACLs: what odradek's zookeeper.set.acl relies on). The plaintext
# port stays (the health check's ruok; with secure ACLs a client there may read, not write).
#   ZOO_SECURE_CLIENT_PORT          e.g. 2182
#   ZOO_SSL_KEYSTORE_LOCATION       PEM: ZooKeeper's key, then its certificate chain
#   ZOO_SSL_TRUSTSTORE_LOCATION     PEM: the CAs client certificates must chain to
#
#   zookeeper start   run the server
#   zookeeper ruok    exit 0 if the server answers imok (the image's health check)
set -eu

port=${ZOO_CLIENT_PORT:-2181}
address=${ZOO_CLIENT_PORT_ADDRESS:-0.0.0.0}
tick=${ZOO_TICK_TIME:-2000}
data=${ZOO_DATA_DIR:-/var/lib/zookeeper/data}

case ${1:-start} in
    ruok)
        # bash's /dev/tcp: the base image has no netcat
        probe=$address
        [ "$probe" = 0.0.0.0 ] && probe=127.0.0.1
        answer=$(timeout 3 bash -c "exec 3<>/dev/tcp/$probe/$port; printf ruok >&3; cat <&3")
        [ "$answer" = imok ]
        ;;
    start)
        mkdir -p "$data"
        config=/tmp/zoo.cfg
        cat >"$config" <<CFG
tickTime=$tick
dataDir=$data
clientPort=$port
clientPortAddress=$address
minSessionTimeout=${ZOO_MIN_SESSION_TIMEOUT:-$((2 * tick))}
maxSessionTimeout=${ZOO_MAX_SESSION_TIMEOUT:-60000}
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
CFG
        if [ -n "${ZOO_SECURE_CLIENT_PORT:-}" ]; then
            if [ -z "${ZOO_SSL_KEYSTORE_LOCATION:-}" ] || [ -z "${ZOO_SSL_TRUSTSTORE_LOCATION:-}" ]; then
                echo "zookeeper: ZOO_SECURE_CLIENT_PORT needs ZOO_SSL_KEYSTORE_LOCATION and ZOO_SSL_TRUSTSTORE_LOCATION" >&2
                exit 2
            fi
            for store in "$ZOO_SSL_KEYSTORE_LOCATION" "$ZOO_SSL_TRUSTSTORE_LOCATION"; do
                if [ ! -r "$store" ]; then
                    echo "zookeeper: cannot read $store (mounted, and readable by uid $(id -u)?)" >&2
                    exit 2
                fi
            done
            cat >>"$config" <<CFG
secureClientPort=$ZOO_SECURE_CLIENT_PORT
secureClientPortAddress=$address
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=$ZOO_SSL_KEYSTORE_LOCATION
ssl.keyStore.type=PEM
ssl.trustStore.location=$ZOO_SSL_TRUSTSTORE_LOCATION
ssl.trustStore.type=PEM
ssl.clientAuth=need
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
CFG
        fi
        # the class path is every jar of Debian's packages: zookeeper.jar's manifest leaves out
        # netty-codec.jar, which the TLS port needs (deploy/local/zookeeper.py)
        # shellcheck disable=SC2086  # JAVA_OPTS is a list of options
        exec java ${JAVA_OPTS:--Xmx256m} -cp '/usr/share/java/*' \
            org.apache.zookeeper.server.quorum.QuorumPeerMain "$config"
        ;;
    *)
        exec "$@"
        ;;
esac
