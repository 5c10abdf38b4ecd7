package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// strictKeys checks that body is a JSON object whose keys are all among
// fields, exactly (case included), each at most once. encoding/json alone
// accepts {"qty":1,"qty":7} (the last wins) and matches "QTY" to qty.
//
// body must be valid JSON (bindJSON checks first). The object's top-level
// keys are found by a scan of the bytes (topKeys), without allocating; an
// object it does not read (a key with an escape) goes to the decoder.
func strictKeys(body []byte, fields ...string) error {
	var seen [8]bool
	if len(fields) > len(seen) {
		return strictKeysDecoded(body, fields...)
	}
	var err error
	ok := topKeys(body, func(key []byte) bool {
		for i, f := range fields {
			if string(key) == f {
				if seen[i] {
					err = fmt.Errorf("field %q appears twice", f)
					return false
				}
				seen[i] = true
				return true
			}
		}
		err = unknownKey(string(key), fields)
		return false
	})
	if !ok {
		return strictKeysDecoded(body, fields...)
	}
	return err
}

// unknownKey is the error for a key that is not among fields.
func unknownKey(key string, fields []string) error {
	for _, f := range fields {
		if strings.EqualFold(f, key) {
			return fmt.Errorf("field %q: keys are case-sensitive, send %q", key, f)
		}
	}
	return fmt.Errorf("unknown field %q; the fields are %s", key, strings.Join(fields, ", "))
}

// topKeys calls each with the raw bytes of every top-level key of body, a
// valid JSON object, until each returns false. It returns false, having
// decided nothing, when body is not an object or a key has an escape
// sequence or is not UTF-8 (its raw bytes are not the key).
func topKeys(body []byte, each func(key []byte) bool) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return true
	}
	for i < len(body) && body[i] == '"' {
		start := i + 1
		end := start
		ascii := true
		for end < len(body) && body[end] != '"' {
			if body[end] == '\\' {
				return false
			}
			ascii = ascii && body[end] < utf8.RuneSelf
			end++
		}
		if end >= len(body) || !ascii && !utf8.Valid(body[start:end]) {
			return false
		}
		if !each(body[start:end]) {
			return true
		}
		i = skipSpace(body, end+1)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, skipValue(body, skipSpace(body, i+1)))
		if i >= len(body) {
			return false
		}
		switch body[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(body, i+1)
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i]
// (b is valid JSON).
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			if depth == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				return i
			}
			i++
		}
		if depth == 0 && i > 0 && (b[i-1] == '"' || b[i-1] == '}' || b[i-1] == ']') {
			return i
		}
	}
	return i
}

// strictKeysDecoded is strictKeys through encoding/json's decoder.
func strictKeysDecoded(body []byte, fields ...string) error {
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
			return unknownKey(key, fields)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("field %q: %v", key, err)
		}
	}
	return nil
}
