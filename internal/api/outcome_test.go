package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/seckill-lab/seckill/stock"
)

// wantOutcomes are the answers the API gives each of the service's
// errors: the status, the JSON code and the detail ("told": the error's
// own text; "": none; else that sentence, with the error's text logged).
var wantOutcomes = map[error]struct {
	status       int
	code, detail string
}{
	stock.ErrSoldOut:              {http.StatusConflict, "sold_out", ""},
	stock.ErrUserLimit:            {http.StatusConflict, "user_limit", "told"},
	stock.ErrStaleLock:            {http.StatusConflict, "stale_lock", ""},
	stock.ErrLeaseLost:            {http.StatusConflict, "lease_lost", ""},
	stock.ErrLockTimeout:          {http.StatusServiceUnavailable, "lock_timeout", "told"},
	stock.ErrGoodsNotFound:        {http.StatusNotFound, "goods_not_found", "told"},
	stock.ErrInvalid:              {http.StatusBadRequest, "invalid_request", "told"},
	stock.ErrIdempotencyKeyReused: {http.StatusUnprocessableEntity, "idempotency_key_reused", "told"},
	stock.ErrBackendUnavailable:   {http.StatusServiceUnavailable, "backend_unavailable", "a server this strategy needs did not answer; the instance's log has the details"},
}

// TestOutcomes walks stock's outcome table: every error, wrapped as the
// service returns it, gets its status, code and detail from the error
// writer; a backend's text goes to the log only. Success, a context's end
// and an unknown error get theirs.
func TestOutcomes(t *testing.T) {
	rows := stock.Outcomes()
	if len(rows) != len(wantOutcomes) {
		t.Errorf("the table has %d errors, want %d", len(rows), len(wantOutcomes))
	}
	for _, row := range rows {
		want, ok := wantOutcomes[row.Err]
		if !ok {
			t.Errorf("%v: no expected answer", row.Err)
			continue
		}
		err := fmt.Errorf("%w: the service's words", row.Err)
		if want.detail == "told" {
			want.detail = err.Error()
		}
		checkAnswer(t, err, want.status, want.code, want.detail, row.Detail != "")
	}
	if o := stock.OutcomeOf(nil); o.Status != http.StatusOK || o.Code != "ok" {
		t.Errorf("OutcomeOf(nil) = %d %s, want 200 ok", o.Status, o.Code)
	}
	backend := wantOutcomes[stock.ErrBackendUnavailable]
	for _, c := range []struct {
		err          error
		status       int
		code, detail string
	}{
		{fmt.Errorf("read: %w", context.Canceled), http.StatusServiceUnavailable, "timeout", "the request ran out of time"},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "timeout", "the request ran out of time"},
		{errors.New("dial tcp 10.0.0.1:3306: refused"), backend.status, backend.code, backend.detail},
	} {
		checkAnswer(t, c.err, c.status, c.code, c.detail, true)
	}
}

// checkAnswer writes err's answer and checks its status, code, detail,
// whether the error's text was logged and the backend_unavailable count.
func checkAnswer(t *testing.T, err error, status int, code, detail string, logged bool) {
	t.Helper()
	var logs bytes.Buffer
	h := &handler{Options: Options{Metrics: NewMetrics(prometheus.NewRegistry()), Log: log.New(&logs, "", 0)}}
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/api/v1/purchase", nil)
	h.writeErr(c, stock.OutcomeOf(err), err)

	var body map[string]string
	if jerr := json.Unmarshal(w.Body.Bytes(), &body); jerr != nil {
		t.Fatalf("%v: body %q: %v", err, w.Body.String(), jerr)
	}
	if w.Code != status || body["error"] != code || body["detail"] != detail {
		t.Errorf("%v: answered %d %q %q, want %d %q %q", err, w.Code, body["error"], body["detail"], status, code, detail)
	}
	if got := bytes.Contains(logs.Bytes(), []byte(err.Error())); got != logged {
		t.Errorf("%v: logged %v, want %v (log %q)", err, got, logged, logs.String())
	}
	wantCount := 0.0
	if code == "backend_unavailable" {
		wantCount = 1
	}
	var m dto.Metric
	if merr := h.Metrics.errors.WithLabelValues("backend_unavailable").Write(&m); merr != nil {
		t.Fatal(merr)
	}
	if n := m.GetCounter().GetValue(); n != wantCount {
		t.Errorf("%v: backend_unavailable errors counted %v, want %v", err, n, wantCount)
	}
}
