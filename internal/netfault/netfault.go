// Package netfault puts a Toxiproxy proxy (github.com/Shopify/toxiproxy/v2,
// used as a library, in process) between the lab's instances and one of
// its servers, so a test or a fault scenario can stall the link, slow it
// down or cut it, and heal it again, without touching the server process.
//
// A stalled link keeps its connections open and delivers nothing in either
// direction, which is what a client sees of a server that stopped (SIGSTOP)
// or of a network that silently drops packets. A cut link refuses new
// connections and closes the open ones.
package netfault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy forwards one listen address to one upstream server. Safe for
// concurrent use.
type Proxy struct {
	mu sync.Mutex
	p  *toxiproxy.Proxy
}

var (
	serverOnce sync.Once
	server     *toxiproxy.ApiServer
)

// apiServer is the Toxiproxy server the proxies hang off. Only its Go API is
// used: it never listens.
func apiServer() *toxiproxy.ApiServer {
	serverOnce.Do(func() {
		server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	})
	return server
}

// Start proxies listen (host:port; port 0 picks a free one) to upstream.
func Start(name, listen, upstream string) (*Proxy, error) {
	p := toxiproxy.NewProxy(apiServer(), name, listen, upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("netfault: proxy %s on %s to %s: %w", name, listen, upstream, err)
	}
	return &Proxy{p: p}, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.p.Listen
}

func (p *Proxy) add(name, typ, stream string, attrs string) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("netfault: %s on %s: %w", name, p.p.Name, err)
	}
	return nil
}

// Stall holds every byte in both directions, on open and new connections,
// until Heal. Connections stay open.
func (p *Proxy) Stall() error {
	return errors.Join(
		p.add("stall-up", "timeout", "upstream", `{"timeout":0}`),
		p.add("stall-down", "timeout", "downstream", `{"timeout":0}`))
}

// Heal removes every toxic.
func (p *Proxy) Heal(ctx context.Context) error {
	p.p.Toxics.ResetToxics(ctx)
	return nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Stop()
}

// Serve runs a Toxiproxy server until ctx is done: the proxies listed in
// the JSON file config (Toxiproxy's own format: [{"name", "listen",
// "upstream", "enabled"}]) and Toxiproxy's HTTP API on listen, through
// which `seckill fault` adds and removes toxics. Log lines go to logw.
func Serve(ctx context.Context, listen, config string, logw io.Writer) error {
	logger := zerolog.New(logw).With().Timestamp().Logger().Level(zerolog.InfoLevel)
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	f, err := os.Open(config)
	if err != nil {
		return fmt.Errorf("netfault: proxy config: %w", err)
	}
	proxies, err := srv.Collection.PopulateJson(srv, f)
	f.Close()
	if err != nil {
		return fmt.Errorf("netfault: proxies of %s: %w", config, err)
	}
	fmt.Fprintf(logw, "netfault: %d proxies from %s, API on %s\n", len(proxies), config, listen)
	errc := make(chan error, 1)
	go func() { errc <- srv.Listen(listen) }()
	select {
	case err := <-errc:
		srv.Collection.Clear()
		return fmt.Errorf("netfault: API on %s: %w", listen, err)
	case <-ctx.Done():
	}
	serr := srv.Shutdown()
	srv.Collection.Clear()
	return serr
}
