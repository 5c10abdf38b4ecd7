// Package democli holds the logic of seckill's demo commands, which drive
// a running fleet by hand: one purchase through nginx (buy), the strategy
// of every instance (strategy), a reset of the goods (reset) and the
// instances' lock events as text (events). cmd/seckill maps their flags to
// the functions here.
package democli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
)

// Errors of the demo commands; compare with errors.Is.
var (
	// ErrRefused: the fleet answered the purchase with an error (a
	// *RefusedError carries it).
	ErrRefused = errors.New("purchase refused")
	// ErrInvalid: bad input, refused before anything was sent.
	ErrInvalid = errors.New("invalid input")
	// ErrDisagree: after a switch, an instance reports another setting.
	ErrDisagree = errors.New("instances disagree on the strategy")
	// ErrUnreachable: nothing answers at an address of the fleet.
	ErrUnreachable = bench.ErrUnreachable
)

// Fleet is what the demo commands talk to: nginx (Target), every instance
// (Instances, named Names) and the admin token they accept.
type Fleet struct {
	Target    string
	Instances []string
	Names     []string
	Token     string
}

// FromStack reads the fleet of the local stack in dir.
func FromStack(dir string) (Fleet, error) {
	st, err := stack.Load(dir)
	if err != nil {
		return Fleet{}, err
	}
	return Fleet{Target: st.NginxURL(), Instances: st.InstanceURLs(), Names: st.InstanceNames(), Token: st.AdminToken}, nil
}

// name returns the name of instance i.
func (f Fleet) name(i int) string {
	if i < len(f.Names) && f.Names[i] != "" {
		return f.Names[i]
	}
	return f.Instances[i]
}

func (f Fleet) admin() *bench.Admin { return bench.NewAdmin(f.Token) }

// requestTimeout bounds one purchase: the service's own budget (lock wait
// plus work plus 15 s) at the most.
const requestTimeout = stock.MaxLockWait + stock.MaxWorkDelay + 15*time.Second

// BuyOptions is one purchase. Zero GoodsID and Qty are invalid (the CLI
// supplies its defaults); an empty Key sends no Idempotency-Key.
type BuyOptions struct {
	GoodsID int64
	Qty     int64
	User    string
	Key     string
}

// RefusedError is the fleet's error answer to a purchase.
type RefusedError struct {
	Status   int
	Code     string // the JSON body's "error" ("" when the body is not the API's)
	Body     string // the body as it came, trimmed
	Instance string // X-Instance ("" when nginx itself answered)
}

func (e *RefusedError) Error() string {
	by := "nginx"
	if e.Instance != "" {
		by = e.Instance
	}
	return fmt.Sprintf("%v by %s: %d %s: %s", ErrRefused, by, e.Status, http.StatusText(e.Status), e.Body)
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Buy sends one purchase through nginx and returns its receipt, or a
// *RefusedError when the fleet refused it.
func (f Fleet) Buy(ctx context.Context, o BuyOptions) (stock.Receipt, error) {
	var r stock.Receipt
	switch {
	case o.GoodsID < 1:
		return r, fmt.Errorf("%w: goods id %d: want >= 1", ErrInvalid, o.GoodsID)
	case o.Qty < 1:
		return r, fmt.Errorf("%w: qty %d: want >= 1", ErrInvalid, o.Qty)
	case strings.TrimSpace(o.User) == "":
		return r, fmt.Errorf("%w: user: want a non-empty user id", ErrInvalid)
	}
	body, err := json.Marshal(map[string]any{"goods_id": o.GoodsID, "qty": o.Qty, "user_id": o.User})
	if err != nil {
		return r, fmt.Errorf("encode purchase: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	u := strings.TrimRight(f.Target, "/") + "/api/v1/purchase"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return r, fmt.Errorf("purchase: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.Key != "" {
		req.Header.Set("Idempotency-Key", o.Key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, fmt.Errorf("nginx at %s is %w: %v (is the stack up? seckill status)", f.Target, ErrUnreachable, adminclient.RootCause(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return r, fmt.Errorf("purchase: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted { // 202: redis-stream queued it
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e) // a body that is not the API's keeps Code empty
		return r, &RefusedError{Status: resp.StatusCode, Code: e.Error, Body: strings.TrimSpace(string(raw)), Instance: resp.Header.Get("X-Instance")}
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("purchase: decode the receipt %q: %w", raw, err)
	}
	return r, nil
}

// WriteReceipt prints a receipt on one line.
func WriteReceipt(w io.Writer, r stock.Receipt) error {
	replayed := ""
	if r.Replayed {
		replayed = " (replayed: this key was already sold)"
	}
	if r.Accepted {
		replayed += " (accepted: queued, written to MySQL by a consumer; GET /api/v1/orders/" + r.RequestID + " says when)"
	}
	_, err := fmt.Fprintf(w, "order %d: goods %d, qty %d, remaining %d, instance %s, strategy %s, fence %d, request %s%s\n",
		r.OrderID, r.GoodsID, r.Qty, r.Remaining, r.Instance, r.Strategy, r.Fence, r.RequestID, replayed)
	return err
}

// InstanceSetting is the setting one instance reports.
type InstanceSetting struct {
	Instance string
	URL      string
	Config   stock.Config
}

// String is the instance and its setting (stack.DescribeStrategy).
func (s InstanceSetting) String() string {
	return s.Instance + "  " + stack.DescribeStrategy(s.Config)
}

// Strategies reads every instance's setting (GET /admin/strategy).
func (f Fleet) Strategies(ctx context.Context) ([]InstanceSetting, error) {
	adm := f.admin()
	out := make([]InstanceSetting, 0, len(f.Instances))
	for i, base := range f.Instances {
		var cfg stock.Config
		if err := adm.Do(ctx, http.MethodGet, base, "/admin/strategy", nil, &cfg); err != nil {
			return out, fmt.Errorf("read the strategy of %s: %w", f.name(i), err)
		}
		out = append(out, InstanceSetting{Instance: f.name(i), URL: base, Config: cfg})
	}
	return out, nil
}

// SetStrategy checks cfg, switches every instance to it (PUT
// /admin/strategy), then reads every instance back (Strategies) and fails
// with ErrDisagree unless all report cfg. A cfg the service would refuse
// is refused here (ErrInvalid), before any instance changes.
func (f Fleet) SetStrategy(ctx context.Context, cfg stock.Config) ([]InstanceSetting, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	adm := f.admin()
	for i, base := range f.Instances {
		if err := adm.Do(ctx, http.MethodPut, base, "/admin/strategy", cfg, nil); err != nil {
			return nil, fmt.Errorf("switch %s to %s: %w", f.name(i), cfg.Name, err)
		}
	}
	got, err := f.Strategies(ctx)
	if err != nil {
		return got, err
	}
	var differ []string
	for _, s := range got {
		if !s.Config.Equal(cfg) {
			differ = append(differ, s.String())
		}
	}
	if len(differ) > 0 {
		return got, fmt.Errorf("%w: want %s; %s", ErrDisagree, stack.DescribeStrategy(cfg), strings.Join(differ, "; "))
	}
	return got, nil
}

// Reset sets the goods' stock and deletes its orders through the first
// instance, then returns the goods' audit and the lock backends the reset
// skipped because they were down (their strategies cannot run until they
// are back; the others can).
func (f Fleet) Reset(ctx context.Context, goods int64, stockN int) (bench.AuditReply, []bench.ResetSkip, error) {
	switch {
	case goods < 1:
		return bench.AuditReply{}, nil, fmt.Errorf("%w: goods id %d: want >= 1", ErrInvalid, goods)
	case stockN < 0:
		return bench.AuditReply{}, nil, fmt.Errorf("%w: stock %d: want >= 0", ErrInvalid, stockN)
	case len(f.Instances) == 0:
		return bench.AuditReply{}, nil, fmt.Errorf("%w: the fleet has no instances", ErrInvalid)
	}
	adm := f.admin()
	skipped, err := adm.Reset(ctx, f.Instances[0], goods, stockN)
	if err != nil {
		return bench.AuditReply{}, nil, fmt.Errorf("through %s: %w", f.name(0), err)
	}
	a, err := adm.Audit(ctx, f.Instances[0], goods)
	if err != nil {
		return a, skipped, fmt.Errorf("through %s: %w", f.name(0), err)
	}
	return a, skipped, nil
}

// WriteAudit prints an audit on one line.
func WriteAudit(w io.Writer, a bench.AuditReply) error {
	_, err := fmt.Fprintf(w, "goods %d: stock %d (initial %d), orders %d, sold %d, oversold %d, lost updates %d\n",
		a.GoodsID, a.Stock, a.InitialStock, a.Orders, a.SoldQty, a.Oversold, a.LostUpdates)
	return err
}

// itoa is strconv.FormatInt for event lines.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }
