package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/contract"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Service is a stock service the bench loads and audits through the
// service contract only (bench/contract, docs/contract.md): a unit of
// every round beside the lab's strategies, or alone. Nothing of the lab's
// admin API is asked of it: no strategy switch, no lock events, no cost
// counts, no CPU per process; the lock wait is the mean of its answers'
// lock_wait_ms when it gives them.
type Service struct {
	// Name is the service's row in the report: lower-case letters, digits
	// and dashes, not a strategy's name. Required.
	Name string
	// URL is where its contract answers (its load balancer): the
	// purchases and the audit calls go there. Required.
	URL string
	// Token is the bearer token its /admin calls send. Optional, defaults
	// to none.
	Token string
	// Unprotected says the service takes no lock on purpose (a baseline):
	// its oversold is expected, not a finding. Optional, defaults to
	// false: the service is held to every invariant.
	Unprotected bool
}

// ServiceNote is the report's line on a service's run: what a contract
// audit leaves out, and why.
const ServiceNote = "loaded and audited through the service contract alone (docs/contract.md): no cost model, " +
	"lock cycle, lock events or CPU per process, which only the lab's own instances report; the lock wait is " +
	"the mean of the answers' lock_wait_ms when the service gives it"

var serviceName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// ParseService reads a --service value, NAME=URL.
func ParseService(v string) (Service, error) {
	name, u, ok := strings.Cut(v, "=")
	if !ok {
		return Service{}, fmt.Errorf("service %q: want NAME=URL such as curator=http://127.0.0.1:17600", v)
	}
	return Service{Name: name, URL: u}, nil
}

// checkServices names the first service of o that cannot run.
func (o Options) checkServices() error {
	seen := map[string]bool{}
	for _, s := range o.Services {
		switch {
		case !serviceName.MatchString(s.Name):
			return fmt.Errorf("%w: Services: name %q: want lower-case letters, digits and dashes (at most 40)", ErrInvalidOptions, s.Name)
		case seen[s.Name] || slices.Contains(o.Strategies, s.Name):
			return fmt.Errorf("%w: Services: name %q is given twice", ErrInvalidOptions, s.Name)
		}
		if _, ok := catalog.Lookup(s.Name); ok {
			return fmt.Errorf("%w: Services: name %q is a strategy's; name the service apart (e.g. %s-service)", ErrInvalidOptions, s.Name, s.Name)
		}
		if pu, err := url.Parse(s.URL); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("%w: Services: %s: %q is not an http(s) URL", ErrInvalidOptions, s.Name, s.URL)
		}
		seen[s.Name] = true
	}
	return nil
}

// contractOnly reports whether o runs services alone: no lab fleet.
func (o Options) contractOnly() bool {
	return len(o.Services) > 0 && o.Fleet.Target == "" && len(o.Fleet.Instances) == 0
}

// client is the contract's client of s.
func (s *Service) client() *contract.Client {
	return &contract.Client{Base: s.URL, Token: s.Token}
}

// checkServices fails unless every service answers the contract's stock
// read (a goods it does not have is a 404 the contract allows).
func (r *runner) checkServices(ctx context.Context) error {
	for i := range r.o.Services {
		s := &r.o.Services[i]
		_, err := s.client().Stock(ctx, r.o.GoodsID)
		var ce *contract.CallError
		if err != nil && !(errors.As(err, &ce) && ce.Status == 404) {
			return fmt.Errorf("service %s: %w", s.Name, err)
		}
	}
	return nil
}

// serviceRun starts the record of a service's run.
func (r *runner) serviceRun(rs runSpec) RunResult {
	o := r.o
	return RunResult{
		Strategy: rs.svc.Name, Name: rs.name(), Repeat: rs.Repeat, ServiceURL: rs.svc.URL,
		ExpectedCorrect: !rs.svc.Unprotected, InitialStock: o.Stock, Requests: o.Requests,
		Concurrency: rs.Concurrency, Qty: o.Qty, Rate: o.Rate, Seed: o.Seed,
		AnswersPerInstance: map[string]int{},
	}
}

// serviceState reads what a service's run left, through the contract:
// the stock now and the request ids with an order (each of the run's
// qty).
func (r *runner) serviceState(ctx context.Context, s *Service) (ServerState, error) {
	c := s.client()
	stock, err := c.Stock(ctx, r.o.GoodsID)
	if err != nil {
		return ServerState{}, fmt.Errorf("service %s: audit: %w", s.Name, err)
	}
	ids, err := c.Orders(ctx, r.o.GoodsID)
	if err != nil {
		return ServerState{}, fmt.Errorf("service %s: audit: %w", s.Name, err)
	}
	return ServerState{InitialStock: r.o.Stock, FinalStock: int(stock), Orders: len(ids), SoldQty: len(ids) * r.o.Qty, RequestIDs: ids}, nil
}

// answerCheck checks a service's purchase answers against the contract
// as they come: it keeps the first violation (which fails the run) and
// the mean lock wait the answers give.
type answerCheck struct {
	first    error
	waitSum  time.Duration
	waitSeen int
}

// check reads one answer; a transport error or a proxy's 502 or 504 (no
// service answered) is not the service's answer and is not checked.
func (c *answerCheck) check(status int, body []byte) {
	if status == 0 || status == 502 || status == 504 {
		return
	}
	p, err := contract.CheckPurchase(status, body)
	if err != nil {
		if c.first == nil {
			c.first = err
		}
		return
	}
	if p.LockWait != nil {
		c.waitSum += *p.LockWait
		c.waitSeen++
	}
}

// lockWaitMS is the mean lock wait the answers gave; nil when none did.
func (c *answerCheck) lockWaitMS() *float64 {
	if c.waitSeen == 0 {
		return nil
	}
	v := float64(c.waitSum.Microseconds()) / 1000 / float64(c.waitSeen)
	return &v
}
