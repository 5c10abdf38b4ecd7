package api

import (
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/seckill-lab/seckill/stock"
)

// The purchase's hot path: its body decoded and its receipt encoded by hand,
// without reflection, into pooled buffers. Each promises the same result as
// the general path (bindJSON and gin's c.JSON through encoding/json); what
// it does not recognise goes to the general path, which writes the errors.

// jsonContentType is the Content-Type of every JSON answer, as gin's
// render.JSON writes it.
var jsonContentType = []string{"application/json; charset=utf-8"}

// bodyPool holds the buffers purchase bodies are read into (MaxBody at
// most, 4 KiB by default).
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// decodePurchase decodes body when it is a JSON object with exactly the
// keys goods_id, qty and user_id, once each in any order, the first two
// integers that fit an int64 and the last a string without escapes; any
// whitespace JSON allows. It returns false for every other body, which the
// general path (bindJSON, missing) then answers. Whatever it accepts,
// encoding/json with strictKeys accepts with the same values.
func decodePurchase(body []byte) (goods, qty int64, user string, ok bool) {
	const allKeys = 7
	seen := 0
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, 0, "", false
	}
	i++
	for {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != '"' {
			return 0, 0, "", false
		}
		key, next, kok := plainString(body, i)
		if !kok {
			return 0, 0, "", false
		}
		i = skipSpace(body, next)
		if i >= len(body) || body[i] != ':' {
			return 0, 0, "", false
		}
		i = skipSpace(body, i+1)
		var bit int
		switch string(key) {
		case "goods_id":
			bit = 1
			goods, i, ok = plainInt(body, i)
		case "qty":
			bit = 2
			qty, i, ok = plainInt(body, i)
		case "user_id":
			bit = 4
			if i < len(body) && body[i] == '"' {
				var v []byte
				v, i, ok = plainString(body, i)
				user = string(v)
			} else {
				ok = false
			}
		default:
			return 0, 0, "", false
		}
		if !ok || seen&bit != 0 {
			return 0, 0, "", false
		}
		seen |= bit
		i = skipSpace(body, i)
		if i >= len(body) {
			return 0, 0, "", false
		}
		switch body[i] {
		case ',':
			i++
			continue
		case '}':
			if seen != allKeys || skipSpace(body, i+1) != len(body) {
				return 0, 0, "", false
			}
			return goods, qty, user, true
		default:
			return 0, 0, "", false
		}
	}
}

// plainString reads the JSON string starting at b[i] (a quote) when it has
// no escape and no control character and is valid UTF-8: its bytes are then
// its value. It returns the index just past the closing quote.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	start := i + 1
	ascii := true
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, 0, false
}

// plainInt reads the JSON integer starting at b[i]: an optional minus and
// at most 18 digits without a leading zero (it always fits an int64), and
// no fraction or exponent after it.
func plainInt(b []byte, i int) (v int64, next int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	n := i - start
	if n == 0 || n > 18 || n > 1 && b[start] == '0' {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// readBody reads the request's body into a pooled buffer when its length is
// declared and at most MaxBody; ok is false, having read nothing, for any
// other body (the general path reads it). Give buf back with putBody.
func (h *handler) readBody(c *gin.Context) (body []byte, buf *[]byte, ok bool, err error) {
	n := c.Request.ContentLength
	if n <= 0 || n > h.MaxBody {
		return nil, nil, false, nil
	}
	buf = bodyPool.Get().(*[]byte)
	if int64(cap(*buf)) < n {
		*buf = make([]byte, n)
	}
	body = (*buf)[:n]
	if _, err := io.ReadFull(c.Request.Body, body); err != nil {
		putBody(buf)
		return nil, nil, true, err
	}
	return body, buf, true, nil
}

// putBody gives a buffer of readBody back.
func putBody(buf *[]byte) {
	*buf = (*buf)[:0]
	bodyPool.Put(buf)
}

// jsonExact reports whether ct is one of the JSON content types clients
// send, which bindJSON's rule accepts without parsing it.
func jsonExact(ct string) bool {
	return ct == "application/json" || ct == "application/json; charset=utf-8"
}

// writeJSON answers status with the JSON bytes body, as c.JSON does.
func writeJSON(c *gin.Context, status int, body []byte) {
	c.Writer.Header()["Content-Type"] = jsonContentType
	c.Writer.WriteHeader(status)
	_, _ = c.Writer.Write(body)
}

// receiptPool holds the buffers receipts are encoded into.
var receiptPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendReceipt appends rc as encoding/json marshals a stock.Receipt, byte
// for byte (the field order and omitempty of its tags).
func appendReceipt(b []byte, rc stock.Receipt) []byte {
	b = append(b, `{"order_id":`...)
	b = strconv.AppendInt(b, rc.OrderID, 10)
	b = append(b, `,"goods_id":`...)
	b = strconv.AppendInt(b, rc.GoodsID, 10)
	b = append(b, `,"qty":`...)
	b = strconv.AppendInt(b, rc.Qty, 10)
	b = append(b, `,"remaining":`...)
	b = strconv.AppendInt(b, rc.Remaining, 10)
	b = append(b, `,"instance":`...)
	b = appendString(b, rc.Instance)
	b = append(b, `,"strategy":`...)
	b = appendString(b, rc.Strategy)
	b = append(b, `,"request_id":`...)
	b = appendString(b, rc.RequestID)
	b = append(b, `,"fence":`...)
	b = strconv.AppendUint(b, rc.Fence, 10)
	if rc.Replayed {
		b = append(b, `,"replayed":true`...)
	}
	if rc.Accepted {
		b = append(b, `,"accepted":true`...)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string the way encoding/json writes it:
// printable ASCII but for the quote, the backslash and <, >, & as is; any
// other string through encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil { // a string always marshals
				return append(b, `""`...)
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// answerReceipt writes rc with status, as c.JSON(status, rc) does.
func answerReceipt(c *gin.Context, status int, rc stock.Receipt) {
	bp := receiptPool.Get().(*[]byte)
	b := appendReceipt((*bp)[:0], rc)
	writeJSON(c, status, b)
	*bp = b[:0]
	receiptPool.Put(bp)
}
