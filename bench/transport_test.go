package bench

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadResponse feeds the lean path's parser answers as a server may
// frame them, each followed by a second answer on the same stream where
// the first leaves the connection open: the first must be read to its
// last byte, no further.
func TestReadResponse(t *testing.T) {
	const next = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"
	long := "X-Long: " + strings.Repeat("v", 3*leanBuffer) + "\r\n"
	cases := []struct {
		name     string
		stream   string
		maxBody  int
		code     int
		status   string
		instance string
		body     string
		close    bool
		err      error // errors.Is; nil = none
		anyErr   bool  // some error, not a particular one
	}{
		{name: "content-length", stream: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Instance: inst-2\r\n\r\nhello" + next,
			maxBody: 64, code: 200, instance: "inst-2", body: "hello"},
		{name: "header names in any case", stream: "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-instance:  inst-3 \r\n\r\nok" + next,
			maxBody: 64, code: 200, instance: "inst-3", body: "ok"},
		{name: "chunked, extensions and trailers", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"6;ext=1\r\npart1,\r\n5\r\npart2\r\n0\r\nX-Trailer: t\r\n\r\n" + next,
			maxBody: 64, code: 200, body: "part1,part2"},
		{name: "body beyond maxBody dropped", stream: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789" + next,
			maxBody: 4, code: 200, body: "0123"},
		{name: "chunked beyond maxBody dropped", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n" + next,
			maxBody: 4, code: 200, body: "abcd"},
		{name: "error status keeps its text", stream: "HTTP/1.1 409 Conflict\r\nContent-Length: 20\r\n\r\n{\"error\":\"sold_out\"}" + next,
			maxBody: 64, code: 409, status: "409 Conflict", body: `{"error":"sold_out"}`},
		{name: "502 from nginx", stream: "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n" + next,
			maxBody: 64, code: 502, status: "502 Bad Gateway"},
		{name: "interim 100 skipped", stream: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx" + next,
			maxBody: 64, code: 201, body: "x"},
		{name: "204 has no body", stream: "HTTP/1.1 204 No Content\r\n\r\n" + next, maxBody: 64, code: 204},
		{name: "connection: close", stream: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye",
			maxBody: 64, code: 200, body: "bye", close: true},
		{name: "no length: body up to the close", stream: "HTTP/1.1 200 OK\r\n\r\nto the end",
			maxBody: 64, code: 200, body: "to the end", close: true},
		{name: "HTTP/1.0 closes", stream: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", maxBody: 64, code: 200, body: "ok", close: true},
		{name: "HTTP/1.0 keep-alive", stream: "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok" + next,
			maxBody: 64, code: 200, body: "ok"},
		{name: "a header longer than the buffer is skipped", stream: "HTTP/1.1 200 OK\r\n" + long + "Content-Length: 2\r\n\r\nok" + next,
			maxBody: 64, code: 200, body: "ok"},
		{name: "closed before any answer", stream: "", err: errNothingRead},
		{name: "closed within the head", stream: "HTTP/1.1 200 OK\r\nContent-Le", err: io.ErrUnexpectedEOF},
		{name: "closed within the body", stream: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", maxBody: 64, err: io.ErrUnexpectedEOF},
		{name: "closed within a chunk", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nabc", maxBody: 64, err: io.ErrUnexpectedEOF},
		{name: "not HTTP", stream: "SSH-2.0-OpenSSH_9.2\r\n\r\n", anyErr: true},
		{name: "bad status code", stream: "HTTP/1.1 2x0 OK\r\n\r\n", anyErr: true},
		{name: "bad content-length", stream: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", anyErr: true},
		{name: "conflicting content-lengths", stream: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", anyErr: true},
		{name: "bad chunk size", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", anyErr: true},
		{name: "chunk without its CRLF", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n0\r\n\r\n", maxBody: 64, anyErr: true},
		// Framings net/http's client rejects (FuzzReadResponse holds the two alike).
		{name: "HTTP/1.0 ignores Transfer-Encoding", stream: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n1\r\n",
			maxBody: 64, code: 200, body: "1\r\n", close: true},
		{name: "a Transfer-Encoding other than chunked", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", anyErr: true},
		{name: "two Transfer-Encodings", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", anyErr: true},
		{name: "a Transfer-Encoding spelt with a Kelvin sign", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\nContent-Length: 0\r\n\r\n", anyErr: true},
		{name: "a signed content-length", stream: "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", anyErr: true},
		{name: "repeated content-lengths spelt apart", stream: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nok", anyErr: true},
		{name: "repeated content-lengths alike", stream: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length:2 \r\n\r\nok" + next,
			maxBody: 64, code: 200, body: "ok"},
		{name: "a folded header line", stream: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n 0\r\n\r\nok", anyErr: true},
		{name: "a content-length longer than the buffer", stream: "HTTP/1.1 200 OK\r\nContent-Length: 2" + strings.Repeat(" ", leanBuffer) + "9\r\n\r\nok", anyErr: true},
		{name: "a chunk line ending in a bare LF", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n", maxBody: 64, anyErr: true},
		{name: "a signed chunk size", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-0\r\n\r\n", anyErr: true},
		{name: "a chunk followed by CR CR LF", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\r\n0\r\n\r\n", maxBody: 64, anyErr: true},
		{name: "a trailer without a colon", stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n", anyErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.stream), leanBuffer)
			var body []byte
			r, err := readResponse(br, interner{}, tc.maxBody, &body)
			switch {
			case tc.err != nil || tc.anyErr:
				if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if r.code != tc.code || r.status != tc.status || r.instance != tc.instance || string(body) != tc.body ||
				r.bytesIn != len(tc.body) || r.close != tc.close {
				t.Fatalf("got %+v body %q, want code %d status %q instance %q body %q close %v",
					r, body, tc.code, tc.status, tc.instance, tc.body, tc.close)
			}
			if tc.close {
				return
			}
			r, err = readResponse(br, nil, 64, &body)
			if err != nil || r.code != 200 || string(body) != "next" {
				t.Fatalf("the next answer on the stream: %+v %q %v", r, body, err)
			}
		})
	}
}

// TestInterner: one string per distinct instance name.
func TestInterner(t *testing.T) {
	in := interner{}
	a, b := in.get([]byte("inst-1")), in.get([]byte("inst-1"))
	if a != "inst-1" || b != a || len(in) != 1 || in.get([]byte("inst-2")) != "inst-2" || len(in) != 2 {
		t.Fatalf("interner %v", in)
	}
	if got := testing.AllocsPerRun(100, func() { in.get([]byte("inst-1")) }); got != 0 {
		t.Errorf("a known name allocates %v times, want 0", got)
	}
}
