# Multi-stage build: compile the release binary, ship it on a slim Debian with nothing else.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY migrations migrations
RUN cargo build --release --locked

FROM debian:bookworm-slim
RUN useradd --system --home /data --create-home edi-inbox
COPY --from=build /src/target/release/edi-inbox /usr/local/bin/edi-inbox
USER edi-inbox
WORKDIR /data
ENV EDI_INBOX_BIND=0.0.0.0:8080 \
    DATABASE_URL=sqlite:///data/edi-inbox.db \
    EDI_INBOX_LOG_FORMAT=json
EXPOSE 8080
VOLUME ["/data"]
ENTRYPOINT ["edi-inbox"]
CMD ["serve"]
