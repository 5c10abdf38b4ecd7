package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
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
	chunked bool
}

// readHead reads a status line and the headers after it.
func readHead(br *bufio.Reader, names interner) (leanResponse, framing, error) {
	h := framing{length: -1}
	line, err := readLine(br)
	if err != nil {
		return leanResponse{}, h, unexpected(err)
	}
	version, status, ok := bytes.Cut(line, []byte(" "))
	var r leanResponse
	if ok && len(status) >= 3 {
		r.code, err = strconv.Atoi(string(status[:3]))
	}
	if !ok || !bytes.HasPrefix(version, []byte("HTTP/1.")) || err != nil || r.code < 100 || r.code > 999 ||
		(len(status) > 3 && status[3] != ' ') {
		return r, h, fmt.Errorf("malformed HTTP status line %q", line)
	}
	if r.code < 200 || r.code >= 400 {
		r.status = string(status) // vegeta's Error for such a status
	}
	http10 := string(version) == "HTTP/1.0"
	r.close = http10
	for {
		line, err := readLine(br)
		if err != nil {
			return r, h, unexpected(err)
		}
		if len(line) == 0 {
			return r, h, nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return r, h, fmt.Errorf("malformed HTTP header line %q", line)
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 || (h.length >= 0 && n != h.length) {
				return r, h, fmt.Errorf("bad Content-Length %q", v)
			}
			h.length = n
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			h.chunked = bytes.EqualFold(lastToken(v), []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			switch {
			case hasToken(v, "close"):
				r.close = true
			case http10 && hasToken(v, "keep-alive"):
				r.close = false
			}
		case bytes.EqualFold(k, []byte("X-Instance")):
			r.instance = names.get(v)
		}
	}
}

// readLine reads one line without its CR LF; of a line longer than the
// buffer it returns the start and skips the rest.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		head := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		line = head
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
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

// readChunked reads a chunked body and its trailers.
func readChunked(br *bufio.Reader, maxBody int, body *[]byte) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return unexpected(err)
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size line %q", line)
		}
		if n == 0 {
			for { // trailers, up to the empty line
				line, err := readLine(br)
				if err != nil {
					return unexpected(err)
				}
				if len(line) == 0 {
					return nil
				}
			}
		}
		if err := readBody(br, n, maxBody, body); err != nil {
			return err
		}
		line, err = readLine(br)
		if err != nil {
			return unexpected(err)
		}
		if len(line) != 0 {
			return fmt.Errorf("chunk of %d bytes followed by %q, not CRLF", n, line)
		}
	}
}

// unexpected is err, with an EOF within an answer made io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// hasToken reports whether the comma-separated list v has token (any case).
func hasToken(v []byte, token string) bool {
	for t := range bytes.SplitSeq(v, []byte(",")) {
		if bytes.EqualFold(bytes.TrimSpace(t), []byte(token)) {
			return true
		}
	}
	return false
}

// lastToken is the last element of the comma-separated list v.
func lastToken(v []byte) []byte {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return bytes.TrimSpace(v)
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
