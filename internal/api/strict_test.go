package api

import (
	"encoding/json"
	"fmt"
	"testing"
)

// strictCases are valid JSON bodies for the purchase's fields.
var strictCases = []struct {
	body    string
	wantErr string
}{
	{`{"goods_id":1,"qty":1,"user_id":"u"}`, ""},
	{` { "goods_id" : 1 , "qty" : 1 , "user_id" : "u" } `, ""},
	{"{\n\t\"qty\":\r\n2}", ""},
	{`{}`, ""},
	{`{"user_id":"a,\"}{[]\\","qty":-1.5e3,"goods_id":null}`, ""},
	{`{"goods_id":{"a":[1,{"b":"}"}],"c":true},"qty":[[],{}],"user_id":false}`, ""},
	{`{"qty":1,"qty":7}`, `field "qty" appears twice`},
	{`{"QTY":1}`, `field "QTY": keys are case-sensitive, send "qty"`},
	{`{"qty":1,"price":3}`, `unknown field "price"; the fields are goods_id, qty, user_id`},
	{`{"q\u0074y":1}`, ""},
	{`{"q\u0074y":1,"qty":2}`, `field "qty" appears twice`},
	{`{"user_\u00e9":1}`, `unknown field "user_é"; the fields are goods_id, qty, user_id`},
	{`[1,2]`, `the body must be a JSON object`},
	{`"qty"`, `the body must be a JSON object`},
}

// TestStrictKeys checks strictKeys' byte scan against the decoder it
// replaces on the hot path: the same answer, word for word.
func TestStrictKeys(t *testing.T) {
	fields := []string{"goods_id", "qty", "user_id"}
	for _, tc := range strictCases {
		t.Run(tc.body, func(t *testing.T) {
			if !json.Valid([]byte(tc.body)) {
				t.Fatalf("test body is not valid JSON")
			}
			got, slow := fmt.Sprint(strictKeys([]byte(tc.body), fields...)), fmt.Sprint(strictKeysDecoded([]byte(tc.body), fields...))
			want := tc.wantErr
			if want == "" {
				want = "<nil>"
			}
			if got != want || slow != want {
				t.Errorf("strictKeys = %s, decoder = %s, want %s", got, slow, want)
			}
		})
	}
}

// FuzzStrictKeys: on any valid JSON, the scan and the decoder agree.
func FuzzStrictKeys(f *testing.F) {
	for _, tc := range strictCases {
		f.Add(tc.body)
	}
	fields := []string{"goods_id", "qty", "user_id"}
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		got, want := fmt.Sprint(strictKeys([]byte(body), fields...)), fmt.Sprint(strictKeysDecoded([]byte(body), fields...))
		if got != want {
			t.Errorf("%s: strictKeys = %s, decoder = %s", body, got, want)
		}
	})
}
