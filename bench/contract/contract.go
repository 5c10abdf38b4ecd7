// Package contract owns the stock service contract: the four calls a
// service answers so that the bench can load and audit it (a purchase, a
// reset, a stock read, the list of orders), written down as OpenAPI 3.0.3
// (openapi.yaml, embedded as OpenAPI), the purchase's outcome table
// (Outcomes), a strict client of the three audit calls (Client) and the
// check of one purchase answer (CheckPurchase). Any service that keeps the
// contract can be benched, ours (internal/api) or another; the package
// imports nothing of ours, and its tests keep the yaml, the Go table and
// the client's checks equal. docs/contract.md is the contract for a person.
package contract

import (
	_ "embed"
	"net/http"
	"slices"
	"strconv"
)

// OpenAPI is the contract as an OpenAPI 3.0.3 document (YAML).
//
//go:embed openapi.yaml
var OpenAPI []byte

// The contract's call paths, as openapi.yaml names them.
const (
	// PathPurchase is POST's: body {"goods_id", "qty", "user_id"}, header
	// Idempotency-Key.
	PathPurchase = "/api/v1/purchase"
	// PathReset is POST's (admin): body {"goods_id", "stock"}.
	PathReset = "/admin/reset"
	// PathGoods is GET's, a template: GoodsPath fills it.
	PathGoods = "/api/v1/goods/{id}"
	// PathOrders is GET's (admin), with the query goods_id: OrdersPath.
	PathOrders = "/admin/orders"
)

// The purchase request's header and bounds.
const (
	// HeaderIdempotencyKey names the purchase's key: unique per purchase,
	// at most MaxIdempotencyKey characters.
	HeaderIdempotencyKey = "Idempotency-Key"
	MaxIdempotencyKey    = 128
	// MaxUserID is the longest user_id, in characters (at least one).
	MaxUserID = 64
)

// GoodsPath is the stock read's path for goods.
func GoodsPath(goods int64) string { return "/api/v1/goods/" + strconv.FormatInt(goods, 10) }

// OrdersPath is the orders list's path and query for goods.
func OrdersPath(goods int64) string {
	return PathOrders + "?goods_id=" + strconv.FormatInt(goods, 10)
}

// Effect is what a purchase answer says of the sale, as the bench must
// count it.
type Effect int

const (
	// Sold: the purchase sold; its order exists (200) or will (202).
	Sold Effect = iota + 1
	// NothingSold: the purchase did not sell and left no order.
	NothingSold
	// Unknown: the purchase may or may not have sold; only the orders
	// list says.
	Unknown
)

func (e Effect) String() string {
	switch e {
	case Sold:
		return "sold"
	case NothingSold:
		return "nothing sold"
	case Unknown:
		return "unknown"
	}
	return "Effect(" + strconv.Itoa(int(e)) + ")"
}

// Layer is who decides an outcome.
type Layer string

const (
	// LayerHTTP: the service's HTTP layer, before the sale is tried (a
	// malformed request) or around it (a failure while answering).
	LayerHTTP Layer = "http"
	// LayerService: the sale itself (our service: stock.OutcomeOf).
	LayerService Layer = "service"
)

// Outcome is one answer a purchase may get: its status and code, what it
// means, and what the bench counts it as.
type Outcome struct {
	Status int
	// Code is the error body's "error"; "ok" for a 2xx, whose body is a
	// receipt and carries no code.
	Code    string
	Meaning string
	Effect  Effect
	Layer   Layer
}

// outcomes is the contract's purchase outcome table, by status.
var outcomes = []Outcome{
	{http.StatusOK, "ok", "sold; the order is written", Sold, LayerService},
	{http.StatusAccepted, "ok", "sold (decided); the order is written later", Sold, LayerService},
	{http.StatusBadRequest, "invalid_json", "the body is not a well-formed JSON object", NothingSold, LayerHTTP},
	{http.StatusBadRequest, "invalid_utf8", "the body or the Idempotency-Key is not valid UTF-8", NothingSold, LayerHTTP},
	{http.StatusBadRequest, "invalid_field", "a field is unknown, repeated or of the wrong type", NothingSold, LayerHTTP},
	{http.StatusBadRequest, "missing_field", "a required field is missing", NothingSold, LayerHTTP},
	{http.StatusBadRequest, "invalid_request", "a field is out of the service's limits (qty, user_id, key length)", NothingSold, LayerService},
	{http.StatusNotFound, "goods_not_found", "no goods with that id", NothingSold, LayerService},
	{http.StatusConflict, "sold_out", "the stock does not cover qty", NothingSold, LayerService},
	{http.StatusConflict, "user_limit", "the user already has the most orders of the goods allowed", NothingSold, LayerService},
	{http.StatusConflict, "stale_lock", "fencing refused the write of a holder with an older token; rolled back", NothingSold, LayerService},
	{http.StatusConflict, "lease_lost", "the lock's lease was lost before the commit; rolled back", NothingSold, LayerService},
	{http.StatusRequestEntityTooLarge, "body_too_large", "the body is larger than the service takes", NothingSold, LayerHTTP},
	{http.StatusUnsupportedMediaType, "unsupported_media_type", "the Content-Type is not JSON", NothingSold, LayerHTTP},
	{http.StatusUnprocessableEntity, "idempotency_key_reused", "the key sold another purchase (goods, qty or user); nothing changed", NothingSold, LayerService},
	{http.StatusInternalServerError, "internal", "the service failed while answering", Unknown, LayerHTTP},
	{http.StatusServiceUnavailable, "lock_timeout", "the lock was not had within the wait (or optimistic retries ran out)", NothingSold, LayerService},
	{http.StatusServiceUnavailable, "backend_unavailable", "a server the service needs did not answer", Unknown, LayerService},
	{http.StatusServiceUnavailable, "timeout", "the purchase ran out of time", Unknown, LayerService},
}

// Outcomes is the contract's purchase outcome table: every status and
// code a purchase may be answered with, in order of status.
func Outcomes() []Outcome { return slices.Clone(outcomes) }

// OutcomeFor is the table's row for status and code ("ok" for a 2xx).
func OutcomeFor(status int, code string) (Outcome, bool) {
	for _, o := range outcomes {
		if o.Status == status && o.Code == code {
			return o, true
		}
	}
	return Outcome{}, false
}

// purchaseStatuses are the statuses of the outcome table, once each.
func purchaseStatuses() []int {
	var out []int
	for _, o := range outcomes {
		if !slices.Contains(out, o.Status) {
			out = append(out, o.Status)
		}
	}
	return out
}
