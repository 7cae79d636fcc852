# syntax=docker/dockerfile:1
# slotgate: a static binary on distroless, running as non-root.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH VERSION=dev COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
    -o /out/slotgate ./cmd/slotgate

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev COMMIT=unknown
LABEL org.opencontainers.image.source="https://github.com/slotgate/slotgate" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.title="slotgate" \
      org.opencontainers.image.description="Worker-side sidecar reverse proxy that caps requests to an LLM inference engine"
COPY --from=build /out/slotgate /slotgate
USER 65532:65532
# 8080 the proxy (--listen), 9090 admin HTTP (--admin-listen), 9091 admin
# gRPC (--admin-grpc-listen), 9092 the optional gRPC port (--grpc-listen
# :9092, off unless set).
EXPOSE 8080 9090 9091 9092
ENTRYPOINT ["/slotgate"]
