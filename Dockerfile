# syntax=docker/dockerfile:1
# amsg: one static binary, SQLite database under /data.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# VERSION is stamped into the binary; empty reports the release it follows (cmd/amsg/version.go).
# docker build --build-arg VERSION="$(git describe --tags --always --dirty)" .
ARG VERSION=
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/amsg ./cmd/amsg \
 && mkdir -p /out/data

FROM scratch
# Push services and LLM endpoints are reached over TLS.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/amsg /amsg
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV AMSG_DATA_DIR=/data \
    AMSG_ADDR=:8080
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["/amsg", "health"]
ENTRYPOINT ["/amsg"]
CMD ["serve"]
