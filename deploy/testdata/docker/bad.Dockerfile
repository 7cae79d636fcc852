FROM golang:1.26
WORKDIR /src
COPY . .
RUN go build -ldflags "-X main.version=dev" -o /slotgate ./cmd/slotgate
USER root
EXPOSE 8080 9090
ENTRYPOINT /slotgate
