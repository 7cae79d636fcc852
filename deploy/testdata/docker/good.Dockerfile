# syntax=docker/dockerfile:1
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH VERSION=dev COMMIT=unknown
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
    -o /out/slotgate ./cmd/slotgate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/slotgate /slotgate
USER 65532:65532
EXPOSE 8080 9090 9091/tcp 9092
ENTRYPOINT ["/slotgate"]
