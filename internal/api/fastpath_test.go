package api

import (
	"encoding/json"
	"testing"

	"github.com/seckill-lab/seckill/stock"
)

// purchaseCases are bodies the fast decoder takes or leaves to the general
// path; take says which.
var purchaseCases = []struct {
	body string
	take bool
}{
	{`{"goods_id":1,"qty":1,"user_id":"u1"}`, true},
	{` { "user_id" : "ü-東" ,"qty":-3 , "goods_id" : 0 } `, true},
	{"{\n\t\"qty\":2,\r\n\"goods_id\":999999999999999999,\"user_id\":\"\"}", true},
	{`{"goods_id":1,"qty":1}`, false},
	{`{"goods_id":1,"qty":1,"user_id":"u","x":1}`, false},
	{`{"goods_id":1,"qty":1,"qty":2,"user_id":"u"}`, false},
	{`{"goods_id":"1","qty":1,"user_id":"u"}`, false},
	{`{"goods_id":1.0,"qty":1,"user_id":"u"}`, false},
	{`{"goods_id":1e2,"qty":1,"user_id":"u"}`, false},
	{`{"goods_id":01,"qty":1,"user_id":"u"}`, false},
	{`{"goods_id":9223372036854775808,"qty":1,"user_id":"u"}`, false},
	{`{"goods_id":null,"qty":1,"user_id":"u"}`, false},
	{`{"goods_id":1,"qty":1,"user_id":"a\"b"}`, false},
	{`{"goods_id":1,"qty":1,"user_id":"u\u00e9"}`, false},
	{`{"GOODS_ID":1,"qty":1,"user_id":"u"}`, false},
	{`{"goods_id":1,"qty":1,"user_id":"u"} x`, false},
	{`{"goods_id":1,"qty":1,"user_id":"u"`, false},
	{`{"goods_id":1,"qty":1,"user_id":"u",}`, false},
	{`{"goods_id":-,"qty":1,"user_id":"u"}`, false},
	{"{\"goods_id\":1,\"qty\":1,\"user_id\":\"\xff\"}", false},
	{`[1]`, false},
	{``, false},
}

// general is what the general path makes of body: ok when bindJSON's checks
// pass and no field is missing.
func general(body []byte) (goods, qty int64, user string, ok bool) {
	var b purchaseBody
	if !json.Valid(body) || strictKeys(body, purchaseFields...) != nil || json.Unmarshal(body, &b) != nil ||
		b.GoodsID == nil || b.Qty == nil || b.UserID == nil {
		return 0, 0, "", false
	}
	return *b.GoodsID, *b.Qty, *b.UserID, true
}

// TestDecodePurchase checks the fast decoder against the general path: it
// takes the bodies it should, and what it takes it reads as encoding/json does.
func TestDecodePurchase(t *testing.T) {
	for _, tc := range purchaseCases {
		t.Run(tc.body, func(t *testing.T) {
			g, q, u, ok := decodePurchase([]byte(tc.body))
			if ok != tc.take {
				t.Fatalf("decodePurchase took = %v, want %v", ok, tc.take)
			}
			checkAgainstGeneral(t, tc.body, g, q, u, ok)
		})
	}
}

func checkAgainstGeneral(t *testing.T, body string, g, q int64, u string, ok bool) {
	t.Helper()
	if !ok {
		return
	}
	wg, wq, wu, wok := general([]byte(body))
	if !wok || g != wg || q != wq || u != wu {
		t.Errorf("%q: fast = (%d, %d, %q), general = (%d, %d, %q, ok %v)", body, g, q, u, wg, wq, wu, wok)
	}
}

// FuzzDecodePurchase: whatever the fast decoder takes, the general path
// takes with the same values.
func FuzzDecodePurchase(f *testing.F) {
	for _, tc := range purchaseCases {
		f.Add(tc.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		g, q, u, ok := decodePurchase([]byte(body))
		checkAgainstGeneral(t, body, g, q, u, ok)
	})
}

// TestAppendReceipt checks the receipt's encoding against encoding/json,
// byte for byte.
func TestAppendReceipt(t *testing.T) {
	for _, rc := range []stock.Receipt{
		{},
		{OrderID: 1, GoodsID: 1, Qty: 1, Remaining: 0, Instance: "i1", Strategy: "sql-atomic", RequestID: "r-1", Fence: 7},
		{OrderID: -5, GoodsID: 1 << 62, Qty: 3, Remaining: -1, Instance: "a<b>&c", Strategy: "redis-stream", RequestID: "ü\"\\\n\u2028", Fence: 1<<64 - 1, Accepted: true},
		{OrderID: 2, Instance: "x", RequestID: "bad \xff utf8", Replayed: true},
		{Replayed: true, Accepted: true},
	} {
		t.Run(rc.RequestID, func(t *testing.T) {
			want, err := json.Marshal(rc)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendReceipt(nil, rc); string(got) != string(want) {
				t.Errorf("appendReceipt = %s, want %s", got, want)
			}
		})
	}
}

// FuzzAppendReceipt: any strings in a receipt encode as encoding/json does.
func FuzzAppendReceipt(f *testing.F) {
	f.Add("i1", "sql-atomic", "r-1", int64(3), true)
	f.Fuzz(func(t *testing.T, inst, strat, req string, n int64, flag bool) {
		rc := stock.Receipt{OrderID: n, GoodsID: -n, Instance: inst, Strategy: strat, RequestID: req, Accepted: flag, Replayed: !flag}
		want, _ := json.Marshal(rc)
		if got := appendReceipt(nil, rc); string(got) != string(want) {
			t.Errorf("appendReceipt = %s, want %s", got, want)
		}
	})
}
