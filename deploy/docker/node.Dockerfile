# An odradek node. Build from the repository root after making the wheelhouse:
#   bash deploy/docker/build-images.sh --wheelhouse-only
#   docker build -f deploy/docker/node.Dockerfile -t odradek-node deploy/docker
# BASE is any image with python3 (3.11 or newer) and its venv module: python:3.11-slim for
# users; build-images.sh passes odradek-base:bookworm, made from Debian's packages.
ARG BASE=python:3.11-slim
FROM ${BASE}

# Dependencies come only from the wheelhouse: builds must not need the package index. The
# console extra makes the same image serve `odradek console` (deploy/compose, deploy/k8s).
COPY wheelhouse /tmp/wheelhouse
RUN python3 -m venv /opt/odradek \
    && /opt/odradek/bin/pip install --quiet --no-cache-dir --no-index \
        --find-links /tmp/wheelhouse 'odradek[console]' \
    && rm -rf /tmp/wheelhouse \
    && (getent group odradek >/dev/null || groupadd --system --gid 1000 odradek) \
    && useradd --system --uid 1000 --gid odradek --home-dir /var/lib/odradek odradek \
    && mkdir -p /var/lib/odradek \
    && chown odradek:odradek /var/lib/odradek

COPY node-entrypoint.sh /usr/local/bin/odradek-node
ENV PATH=/opt/odradek/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ODRADEK_LOG_DIRS=/var/lib/odradek/data
USER odradek
WORKDIR /var/lib/odradek
VOLUME /var/lib/odradek
EXPOSE 9092
# The node's gRPC health service answers SERVING once it is registered and serving.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["odradek-node", "health"]
ENTRYPOINT ["odradek-node"]
CMD ["start"]
