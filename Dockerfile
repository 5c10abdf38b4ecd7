# Dockerfile: the seckill binary (`seckill serve` in docker-compose.yml).
# Multi-stage: build a static binary with the Go toolchain, ship it on
# distroless (no shell, runs as nonroot).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/seckill ./cmd/seckill

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/seckill /usr/local/bin/seckill
EXPOSE 8080
# Numeric, distroless's nonroot: Kubernetes checks runAsNonRoot against it.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/seckill"]
CMD ["serve", "--listen", ":8080"]
