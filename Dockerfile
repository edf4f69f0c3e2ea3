# Multi-stage build: the release binary, compiled as CI compiles it (`cargo build --release
# --locked`), shipped on a slim Debian with nothing else. Base images are pinned to exact versions.
# The full (not slim) Rust image has the perl and make that build the vendored OpenSSL (AS2's
# S/MIME), which is linked statically: the runtime image needs no libssl.
FROM rust:1.95.0-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY src src
COPY migrations migrations
COPY benches benches
RUN cargo build --release --locked --bin edi-inbox

FROM debian:12.11-slim
# A system user without a login shell owns the data directory; the server never runs as root.
RUN useradd --system --uid 10001 --home-dir /data --create-home --shell /usr/sbin/nologin edi-inbox
COPY --from=build /src/target/release/edi-inbox /usr/local/bin/edi-inbox
USER 10001
WORKDIR /data
# Listening on every interface makes partner authentication mandatory (--auth auto).
ENV EDI_INBOX_BIND=0.0.0.0:8080 \
    DATABASE_URL=sqlite:///data/edi-inbox.db \
    EDI_INBOX_LOG_FORMAT=json
EXPOSE 8080
VOLUME ["/data"]
# `serve` applies pending migrations before it listens; `probe` asks /readyz over loopback (no
# shell or curl in the image).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["edi-inbox", "probe"]
ENTRYPOINT ["edi-inbox"]
CMD ["serve"]
