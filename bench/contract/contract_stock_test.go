package contract_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/seckill-lab/seckill/bench/contract"
	"github.com/seckill-lab/seckill/stock"
)

// TestContractKeepsStockOutcomes: the contract's purchase outcomes are
// our service's. Every row of stock's outcome table, success
// (stock.OutcomeOf(nil)) and a context's end (OutcomeOf of
// context.DeadlineExceeded) has the same status and code in
// contract.Outcomes and in openapi.yaml's purchase answers; and every
// outcome the contract says the sale decides (LayerService) is one of
// stock's, or the 202 of an accepted sale, which internal/api answers for
// a receipt with Accepted. The HTTP layer's codes (LayerHTTP) are
// internal/api's: TestContractAnswers there drives them.
func TestContractKeepsStockOutcomes(t *testing.T) {
	ours := append(stock.Outcomes(), stock.OutcomeOf(nil), stock.OutcomeOf(context.DeadlineExceeded))
	v := validator(t)
	op := v.Doc.Paths.Value(contract.PathPurchase).Post
	for _, o := range ours {
		if _, ok := contract.OutcomeFor(o.Status, o.Code); !ok {
			t.Errorf("stock's outcome %d %s: not in contract.Outcomes", o.Status, o.Code)
		}
		ref := op.Responses.Value(strconv.Itoa(o.Status))
		if ref == nil {
			t.Errorf("stock's outcome %d %s: openapi.yaml's purchase has no %d answer", o.Status, o.Code, o.Status)
			continue
		}
		if o.Status == http.StatusOK {
			continue // a receipt: TestOutcomesMatchOpenAPI
		}
		codes := ref.Value.Content.Get("application/json").Schema.Value.Properties["error"].Value.Enum
		found := false
		for _, c := range codes {
			found = found || c == o.Code
		}
		if !found {
			t.Errorf("stock's outcome %d %s: not among openapi.yaml's codes %v", o.Status, o.Code, codes)
		}
	}
	for _, c := range contract.Outcomes() {
		if c.Layer != contract.LayerService || c.Status == http.StatusAccepted {
			continue
		}
		found := false
		for _, o := range ours {
			found = found || o.Status == c.Status && o.Code == c.Code
		}
		if !found {
			t.Errorf("the contract's outcome %d %s: not one of stock's (stock/errors.go)", c.Status, c.Code)
		}
	}
}
