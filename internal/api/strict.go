package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// strictKeys checks that body is a JSON object whose keys are all among
// fields, exactly (case included), each at most once. encoding/json alone
// accepts {"qty":1,"qty":7} (the last wins) and matches "QTY" to qty.
func strictKeys(body []byte, fields ...string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("the body is not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("the body must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("the body is not JSON: %v", err)
		}
		key, _ := tok.(string)
		switch {
		case seen[key]:
			return fmt.Errorf("field %q appears twice", key)
		case !slices.Contains(fields, key):
			for _, f := range fields {
				if strings.EqualFold(f, key) {
					return fmt.Errorf("field %q: keys are case-sensitive, send %q", key, f)
				}
			}
			return fmt.Errorf("unknown field %q; the fields are %s", key, strings.Join(fields, ", "))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("field %q: %v", key, err)
		}
	}
	return nil
}
