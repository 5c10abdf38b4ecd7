// Package api is the stock service's HTTP layer (Gin): the purchase API,
// the admin API, /healthz, /readyz, /livez and /metrics. Every response carries X-Instance;
// every error is a status code plus a JSON body {"error": ...}.
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"net/http/pprof"
	"os"
	rpprof "runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Check is one backend health probe for /healthz.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
	// Ready marks a backend the instance cannot take any request without
	// (MySQL): /readyz probes these only. Optional, defaults to false: a
	// lock server that is down fails its own strategy's purchases (503
	// backend_unavailable), not the instance's readiness.
	Ready bool
}

// Options configure the handler.
type Options struct {
	Service *stock.Service
	// AdminToken guards /admin; empty disables it (403).
	AdminToken string
	// Checks are the configured backends, probed by /healthz.
	Checks []Check
	// Registry serves /metrics; Metrics must be registered on it.
	Registry *prometheus.Registry
	Metrics  *Metrics
	// Events is the instance's lock event stream, served at
	// /admin/events; nil serves 404 there.
	Events *stock.Events
	// Log receives the full text of errors that responses do not carry
	// (driver and backend errors, panics). Default: stderr.
	Log *log.Logger
	// MaxBody bounds request bodies. Default 4 KiB.
	MaxBody int64
	// Cost counts the instance's requests to its servers, served at
	// /admin/cost; nil serves 404 there.
	Cost *cost.Meter
}

type handler struct {
	Options
	// xInstance is the X-Instance header's value, built once.
	xInstance []string
}

// New returns the service's HTTP handler.
func New(opts Options) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = config.MaxBodyBytes
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(opts.Registry)
	}
	if opts.Log == nil {
		opts.Log = log.New(os.Stderr, "seckill: ", log.LstdFlags|log.Lmicroseconds)
	}
	h := &handler{Options: opts, xInstance: []string{opts.Service.Instance()}}
	r := gin.New()
	r.Use(h.recovery, h.instanceHeader)
	r.NoRoute(func(c *gin.Context) {
		fail(c, http.StatusNotFound, "not_found", "no route "+c.Request.Method+" "+c.Request.URL.Path)
	})
	r.HandleMethodNotAllowed = true
	r.NoMethod(func(c *gin.Context) {
		fail(c, http.StatusMethodNotAllowed, "method_not_allowed", c.Request.Method+" is not allowed here")
	})

	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)
	r.GET("/livez", h.livez)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{})))
	v1 := r.Group("/api/v1")
	v1.POST("/purchase", h.purchase)
	v1.GET("/goods/:id", h.goods)
	v1.GET("/orders/:request_id", h.orderStatus)
	admin := r.Group("/admin", h.auth)
	admin.POST("/reset", h.reset)
	admin.GET("/strategy", h.getStrategy)
	admin.PUT("/strategy", h.putStrategy)
	admin.GET("/audit", h.audit)
	admin.GET("/orders", h.orders)
	admin.GET("/queue", h.queue)
	admin.GET("/events", h.events)
	admin.GET("/cost", h.cost)
	admin.GET("/debug/pprof/:profile", profile)
	return r
}

// profile serves the runtime's profiles behind the admin token, to see
// where an instance spends its time under load: /admin/debug/pprof/profile
// (CPU, ?seconds=N) and the named ones (heap, allocs, goroutine, block,
// mutex, threadcreate), as `go tool pprof` reads them.
func profile(c *gin.Context) {
	name := c.Param("profile")
	switch {
	case name == "profile":
		pprof.Profile(c.Writer, c.Request)
	case rpprof.Lookup(name) != nil:
		pprof.Handler(name).ServeHTTP(c.Writer, c.Request)
	default:
		fail(c, http.StatusNotFound, "not_found", "no profile "+strconv.Quote(name)+"; try profile, heap, allocs, goroutine, block, mutex")
	}
}

func (h *handler) instanceHeader(c *gin.Context) {
	c.Writer.Header()["X-Instance"] = h.xInstance
	c.Next()
}

func (h *handler) recovery(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			h.Metrics.Error("panic")
			h.Log.Printf("panic serving %s %s: %v", c.Request.Method, c.Request.URL.Path, v)
			fail(c, http.StatusInternalServerError, "internal", "the instance failed; its log has the details")
		}
	}()
	c.Next()
}

// fail writes a JSON error and stops the chain.
func fail(c *gin.Context, status int, code, detail string) {
	body := gin.H{"error": code}
	if detail != "" {
		body["detail"] = detail
	}
	c.AbortWithStatusJSON(status, body)
}

func (h *handler) auth(c *gin.Context) {
	if h.AdminToken == "" {
		fail(c, http.StatusForbidden, "admin_disabled", "this instance has no admin token; start it with "+config.EnvAdminToken+" set")
		return
	}
	got, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.AdminToken)) != 1 {
		fail(c, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <admin token>")
		return
	}
	c.Next()
}

// bindJSON reads a JSON body into dst with the API's rules: JSON content
// type (415), at most MaxBody bytes (413), valid UTF-8, an object whose
// keys are exactly among fields, each once (400; encoding/json alone would
// let the last of two "qty" win and match "QTY" to qty), well-formed and
// well-typed (400). It writes the error response and returns false on failure.
func (h *handler) bindJSON(c *gin.Context, dst any, fields ...string) bool {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		fail(c, http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json")
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, h.MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		fail(c, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body must be at most %d bytes", h.MaxBody))
		return false
	}
	if err != nil {
		failRead(c, err)
		return false
	}
	c.Set(rawBodyKey, body)
	return decodeJSON(c, body, dst, fields...)
}

// failRead answers a body that could not be read.
func failRead(c *gin.Context, err error) {
	fail(c, http.StatusBadRequest, "invalid_json", "reading body: "+err.Error())
}

// decodeJSON is bindJSON's checks of a body already read: valid UTF-8, an
// object whose keys are exactly among fields, each once, well-formed and
// well-typed. It writes the error response and returns false on failure.
func decodeJSON(c *gin.Context, body []byte, dst any, fields ...string) bool {
	if !utf8.Valid(body) {
		fail(c, http.StatusBadRequest, "invalid_utf8", "the body is not valid UTF-8")
		return false
	}
	if !json.Valid(body) {
		fail(c, http.StatusBadRequest, "invalid_json", "the body is not well-formed JSON")
		return false
	}
	if err := strictKeys(body, fields...); err != nil {
		fail(c, http.StatusBadRequest, "invalid_field", err.Error())
		return false
	}
	if err := json.Unmarshal(body, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			fail(c, http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q must be a %s", typeErr.Field, typeErr.Type))
			return false
		}
		fail(c, http.StatusBadRequest, "invalid_json", err.Error())
		return false
	}
	return true
}

// missing reports the first nil field, by JSON name, and writes a 400.
func missing(c *gin.Context, fields ...namedField) bool {
	for _, f := range fields {
		if f.isNil {
			fail(c, http.StatusBadRequest, "missing_field", fmt.Sprintf("field %q is required", f.name))
			return true
		}
	}
	return false
}

type namedField struct {
	name  string
	isNil bool
}

type purchaseBody struct {
	GoodsID *int64  `json:"goods_id"`
	Qty     *int64  `json:"qty"`
	UserID  *string `json:"user_id"`
}

var purchaseFields = []string{"goods_id", "qty", "user_id"}

// purchase answers POST /api/v1/purchase. A body of the usual shape with a
// declared length is decoded without reflection (decodePurchase); any other
// goes through bindJSON, and both answer the same.
func (h *handler) purchase(c *gin.Context) {
	cfg := h.Service.Config()
	var req stock.PurchaseRequest
	if !h.purchaseBody(c, &req) {
		h.Metrics.Purchase("bad_request", cfg.Name)
		return
	}
	key := c.GetHeader("Idempotency-Key")
	if !utf8.ValidString(key) {
		h.Metrics.Purchase("bad_request", cfg.Name)
		fail(c, http.StatusBadRequest, "invalid_utf8", "the Idempotency-Key header is not valid UTF-8")
		return
	}
	req.RequestID = key
	budget := cfg.LockWait + cfg.WorkDelay + 15*time.Second
	ctx, cancel := context.WithTimeout(c.Request.Context(), budget)
	defer cancel()
	rc, err := h.Service.Purchase(ctx, req)
	o := stock.OutcomeOf(err)
	h.Metrics.Purchase(o.Code, cfg.Name)
	if err != nil {
		h.writeErr(c, o, err)
		return
	}
	if rc.Accepted {
		o.Status = http.StatusAccepted // decided; the order is written later
	}
	answerReceipt(c, o.Status, rc)
}

// purchaseBody reads the purchase's fields into req. It writes the error
// response and returns false on a bad body.
func (h *handler) purchaseBody(c *gin.Context, req *stock.PurchaseRequest) bool {
	if jsonExact(c.GetHeader("Content-Type")) {
		if body, buf, ok, err := h.readBody(c); ok {
			if err != nil {
				failRead(c, err)
				return false
			}
			defer putBody(buf)
			if req.GoodsID, req.Qty, req.UserID, ok = decodePurchase(body); ok {
				return true
			}
			var b purchaseBody
			return decodeJSON(c, body, &b, purchaseFields...) && b.fill(c, req)
		}
	}
	var b purchaseBody
	return h.bindJSON(c, &b, purchaseFields...) && b.fill(c, req)
}

// fill copies b into req, or answers 400 for its first missing field.
func (b purchaseBody) fill(c *gin.Context, req *stock.PurchaseRequest) bool {
	if missing(c, namedField{"goods_id", b.GoodsID == nil}, namedField{"qty", b.Qty == nil}, namedField{"user_id", b.UserID == nil}) {
		return false
	}
	req.GoodsID, req.Qty, req.UserID = *b.GoodsID, *b.Qty, *b.UserID
	return true
}

// writeErr answers err with its outcome o (stock.OutcomeOf). The detail
// is the service's own sentence or a fixed one of the outcome's, never a
// driver's or backend's text (SQL, host names, addresses): that goes to
// the log only.
func (h *handler) writeErr(c *gin.Context, o stock.Outcome, err error) {
	detail := o.Detail
	switch {
	case o.Told:
		detail = err.Error()
	case o.Detail != "":
		if errors.Is(o.Err, stock.ErrBackendUnavailable) {
			h.Metrics.Error("backend_unavailable")
		}
		h.Log.Printf("%s %s: %v", c.Request.Method, c.Request.URL.Path, err)
	}
	fail(c, o.Status, o.Code, detail)
}

func (h *handler) goods(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		fail(c, http.StatusBadRequest, "invalid_request", "goods id must be a positive integer")
		return
	}
	a, err := h.Service.Audit(c.Request.Context(), id)
	if err != nil {
		h.writeErr(c, stock.OutcomeOf(err), err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "stock": a.Stock, "sold": a.SoldQty})
}

// healthz answers every configured backend's state, for people: 200 when
// all answer, else 503 "degraded". Probes that decide whether the instance
// gets traffic or is restarted are /readyz and /livez.
func (h *handler) healthz(c *gin.Context) {
	results, healthy := h.probe(c.Request.Context(), func(Check) bool { return true })
	code, status := http.StatusOK, "ok"
	if !healthy {
		code, status = http.StatusServiceUnavailable, "degraded"
	}
	c.JSON(code, gin.H{"status": status, "instance": h.Service.Instance(), "strategy": h.Service.Config().Name, "backends": results})
}

// readyz says whether the instance can take requests: its HTTP server
// answers and the backends it cannot work without (Check.Ready: MySQL) do.
// A lock server that is down never makes it 503, so a fault on one lock
// server does not take every instance out of its Service.
func (h *handler) readyz(c *gin.Context) {
	results, ready := h.probe(c.Request.Context(), func(chk Check) bool { return chk.Ready })
	code, status := http.StatusOK, "ready"
	if !ready {
		code, status = http.StatusServiceUnavailable, "not_ready"
	}
	c.JSON(code, gin.H{"status": status, "instance": h.Service.Instance(), "backends": results})
}

// livez says the process answers; it probes nothing.
func (h *handler) livez(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "alive", "instance": h.Service.Instance()})
}

// probe pings the checks that keep selects, at once, within 2 s, and
// reports each one's state and whether all answered.
func (h *handler) probe(ctx context.Context, keep func(Check) bool) (map[string]string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	results := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	healthy := true
	for _, chk := range h.Checks {
		if !keep(chk) {
			continue
		}
		wg.Go(func() {
			status := "ok"
			if err := chk.Ping(ctx); err != nil {
				status = "error: does not answer"
				h.Log.Printf("health: %s: %v", chk.Name, err)
			}
			mu.Lock()
			defer mu.Unlock()
			results[chk.Name] = status
			if status != "ok" {
				healthy = false
			}
		})
	}
	wg.Wait()
	return results, healthy
}

type resetBody struct {
	GoodsID *int64 `json:"goods_id"`
	Stock   *int64 `json:"stock"`
}

func (h *handler) reset(c *gin.Context) {
	var b resetBody
	if !h.bindJSON(c, &b, "goods_id", "stock") || missing(c, namedField{"goods_id", b.GoodsID == nil}, namedField{"stock", b.Stock == nil}) {
		return
	}
	rep, err := h.Service.Reset(c.Request.Context(), *b.GoodsID, *b.Stock)
	if err != nil {
		h.writeErr(c, stock.OutcomeOf(err), err)
		return
	}
	// skipped lists the strategies whose lock state (or mirror) a dead
	// backend kept from being cleared: they must not run until a reset
	// clears them; the others can.
	skipped := rep.Skipped
	if skipped == nil {
		skipped = []stock.SkippedBackend{}
	}
	for _, sk := range skipped {
		h.Log.Printf("reset goods %d: skipped %s (%s): %s", *b.GoodsID, sk.Strategy, sk.Server, sk.Detail)
	}
	c.JSON(http.StatusOK, gin.H{"goods_id": *b.GoodsID, "stock": *b.Stock, "skipped": skipped})
}

// strategyBody is the setting the instance runs and the instance's name.
func (h *handler) strategyBody() stock.InstanceConfig {
	return stock.InstanceConfig{Config: h.Service.Config(), Instance: h.Service.Instance()}
}

func (h *handler) getStrategy(c *gin.Context) { c.JSON(http.StatusOK, h.strategyBody()) }

func (h *handler) putStrategy(c *gin.Context) {
	var raw struct {
		Name *string `json:"name"`
	}
	var cfg stock.Config
	if !h.bindJSON(c, &raw, stock.ConfigFields()...) || missing(c, namedField{"name", raw.Name == nil}) {
		return
	}
	// bindJSON consumed the body; decode the full setting from the same bytes.
	if err := json.Unmarshal(c.MustGet(rawBodyKey).([]byte), &cfg); err != nil {
		fail(c, http.StatusBadRequest, "invalid_field", strings.TrimPrefix(err.Error(), "json: "))
		return
	}
	if err := h.Service.SetConfig(c.Request.Context(), cfg); err != nil {
		switch {
		case errors.Is(err, catalog.ErrUnknownStrategy):
			c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": "unknown_strategy", "detail": err.Error(), "valid": catalog.StrategyNames()})
		case errors.Is(err, stock.ErrBackendUnavailable):
			h.writeErr(c, stock.OutcomeOf(stock.ErrBackendUnavailable), err)
		case errors.Is(err, stock.ErrNotConfigured):
			fail(c, http.StatusServiceUnavailable, "backend_unavailable", err.Error())
		default:
			fail(c, http.StatusBadRequest, "invalid_strategy_config", err.Error())
		}
		return
	}
	c.JSON(http.StatusOK, h.strategyBody())
}

const rawBodyKey = "seckill.rawBody"

func (h *handler) goodsQuery(c *gin.Context) (int64, bool) {
	v := c.Query("goods_id")
	if v == "" {
		fail(c, http.StatusBadRequest, "missing_field", `query parameter "goods_id" is required`)
		return 0, false
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		fail(c, http.StatusBadRequest, "invalid_field", "goods_id must be a positive integer")
		return 0, false
	}
	return id, true
}

func (h *handler) audit(c *gin.Context) {
	h.goodsReport(c, func(ctx context.Context, id int64) (any, error) { return h.Service.Audit(ctx, id) })
}

func (h *handler) orders(c *gin.Context) {
	h.goodsReport(c, func(ctx context.Context, id int64) (any, error) {
		ids, err := h.Service.RequestIDs(ctx, id)
		return gin.H{"goods_id": id, "request_ids": ids}, err
	})
}

// CostReply is the answer of GET /admin/cost: the instance's cumulative
// counts of requests to its servers, by server and phase of a purchase
// (internal/cost).
type CostReply struct {
	Instance string        `json:"instance"`
	Servers  cost.Snapshot `json:"servers"`
}

func (h *handler) cost(c *gin.Context) {
	if h.Cost == nil {
		fail(c, http.StatusNotFound, "not_found", "this instance counts no requests")
		return
	}
	c.JSON(http.StatusOK, CostReply{Instance: h.Service.Instance(), Servers: h.Cost.Snapshot()})
}

// goodsReport answers a GET ?goods_id= admin report built by get.
func (h *handler) goodsReport(c *gin.Context, get func(ctx context.Context, id int64) (any, error)) {
	id, ok := h.goodsQuery(c)
	if !ok {
		return
	}
	body, err := get(c.Request.Context(), id)
	if err != nil {
		h.writeErr(c, stock.OutcomeOf(err), err)
		return
	}
	c.JSON(http.StatusOK, body)
}
