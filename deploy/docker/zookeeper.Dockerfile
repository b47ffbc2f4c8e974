# A standalone ZooKeeper from Debian's libzookeeper-java on a headless Java 17 (Debian's
# `zookeeper` package would pull in a desktop JRE). BASE must provide both, as
# odradek-base:bookworm (deploy/docker/build-images.sh) does.
ARG BASE=odradek-base:bookworm
FROM ${BASE}

RUN (getent group zookeeper >/dev/null || groupadd --system --gid 1001 zookeeper) \
    && useradd --system --uid 1001 --gid zookeeper --home-dir /var/lib/zookeeper zookeeper \
    && mkdir -p /var/lib/zookeeper \
    && chown zookeeper:zookeeper /var/lib/zookeeper
COPY zookeeper-entrypoint.sh /usr/local/bin/zookeeper
USER zookeeper
WORKDIR /var/lib/zookeeper
VOLUME /var/lib/zookeeper
EXPOSE 2181
HEALTHCHECK --interval=10s --timeout=5s --retries=3 CMD ["zookeeper", "ruok"]
ENTRYPOINT ["zookeeper"]
CMD ["start"]
