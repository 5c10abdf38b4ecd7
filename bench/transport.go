package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"
)

// leanConn is one keep-alive HTTP/1.1 connection of the load generator
// (plain http targets): one worker owns it and sends one request at a
// time on it, as bytes it built itself, and reads back only what the
// results need: the status line, the headers that frame the body
// (Content-Length, Transfer-Encoding, Connection), X-Instance, and the
// body up to maxBody bytes.
//
// net/http's client builds an *http.Request and an *http.Response with
// their header maps for every hit and hands both between a reader and a
// writer goroutine per connection; on the lab's 2-CPU machine, where the
// generator shares the CPUs with the system it measures, that was most of
// the generator's CPU per purchase (the report's "per-purchase CPU"
// table) and capped the generator's ceiling.
type leanConn struct {
	nc    net.Conn
	br    *bufio.Reader
	used  bool     // carried a request: a close before any answer may be the server's idle close
	names interner // the X-Instance values seen
}

// leanResponse is what the generator keeps of one answer.
type leanResponse struct {
	code     int
	status   string // outside 2xx and 3xx, the status line after the version: "409 Conflict"
	instance string // the X-Instance header
	bytesIn  int    // body bytes kept (vegeta's BytesIn: the body up to maxBody)
	close    bool   // the connection cannot carry another request
}

// errNothingRead: the connection ended before the first byte of an answer.
// On a reused connection that is the server closing it while idle, and a
// purchase (it carries an Idempotency-Key) is sent again on a new one, as
// net/http does.
var errNothingRead = errors.New("the connection closed before any answer")

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

// leanBuffer is a connection's read buffer; a longer header line is
// skipped past its first leanBuffer bytes (status and framing lines are
// short).
const leanBuffer = 4096

func newLeanConn(nc net.Conn) *leanConn {
	return &leanConn{nc: nc, br: bufio.NewReaderSize(nc, leanBuffer)}
}

// roundTrip writes req (a whole HTTP/1.1 request) and reads its answer,
// the body's first maxBody bytes appended to (*body)[:0], within deadline
// (zero = none). On an error the connection must be closed.
func (c *leanConn) roundTrip(req []byte, deadline time.Time, maxBody int, body *[]byte) (leanResponse, error) {
	if c.names == nil {
		c.names = interner{}
	}
	if err := c.nc.SetDeadline(deadline); err != nil {
		return leanResponse{}, err
	}
	c.used = true
	if _, err := c.nc.Write(req); err != nil {
		return leanResponse{}, err
	}
	return readResponse(c.br, c.names, maxBody, body)
}

// readResponse reads one HTTP/1.x response from br (a 1xx answer is
// skipped): the status, X-Instance and the body, by Content-Length, chunked
// or up to the close; its first maxBody bytes go to (*body)[:0], the rest
// is read and dropped. A stream that ends before the first byte is
// errNothingRead; one that ends within the answer, io.ErrUnexpectedEOF.
func readResponse(br *bufio.Reader, names interner, maxBody int, body *[]byte) (leanResponse, error) {
	*body = (*body)[:0]
	if _, err := br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return leanResponse{}, fmt.Errorf("%w: %w", errNothingRead, err)
		}
		return leanResponse{}, err
	}
	for {
		r, h, err := readHead(br, names)
		if err != nil {
			return r, err
		}
		switch {
		case r.code >= 100 && r.code < 200 && r.code != 101:
			continue // an interim answer; the final one follows
		case r.code == 101 || r.code == 204 || r.code == 304:
			r.close = r.close || r.code == 101
			return r, nil
		case h.chunked:
			err = readChunked(br, maxBody, body)
		case h.length >= 0:
			err = readBody(br, h.length, maxBody, body)
		default: // no length: the body ends with the connection
			r.close = true
			err = readBody(br, -1, maxBody, body)
		}
		r.bytesIn = len(*body)
		return r, err
	}
}

// framing is how a response's body is delimited.
type framing struct {
	length  int64 // Content-Length, -1 = none
	digits  int   // of the Content-Length as sent: a repeat must be the same text
	chunked bool
}

// readHead reads a status line and the headers after it. It rejects, as
// net/http's client does, a framing it cannot be sure of: a
// Content-Length that is not a plain decimal, repeats that differ, a
// Transfer-Encoding other than one "chunked" (ignored in HTTP/1.0), and
// folded lines (obs-fold, which could hide a framing header's real value).
func readHead(br *bufio.Reader, names interner) (leanResponse, framing, error) {
	h := framing{length: -1}
	line, _, err := readLine(br)
	if err != nil {
		return leanResponse{}, h, unexpected(err)
	}
	version, status, ok := bytes.Cut(line, []byte(" "))
	var r leanResponse
	if ok && len(status) >= 3 {
		r.code, err = strconv.Atoi(string(status[:3]))
	}
	if !ok || len(version) != len("HTTP/1.1") || !bytes.HasPrefix(version, []byte("HTTP/1.")) || version[7] < '0' || version[7] > '9' ||
		err != nil || r.code < 100 || r.code > 999 || (len(status) > 3 && status[3] != ' ') {
		return r, h, fmt.Errorf("malformed HTTP status line %q", line)
	}
	if r.code < 200 || r.code >= 400 {
		r.status = string(status) // vegeta's Error for such a status
	}
	http10 := version[7] == '0'
	r.close = http10
	for {
		line, long, err := readLine(br)
		if err != nil {
			return r, h, unexpected(err)
		}
		if len(line) == 0 {
			return r, h, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return r, h, fmt.Errorf("folded HTTP header line %q", line)
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return r, h, fmt.Errorf("malformed HTTP header line %q", line)
		}
		v = trimOWS(v)
		field := whichField(k)
		if field != otherField && long {
			return r, h, fmt.Errorf("HTTP header %s longer than %d bytes", k, leanBuffer)
		}
		switch field {
		case contentLength:
			n, ok := parseDecimal(v)
			if !ok || (h.length >= 0 && (n != h.length || len(v) != h.digits)) {
				return r, h, fmt.Errorf("bad Content-Length %q", v)
			}
			h.length, h.digits = n, len(v)
		case transferEncoding:
			if http10 {
				break // HTTP/1.0 has none: net/http ignores it too
			}
			if h.chunked || !equalFold(v, "chunked") {
				return r, h, fmt.Errorf("unsupported Transfer-Encoding %q", v)
			}
			h.chunked = true
		case connection:
			switch {
			case hasToken(v, "close"):
				r.close = true
			case http10 && hasToken(v, "keep-alive"):
				r.close = false
			}
		case xInstance:
			r.instance = names.get(v)
		}
	}
}

// The header fields readHead reads.
const (
	otherField = iota
	contentLength
	transferEncoding
	connection
	xInstance
)

// whichField is the field named k (any case, ASCII only).
func whichField(k []byte) int {
	switch {
	case equalFold(k, "content-length"):
		return contentLength
	case equalFold(k, "transfer-encoding"):
		return transferEncoding
	case equalFold(k, "connection"):
		return connection
	case equalFold(k, "x-instance"):
		return xInstance
	}
	return otherField
}

// readLine reads one line without its LF and a CR before it; of a line
// longer than the buffer it returns the start, skips the rest and
// reports long.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	line, err = br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		head := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		line, long = head, true
	}
	if err != nil {
		return nil, long, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), long, nil
}

// readBody reads a body of n bytes (n < 0: up to EOF), keeping its first
// maxBody bytes in *body.
func readBody(br *bufio.Reader, n int64, maxBody int, body *[]byte) error {
	for n != 0 {
		if _, err := br.Peek(1); err != nil {
			if n < 0 && errors.Is(err, io.EOF) {
				return nil
			}
			return unexpected(err)
		}
		chunk, _ := br.Peek(br.Buffered())
		if n >= 0 && int64(len(chunk)) > n {
			chunk = chunk[:n]
		}
		if room := maxBody - len(*body); room > 0 {
			*body = append(*body, chunk[:min(room, len(chunk))]...)
		}
		_, _ = br.Discard(len(chunk))
		if n > 0 {
			n -= int64(len(chunk))
		}
	}
	return nil
}

// readChunked reads a chunked body and its trailers, as strictly as
// net/http's client: every line ends in CR LF and fits the buffer, a size
// is hexadecimal digits (then optional blanks and ;extensions), a chunk's
// data is followed by CR LF, and the trailers are header fields that end
// within one buffer of their start.
func readChunked(br *bufio.Reader, maxBody int, body *[]byte) error {
	for {
		line, err := readChunkLine(br)
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, " \t"), []byte(";"))
		n, ok := parseHex(size)
		if !ok {
			return fmt.Errorf("bad chunk size line %q", line)
		}
		if n == 0 {
			return readTrailers(br)
		}
		if err := readBody(br, n, maxBody, body); err != nil {
			return err
		}
		crlf, err := br.Peek(2)
		if err != nil {
			return unexpected(err)
		}
		if string(crlf) != "\r\n" {
			return fmt.Errorf("chunk of %d bytes followed by %q, not CRLF", n, crlf)
		}
		_, _ = br.Discard(2)
	}
}

// readChunkLine reads a line of a chunked body, without its CR LF.
func readChunkLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("a line of a chunked body longer than %d bytes", br.Size())
	case err != nil:
		return nil, unexpected(err)
	case len(line) < 2 || bytes.IndexByte(line, '\r') != len(line)-2:
		return nil, fmt.Errorf("a line of a chunked body %q does not end in CRLF", line)
	}
	return line[:len(line)-2], nil
}

// readTrailers reads the trailer fields after a chunked body's last
// chunk, up to the empty line.
func readTrailers(br *bufio.Reader) error {
	for size := 0; ; {
		line, err := readChunkLine(br)
		if err != nil {
			return err
		}
		if size += len(line) + 2; size+2 > br.Size() && len(line) > 0 {
			return fmt.Errorf("trailers longer than %d bytes", br.Size())
		}
		if len(line) == 0 {
			return nil
		}
		if !validField(line) {
			return fmt.Errorf("malformed trailer line %q", line)
		}
	}
}

// validField reports whether line is a header field net/http's textproto
// reads as it is: a name of token characters (a space allowed), a colon, a
// value without control characters other than tab.
func validField(line []byte) bool {
	k, v, ok := bytes.Cut(line, []byte(":"))
	if !ok || len(k) == 0 {
		return false
	}
	for _, c := range k {
		if c != ' ' && (c >= utf8.RuneSelf || !tokenChar[c]) {
			return false
		}
	}
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// tokenChar holds the characters of an HTTP token (RFC 9110, tchar).
var tokenChar = func() (t [utf8.RuneSelf]bool) {
	for _, c := range "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" {
		t[c] = true
	}
	return t
}()

// parseDecimal parses a Content-Length: decimal digits only, at most
// math.MaxInt64.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' || n > (math.MaxInt64-int64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseHex parses a chunk size: 1 to 16 hexadecimal digits, at most
// math.MaxInt64.
func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return int64(n), n <= math.MaxInt64
}

// unexpected is err, with an EOF within an answer made io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// hasToken reports whether the comma-separated list v has token (ASCII,
// any case).
func hasToken(v []byte, token string) bool {
	for t := range bytes.SplitSeq(v, []byte(",")) {
		if equalFold(trimOWS(t), token) {
			return true
		}
	}
	return false
}

// equalFold reports whether b is lower (ASCII lower case) in any case of
// ASCII letters. Unlike bytes.EqualFold, no other character matches: the
// Kelvin sign is not a "k", nor the long s an "s".
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// trimOWS is v without the spaces and tabs around it (HTTP's optional
// white space; not Unicode's).
func trimOWS(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// interner hands out one string per distinct value (the fleet's few
// instance names), so reading an X-Instance allocates nothing; a nil
// interner allocates every time.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	if in != nil && len(in) < 64 {
		in[s] = s
	}
	return s
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// watchConn ends c's blocked read or write at once when ctx ends, until
// the returned stop is called.
func watchConn(ctx context.Context, c net.Conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() { _ = c.SetDeadline(aLongTimeAgo) })
}
