package contract

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// loadDoc is OpenAPI, loaded and valid.
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi.yaml is OpenAPI %s, want 3.0.3", doc.OpenAPI)
	}
	return doc
}

// operation is the yaml's operation of method at path.
func operation(t *testing.T, doc *openapi3.T, method, path string) *openapi3.Operation {
	t.Helper()
	item := doc.Paths.Value(path)
	if item == nil {
		t.Fatalf("openapi.yaml has no path %s", path)
	}
	op := item.GetOperation(method)
	if op == nil {
		t.Fatalf("openapi.yaml has no %s %s", method, path)
	}
	return op
}

// TestOpenAPICalls: the yaml is a valid OpenAPI 3.0.3 document with
// exactly the contract's four calls, at the package's paths.
func TestOpenAPICalls(t *testing.T) {
	doc := loadDoc(t)
	want := map[string]string{PathPurchase: http.MethodPost, PathReset: http.MethodPost, PathGoods: http.MethodGet, PathOrders: http.MethodGet}
	got := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if _, dup := got[path]; dup {
				t.Errorf("%s has two operations", path)
			}
			got[path] = method
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("openapi.yaml's calls %v, want %v", got, want)
	}
	if GoodsPath(7) != strings.Replace(PathGoods, "{id}", "7", 1) || OrdersPath(7) != PathOrders+"?goods_id=7" {
		t.Errorf("GoodsPath %s, OrdersPath %s: not the contract's paths", GoodsPath(7), OrdersPath(7))
	}
}

// TestOutcomesMatchOpenAPI: the purchase's answers in the yaml are the
// outcome table's, status by status: a receipt for 200 and 202, an error
// whose code is one of the table's codes of that status otherwise.
func TestOutcomesMatchOpenAPI(t *testing.T) {
	doc := loadDoc(t)
	op := operation(t, doc, http.MethodPost, PathPurchase)
	yaml := map[int][]string{}
	for key, ref := range op.Responses.Map() {
		status, err := strconv.Atoi(key)
		if err != nil {
			t.Errorf("purchase answer %q: only statuses, no default or range", key)
			continue
		}
		s := jsonSchema(t, ref, "purchase "+key)
		if status/100 == 2 {
			if s != doc.Components.Schemas["Receipt"].Value {
				t.Errorf("purchase %d: not a Receipt", status)
			}
			yaml[status] = []string{"ok"}
			continue
		}
		code := s.Properties["error"]
		if code == nil || len(code.Value.Enum) == 0 {
			t.Errorf("purchase %d: its error property has no enum of codes", status)
			continue
		}
		for _, c := range code.Value.Enum {
			yaml[status] = append(yaml[status], c.(string))
		}
		checkShape(t, errorShape, s, "purchase "+key)
	}
	table := map[int][]string{}
	for _, o := range Outcomes() {
		table[o.Status] = append(table[o.Status], o.Code)
	}
	for status := range mapsUnion(yaml, table) {
		y, g := slices.Sorted(slices.Values(yaml[status])), slices.Sorted(slices.Values(table[status]))
		if !slices.Equal(y, g) {
			t.Errorf("purchase %d: openapi.yaml's codes %v, Outcomes' %v", status, y, g)
		}
	}
}

// TestOutcomesTable: every row of the table is one status and code, in
// order of status, with a meaning, an effect and a layer; a 2xx sold.
func TestOutcomesTable(t *testing.T) {
	seen := map[string]bool{}
	last := 0
	for _, o := range Outcomes() {
		key := strconv.Itoa(o.Status) + " " + o.Code
		switch {
		case seen[key]:
			t.Errorf("%s: twice", key)
		case o.Status < last:
			t.Errorf("%s: out of the order of status", key)
		case o.Code == "" || o.Meaning == "":
			t.Errorf("%s: no code or meaning", key)
		case o.Effect < Sold || o.Effect > Unknown || o.Layer != LayerHTTP && o.Layer != LayerService:
			t.Errorf("%s: effect %v, layer %q", key, o.Effect, o.Layer)
		case (o.Status/100 == 2) != (o.Effect == Sold):
			t.Errorf("%s: effect %v; a 2xx and only a 2xx sold", key, o.Effect)
		}
		if got, ok := OutcomeFor(o.Status, o.Code); !ok || got != o {
			t.Errorf("OutcomeFor(%s) = %v, %v", key, got, ok)
		}
		seen[key], last = true, o.Status
	}
	if _, ok := OutcomeFor(http.StatusConflict, "nope"); ok {
		t.Error("OutcomeFor found a code the table lacks")
	}
}

// TestStatusesMatchOpenAPI: the statuses the client takes for each audit
// call are the yaml's, and every error answer of theirs is an Error.
func TestStatusesMatchOpenAPI(t *testing.T) {
	doc := loadDoc(t)
	for _, tc := range []struct {
		method, path string
		ok           shape
		statuses     []int
	}{
		{http.MethodPost, PathReset, resetShape, resetStatuses},
		{http.MethodGet, PathGoods, goodsShape, goodsStatuses},
		{http.MethodGet, PathOrders, ordersShape, ordersStatuses},
	} {
		op := operation(t, doc, tc.method, tc.path)
		var got []int
		for key, ref := range op.Responses.Map() {
			status, err := strconv.Atoi(key)
			if err != nil {
				t.Errorf("%s %s answer %q: only statuses", tc.method, tc.path, key)
				continue
			}
			got = append(got, status)
			s := jsonSchema(t, ref, tc.path+" "+key)
			if status == http.StatusOK {
				checkShape(t, tc.ok, s, tc.path+" 200")
			} else {
				checkShape(t, errorShape, s, tc.path+" "+key)
			}
		}
		if slices.Sort(got); !slices.Equal(got, tc.statuses) {
			t.Errorf("%s %s: openapi.yaml's statuses %v, the client's %v", tc.method, tc.path, got, tc.statuses)
		}
	}
}

// TestShapesMatchOpenAPI: the client's checks are the yaml's schemas:
// each answer's properties, their types, bounds and which are required;
// and every object schema of the yaml allows no other property.
func TestShapesMatchOpenAPI(t *testing.T) {
	doc := loadDoc(t)
	for _, s := range []shape{receiptShape, errorShape, resetShape, goodsShape, ordersShape, skippedShape} {
		ref := doc.Components.Schemas[s.name]
		if ref == nil {
			t.Errorf("openapi.yaml has no schema %s", s.name)
			continue
		}
		checkShape(t, s, ref.Value, s.name)
	}
	for name, ref := range doc.Components.Schemas {
		closedObjects(t, name, ref.Value)
	}
}

// closedObjects reports an object schema under s that allows properties
// it does not name.
func closedObjects(t *testing.T, at string, s *openapi3.Schema) {
	t.Helper()
	if s.Type.Is("object") {
		if has := s.AdditionalProperties.Has; has == nil || *has || s.AdditionalProperties.Schema != nil {
			t.Errorf("%s: additionalProperties is not false", at)
		}
		for name, p := range s.Properties {
			closedObjects(t, at+"."+name, p.Value)
		}
	}
	if s.Type.Is("array") {
		closedObjects(t, at+"[]", s.Items.Value)
	}
}

// checkShape compares the client's shape want with the yaml's schema s.
func checkShape(t *testing.T, want shape, s *openapi3.Schema, at string) {
	t.Helper()
	if !s.Type.Is("object") {
		t.Errorf("%s: type %v, want object", at, s.Type)
		return
	}
	var names, required []string
	for _, f := range want.fields {
		names = append(names, f.name)
		if f.required {
			required = append(required, f.name)
		}
		p := s.Properties[f.name]
		if p == nil {
			t.Errorf("%s: openapi.yaml lacks %q", at, f.name)
			continue
		}
		checkField(t, f, p.Value, at+"."+f.name)
	}
	if got := slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
		t.Errorf("%s: openapi.yaml's properties %v, the client's %v", at, got, names)
	}
	if got := slices.Sorted(slices.Values(s.Required)); !slices.Equal(got, slices.Sorted(slices.Values(required))) {
		t.Errorf("%s: openapi.yaml requires %v, the client %v", at, got, required)
	}
}

// checkField compares one property of the client's with the yaml's.
func checkField(t *testing.T, f field, s *openapi3.Schema, at string) {
	t.Helper()
	if !s.Type.Is(string(f.kind)) {
		t.Errorf("%s: openapi.yaml's type %v, the client's %s", at, s.Type.Slice(), f.kind)
	}
	if (s.Min != nil) != f.hasMin || s.Min != nil && *s.Min != f.min {
		t.Errorf("%s: openapi.yaml's minimum %v, the client's %v (set: %v)", at, s.Min, f.min, f.hasMin)
	}
	maxLen := 0
	if s.MaxLength != nil {
		maxLen = int(*s.MaxLength)
	}
	if s.MinLength != uint64(f.minLen) || maxLen != f.maxLen {
		t.Errorf("%s: openapi.yaml's lengths %d..%d, the client's %d..%d", at, s.MinLength, maxLen, f.minLen, f.maxLen)
	}
	if f.kind == kindArray {
		switch {
		case s.Items == nil:
			t.Errorf("%s: an array without items", at)
		case f.items.kind == kindObject:
			checkShape(t, *f.items.obj, s.Items.Value, at+"[]")
		default:
			checkField(t, *f.items, s.Items.Value, at+"[]")
		}
	}
}

// jsonSchema is the application/json schema of a response.
func jsonSchema(t *testing.T, ref *openapi3.ResponseRef, at string) *openapi3.Schema {
	t.Helper()
	mt := ref.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || len(ref.Value.Content) != 1 {
		t.Fatalf("%s: not one application/json answer", at)
	}
	return mt.Schema.Value
}

func mapsUnion[V any](a, b map[int]V) map[int]bool {
	out := map[int]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// TestOutcomesDocumented: docs/contract.md's outcome table is Outcomes(),
// row by row: status, code, meaning and what the bench counts it as.
func TestOutcomesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(b), "\n") {
		if statusRow.MatchString(l) {
			rows = append(rows, l)
		}
	}
	var want []string
	for _, o := range Outcomes() {
		want = append(want, fmt.Sprintf("| %d | `%s` | %s | %s |", o.Status, o.Code, o.Meaning, o.Effect))
	}
	if !slices.Equal(rows, want) {
		t.Errorf("docs/contract.md's outcome table:\n%s\nwant contract.Outcomes():\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// statusRow is a row of a Markdown table that starts with a status.
var statusRow = regexp.MustCompile(`^\| [1-5][0-9][0-9] \| `)
