package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A shape is one JSON object the contract fixes, as openapi.yaml's schema
// of the same name says (a test compares them): its properties, which are
// required, their types and bounds; no other property is allowed.
type shape struct {
	name   string // the schema's name in openapi.yaml
	fields []field
}

// kind is a property's JSON type, as OpenAPI names it.
type kind string

const (
	kindInteger kind = "integer"
	kindNumber  kind = "number"
	kindString  kind = "string"
	kindBoolean kind = "boolean"
	kindArray   kind = "array"
)

// field is one property of a shape.
type field struct {
	name     string
	kind     kind
	required bool
	// min bounds an integer or a number from below, when hasMin.
	min    float64
	hasMin bool
	// minLen and maxLen bound a string's characters (maxLen 0: none).
	minLen, maxLen int
	// items is an array's element: a string field (its bounds) or an
	// object (obj).
	items *field
	obj   *shape
}

// The answers' shapes.
var (
	receiptShape = shape{"Receipt", []field{
		{name: "goods_id", kind: kindInteger, required: true, min: 1, hasMin: true},
		{name: "qty", kind: kindInteger, required: true, min: 1, hasMin: true},
		{name: "remaining", kind: kindInteger, required: true},
		{name: "request_id", kind: kindString, required: true, minLen: 1},
		{name: "order_id", kind: kindInteger},
		{name: "instance", kind: kindString},
		{name: "strategy", kind: kindString},
		{name: "fence", kind: kindInteger, hasMin: true},
		{name: "replayed", kind: kindBoolean},
		{name: "accepted", kind: kindBoolean},
		{name: "lock_wait_ms", kind: kindNumber, hasMin: true},
	}}
	errorShape = shape{"Error", []field{
		{name: "error", kind: kindString, required: true, minLen: 1},
		{name: "detail", kind: kindString},
	}}
	skippedShape = shape{"Skipped", []field{
		{name: "strategy", kind: kindString, required: true},
		{name: "server", kind: kindString, required: true},
		{name: "reason", kind: kindString, required: true},
	}}
	resetShape = shape{"ResetAnswer", []field{
		{name: "goods_id", kind: kindInteger, required: true, min: 1, hasMin: true},
		{name: "stock", kind: kindInteger, required: true, hasMin: true},
		{name: "skipped", kind: kindArray, items: &field{kind: kindObject, obj: &skippedShape}},
	}}
	goodsShape = shape{"GoodsAnswer", []field{
		{name: "id", kind: kindInteger, required: true, min: 1, hasMin: true},
		{name: "stock", kind: kindInteger, required: true},
		{name: "sold", kind: kindInteger, hasMin: true},
	}}
	ordersShape = shape{"OrdersAnswer", []field{
		{name: "goods_id", kind: kindInteger, required: true, min: 1, hasMin: true},
		{name: "request_ids", kind: kindArray, required: true, items: &field{kind: kindString, minLen: 1}},
	}}
)

// kindObject is an array element that is an object of a shape.
const kindObject kind = "object"

// check reports the first way body is not an object of shape s, in words
// that follow "answer" ("misses \"remaining\""); "" when it is one.
func (s shape) check(body []byte) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return "has an empty body, want a JSON object"
	}
	if !json.Valid(body) {
		return "is not JSON"
	}
	return s.checkValue(body, "")
}

// checkValue is check of a valid JSON value; at names where it sits
// ("skipped[0]."), for the words.
func (s shape) checkValue(raw []byte, at string) string {
	props, order, dup, ok := object(raw)
	if !ok && at == "" {
		return fmt.Sprintf("is %s, want a JSON object", describe(raw))
	}
	if !ok {
		return fmt.Sprintf("has %q %s, want an object", strings.TrimSuffix(at, "."), describe(raw))
	}
	if dup != "" {
		return fmt.Sprintf("has %q twice", at+dup)
	}
	for _, k := range order {
		if s.lookup(k) == nil {
			return fmt.Sprintf("has a property the contract does not name: %q", at+k)
		}
	}
	for _, f := range s.fields {
		v, ok := props[f.name]
		if !ok {
			if f.required {
				return fmt.Sprintf("misses %q", at+f.name)
			}
			continue
		}
		if why := f.checkValue(v, at+f.name); why != "" {
			return why
		}
	}
	return ""
}

func (s shape) lookup(name string) *field {
	for i := range s.fields {
		if s.fields[i].name == name {
			return &s.fields[i]
		}
	}
	return nil
}

// checkValue reports how raw, a valid JSON value, is not of f's type or
// bounds; name is where it sits.
func (f field) checkValue(raw []byte, name string) string {
	wrong := func() string { return fmt.Sprintf("has %q %s, want %s", name, describe(raw), article(f.kind)) }
	switch f.kind {
	case kindInteger, kindNumber:
		n, isInt, ok := number(raw)
		if !ok || f.kind == kindInteger && !isInt {
			return wrong()
		}
		if f.hasMin && n < f.min {
			return fmt.Sprintf("has %q %s, want >= %s", name, raw, strconv.FormatFloat(f.min, 'f', -1, 64))
		}
	case kindString:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return wrong()
		}
		if n := utf8.RuneCountInString(s); n < f.minLen || f.maxLen > 0 && n > f.maxLen {
			return fmt.Sprintf("has %q %s, want %s", name, raw, lengthWords(f.minLen, f.maxLen))
		}
	case kindBoolean:
		if string(raw) != "true" && string(raw) != "false" {
			return wrong()
		}
	case kindArray:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return wrong()
		}
		for i, it := range items {
			if why := f.items.checkValue(it, fmt.Sprintf("%s[%d]", name, i)); why != "" {
				return why
			}
		}
	case kindObject:
		return f.obj.checkValue(raw, name+".")
	}
	return ""
}

// object decodes raw's top-level properties, in order; dup is the first
// property given twice. ok is false when raw is not an object.
func object(raw []byte) (props map[string][]byte, order []string, dup string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, "", false
	}
	props = map[string][]byte{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, "", false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, "", false
		}
		if _, seen := props[key]; seen && dup == "" {
			dup = key
		}
		props[key] = v
		order = append(order, key)
	}
	return props, order, dup, true
}

// number reads a JSON number: its value, whether it is written as an
// integer (no fraction, no exponent) that fits an int64.
func number(raw []byte) (n float64, isInt, ok bool) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false, false
	}
	_, ierr := strconv.ParseInt(string(raw), 10, 64)
	return f, ierr == nil, true
}

// describe names what raw is, for the words of an error: its JSON type
// and, when short, itself.
func describe(raw []byte) string {
	t := "a number"
	switch raw[0] {
	case '"':
		t = "a string"
	case '{':
		t = "an object"
	case '[':
		t = "an array"
	case 't', 'f':
		t = "a boolean"
	case 'n':
		return "null"
	}
	if len(raw) <= 40 {
		return t + " " + string(raw)
	}
	return t
}

func article(k kind) string {
	switch k {
	case kindInteger, kindArray, kindObject:
		return "an " + string(k)
	}
	return "a " + string(k)
}

func lengthWords(minLen, maxLen int) string {
	switch {
	case maxLen > 0:
		return fmt.Sprintf("%d to %d characters", minLen, maxLen)
	case minLen == 1:
		return "a non-empty string"
	}
	return fmt.Sprintf("at least %d characters", minLen)
}
