package bench

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// fuzzSeeds are answers as the lab's servers send them (the instances
// through nginx, nginx's own errors), pipelines of two on one connection,
// and broken ones: truncated, huge or negative or repeated Content-Length,
// Transfer-Encoding the parser must not trust, bad status lines.
var fuzzSeeds = func() []string {
	okBody := `{"order_id":7,"goods_id":1,"qty":1,"remaining":292,"instance":"inst-2","strategy":"redis","request_id":"r-1","fence":0}`
	soldOut := `{"error":"sold_out","detail":"goods 1 has 0 left"}`
	nginx503 := "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	answer := func(status, extra, body string) string {
		return "HTTP/1.1 " + status + "\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 10:00:00 GMT\r\nContent-Type: application/json; charset=utf-8\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: keep-alive\r\n" + extra + "\r\n" + body
	}
	ok := answer("200 OK", "X-Instance: inst-2\r\n", okBody)
	conflict := answer("409 Conflict", "X-Instance: inst-1\r\n", soldOut)
	unavailable := "HTTP/1.1 503 Service Temporarily Unavailable\r\nServer: nginx\r\nContent-Type: text/html\r\nContent-Length: " +
		strconv.Itoa(len(nginx503)) + "\r\nConnection: keep-alive\r\n\r\n" + nginx503
	chunked := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Instance: inst-3\r\n\r\n" +
		"1a\r\n" + okBody[:26] + "\r\n" + strconv.FormatInt(int64(len(okBody)-26), 16) + ";ext=1\r\n" + okBody[26:] + "\r\n0\r\nX-Trailer: t\r\n\r\n"
	return []string{
		ok, conflict, unavailable, chunked,
		answer("503 Service Unavailable", "X-Instance: inst-1\r\n", `{"error":"backend_unavailable","detail":"redis: connection refused"}`),
		"HTTP/1.1 502 Bad Gateway\r\nServer: nginx\r\nContent-Length: 0\r\n\r\n",
		ok + conflict, chunked + ok, unavailable + chunked, // keep-alive pipelines
		"HTTP/1.1 100 Continue\r\n\r\n" + ok,
		"HTTP/1.1 204 No Content\r\nX-Instance: inst-1\r\n\r\n" + ok,
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n" + ok,
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframes",
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok" + ok,
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok" + ok,
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe body runs to the close",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n2\r\nok\r\n0\r\n\r\n" + ok,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\n0\n\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 2 \r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n",
		ok[:len(ok)/2], ok[:len(ok)-1], chunked[:len(chunked)-2], "HTTP/1.1 200 OK\r\n", "HTTP/1.1 2", // truncated
		"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nhuge",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhuge",
		"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nnegative",
		"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok" + ok,
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!",
		"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\tX-Folded: 1\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nX-Instance: a\r\nX-Instance: b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", leanBuffer) + "\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2" + strings.Repeat(" ", leanBuffer) + "9\r\n\r\nok",
		"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1  200 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 099 Low\r\n\r\n", "HTTP/1.1 +20 OK\r\n\r\n",
		"HTTP/2 200 OK\r\n\r\n", "HTTP/1.10 200 OK\r\n\r\n", "ICY 200 OK\r\n\r\n", "HTTP/1.1\r\n\r\n", "\r\n", "",
	}
}()

// FuzzReadResponse feeds readResponse arbitrary bytes and checks it
// against itself and against net/http's client:
//   - it never panics, and an empty stream alone is errNothingRead;
//   - it reads an answer it accepts to its last byte and no further: the
//     same bytes cut right after that answer give the same result (it
//     never waits for a byte past the answer, which on a keep-alive
//     connection would block until the next one), and so do the same
//     bytes handed over one at a time;
//   - where net/http (http.ReadResponse after a GET, 1xx answers skipped
//     as its Transport does, the body read to its end) accepts too, both
//     give the same status code, X-Instance, body bytes (ours up to
//     maxBody), bytes read, and ours keeps the connection only if
//     net/http does;
//   - where net/http rejects the answer's framing (Content-Length,
//     Transfer-Encoding, a chunk, the stream ending early), ours rejects
//     it too, rather than take a body net/http would not. Where net/http
//     rejects only the syntax of a status or header line (its
//     textproto.ProtocolError, "malformed HTTP ...") or the Trailer
//     header's keys, ours may be lenient.
func FuzzReadResponse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint16(math.MaxUint16))
	}
	f.Add([]byte(fuzzSeeds[0]), uint16(10))
	f.Add([]byte(fuzzSeeds[3]), uint16(0))
	f.Fuzz(func(t *testing.T, stream []byte, maxBody uint16) {
		ours := parseLean(bytes.NewReader(stream), int(maxBody))
		if nothing := errors.Is(ours.err, errNothingRead); nothing != (len(stream) == 0) {
			t.Fatalf("errNothingRead is %v on %d bytes: %v", nothing, len(stream), ours.err)
		}
		if ours.err == nil {
			if cut := parseLean(bytes.NewReader(stream[:ours.read]), int(maxBody)); !cut.same(ours) {
				t.Fatalf("the answer cut after its %d bytes reads %s, the whole stream %s", ours.read, cut, ours)
			}
		}
		if slow := parseLean(iotest.OneByteReader(bytes.NewReader(stream)), int(maxBody)); !slow.same(ours) {
			t.Fatalf("one byte at a time reads %s, all at once %s", slow, ours)
		}

		theirs := parseNetHTTP(stream)
		switch {
		case theirs.headErr != nil:
			if ours.err == nil && !lenientOn(theirs.headErr) {
				t.Fatalf("net/http rejects the answer's framing (%v); ours accepts %s", theirs.headErr, ours)
			}
		case theirs.bodyErr != nil:
			if ours.err == nil && !strings.Contains(theirs.bodyErr.Error(), "too much non-data") {
				t.Fatalf("net/http fails reading the body (%v); ours accepts %s", theirs.bodyErr, ours)
			}
		case ours.err == nil:
			want := theirs.body[:min(len(theirs.body), int(maxBody))]
			if ours.r.code != theirs.code || !bytes.Equal(ours.body, want) || ours.r.bytesIn != len(want) || ours.read != theirs.read ||
				(!ours.r.close && theirs.close) || (len(theirs.instance) == 1 && ours.r.instance != theirs.instance[0]) {
				t.Fatalf("ours %s\nnet/http code %d body %q read %d close %v X-Instance %q", ours, theirs.code, want, theirs.read, theirs.close, theirs.instance)
			}
		}
	})
}

// leanParse is what readResponse made of a stream.
type leanParse struct {
	r    leanResponse
	body []byte
	err  error
	read int // bytes of the stream consumed
}

// parseLean runs readResponse on src through a buffer of the
// connection's size.
func parseLean(src io.Reader, maxBody int) leanParse {
	rest := &countingReader{r: src}
	br := bufio.NewReaderSize(rest, leanBuffer)
	var p leanParse
	p.r, p.err = readResponse(br, interner{}, maxBody, &p.body)
	p.read = rest.n - br.Buffered()
	return p
}

// same reports whether q is p: the same answer read over the same bytes,
// or an error of the same kind.
func (p leanParse) same(q leanParse) bool {
	if (p.err == nil) != (q.err == nil) || errors.Is(p.err, io.ErrUnexpectedEOF) != errors.Is(q.err, io.ErrUnexpectedEOF) {
		return false
	}
	return p.err != nil || (p.r == q.r && bytes.Equal(p.body, q.body) && p.read == q.read)
}

func (p leanParse) String() string {
	if p.err != nil {
		return "error " + p.err.Error()
	}
	return "code " + strconv.Itoa(p.r.code) + " body " + strconv.Quote(string(p.body)) + " read " + strconv.Itoa(p.read) +
		" close " + strconv.FormatBool(p.r.close) + " X-Instance " + strconv.Quote(p.r.instance)
}

// netHTTPParse is what net/http's client made of a stream.
type netHTTPParse struct {
	code     int
	body     []byte
	close    bool
	instance []string
	read     int
	headErr  error // from http.ReadResponse
	bodyErr  error // reading the body
}

// parseNetHTTP reads stream's answer to a GET as net/http's Transport
// does: 1xx answers other than 101 skipped, then the final one and its
// whole body.
func parseNetHTTP(stream []byte) netHTTPParse {
	rest := &countingReader{r: bytes.NewReader(stream)}
	br := bufio.NewReaderSize(rest, leanBuffer)
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/api/v1/purchase", nil)
	var p netHTTPParse
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			p.headErr = err
			return p
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		p.code, p.close, p.instance = resp.StatusCode, resp.Close, resp.Header["X-Instance"]
		p.body, p.bodyErr = io.ReadAll(resp.Body)
		p.read = rest.n - br.Buffered()
		return p
	}
}

// lenientOn reports whether net/http's err rejects only a status or header
// line's syntax, or the Trailer header's keys: what readResponse need not
// check, as it does not change where the body ends.
func lenientOn(err error) bool {
	var pe textproto.ProtocolError
	msg := err.Error()
	return errors.As(err, &pe) || strings.HasPrefix(msg, "malformed HTTP ") || strings.HasPrefix(msg, "bad trailer key")
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
