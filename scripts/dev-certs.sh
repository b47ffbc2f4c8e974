#!/usr/bin/env bash
# Makes a throwaway certificate authority and certificates for a development TLS cluster
# (docs/security.md). Not for production: the CA key sits next to the certificates.
#
#   bash scripts/dev-certs.sh DIR [NODES] [HOST...]
#
#   DIR      where to write (created; existing files are overwritten)
#   NODES    how many node certificates (node-1 .. node-N; default 3)
#   HOST...  extra host names / IP addresses for the nodes' subject alternative names
#            (localhost and 127.0.0.1 are always there)
#
# Writes, in Kafka's PEM keystore form (private key, then certificate chain, in one file):
#   ca.crt                     the CA certificate: every truststore (ssl.truststore.location)
#   node-<i>.pem               node i's keystore (ssl.keystore.location), subject
#                              CN=node-<i>,OU=Brokers: put User:CN=node-<i>,OU=Brokers in
#                              super.users when an authorizer is on
#   admin.pem, client.pem      client keystores (CN=admin,OU=Users and CN=client,OU=Users)
#   zookeeper.pem              ZooKeeper's keystore for its TLS port (CN=zookeeper,OU=ZooKeeper,
#                              the nodes' host names)
#   zk-client.pem              the nodes' ZooKeeper client keystore
#                              (zookeeper.ssl.keystore.location), one subject for every node,
#                              CN=odradek,OU=Brokers: with zookeeper.set.acl it owns the znodes
#   admin.properties           a --command-config file for the admin certificate
#   ca.key                     the CA's key (keep it away from the nodes)
set -euo pipefail
if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
    sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
dir="$1"
nodes="${2:-3}"
shift $(( $# >= 2 ? 2 : 1 ))
extra_hosts=("$@")
mkdir -p "$dir"
cd "$dir"
umask 077

days=825
openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
openssl req -x509 -new -key ca.key -sha256 -days "$days" -subj "/CN=odradek-dev-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt 2>/dev/null

# leaf NAME SUBJECT SAN: writes NAME.pem (key + certificate) signed by the CA
leaf() {
    local name="$1" subject="$2" san="$3"
    local key cert csr ext
    key="$(mktemp)" cert="$(mktemp)" csr="$(mktemp)" ext="$(mktemp)"
    openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null \
        | openssl pkcs8 -topk8 -nocrypt -out "$key"
    openssl req -new -key "$key" -subj "$subject" -out "$csr" 2>/dev/null
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=serverAuth,clientAuth"
        [[ -n "$san" ]] && echo "subjectAltName=$san"
    } > "$ext"
    openssl x509 -req -in "$csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 \
        -days "$days" -extfile "$ext" -out "$cert" 2>/dev/null
    cat "$key" "$cert" > "$name.pem"
    rm -f "$key" "$cert" "$csr" "$ext"
}

san="DNS:localhost,IP:127.0.0.1"
for host in "${extra_hosts[@]+"${extra_hosts[@]}"}"; do
    if [[ "$host" =~ ^[0-9.]+$ || "$host" == *:* ]]; then san+=",IP:$host"; else san+=",DNS:$host"; fi
done
for i in $(seq 1 "$nodes"); do
    leaf "node-$i" "/OU=Brokers/CN=node-$i" "$san"
done
leaf zookeeper "/OU=ZooKeeper/CN=zookeeper" "$san"
leaf zk-client "/OU=Brokers/CN=odradek" "$san"
leaf admin "/OU=Users/CN=admin" ""
leaf client "/OU=Users/CN=client" ""
rm -f ca.srl
cat > admin.properties <<PROPS
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=$PWD/ca.crt
ssl.keystore.type=PEM
ssl.keystore.location=$PWD/admin.pem
PROPS
chmod 644 ca.crt
echo "certificates for $nodes node(s) in $PWD (CA: ca.crt)"
