// Package adminclient is the one client of a seckill instance's admin API
// (the lab service's internal/api: /admin/strategy, /admin/reset, /admin/audit,
// /admin/orders, /admin/events, /metrics): the bearer token, bounded
// timeouts, one error vocabulary (unreachable, token refused, admin
// disabled, an *Error for any other answer but 200, with the body's JSON
// error code) and one reader of the server-sent event stream. The bench,
// the demo commands, the dashboard, the scenarios and the stack use it.
package adminclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/stock"
)

// Errors a caller can hit; compare with errors.Is.
var (
	ErrUnreachable   = errors.New("unreachable")
	ErrUnauthorized  = errors.New("refuses the admin token")
	ErrNoToken       = errors.New("has no admin token configured")
	ErrAdminResponse = errors.New("unexpected admin API response")
	// ErrStreamEnded: an event stream ended while it was read.
	ErrStreamEnded = errors.New("the event stream ended")
)

// Error is an error answer of an instance's admin API: its status and the
// JSON body's "error" code. It matches ErrAdminResponse with errors.Is.
type Error struct {
	Method, URL string
	Status      int
	Code        string // the body's "error" field ("" when the body had none)
	Detail      string // the code and detail, or the raw body
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v: %s %s: %d %s", ErrAdminResponse, e.Method, e.URL, e.Status, e.Detail)
}

// Is makes errors.Is(err, ErrAdminResponse) hold.
func (e *Error) Is(target error) bool { return target == ErrAdminResponse }

// DefaultTimeout bounds one request (not an event stream).
const DefaultTimeout = 15 * time.Second

// Client talks to the admin API of instances with one token.
type Client struct {
	// HTTP sends the requests (timeout DefaultTimeout); Stream opens the
	// event streams (no timeout: a stream lasts until its ctx ends).
	HTTP, Stream *http.Client
	Token        string
}

// New returns a client that sends token as the bearer token.
func New(token string) *Client {
	return &Client{HTTP: &http.Client{Timeout: DefaultTimeout}, Stream: &http.Client{}, Token: token}
}

func (c *Client) request(ctx context.Context, method, u string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// Get sends GET base+path and returns the body of a 200 answer.
func (c *Client) Get(ctx context.Context, base, path string) ([]byte, error) {
	return c.send(ctx, http.MethodGet, base, path, nil)
}

// Do sends one request to base+path, in (when not nil) as the JSON body,
// and decodes a 200 answer into out (when not nil).
func (c *Client) Do(ctx context.Context, method, base, path string, in, out any) error {
	raw, err := c.send(ctx, method, base, path, in)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: %s %s%s: decode %q: %v", ErrAdminResponse, method, base, path, truncate(string(raw), 200), err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, base, path string, in any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := strings.TrimRight(base, "/") + path
	req, err := c.request(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, u, ctx.Err())
		}
		return nil, fmt.Errorf("instance %s is %w (%s %s: %v)", base, ErrUnreachable, method, path, RootCause(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, u, err)
	}
	if err := answerError(method, base, path, u, resp.StatusCode, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// answerError is the error of an answer other than 200 (nil for 200).
func answerError(method, base, path, u string, status int, raw []byte) error {
	switch status {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized:
		return fmt.Errorf("instance %s %w (401 on %s %s)", base, ErrUnauthorized, method, path)
	case http.StatusForbidden:
		return fmt.Errorf("instance %s %w (403 on %s %s)", base, ErrNoToken, method, path)
	}
	var e struct {
		Error  string `json:"error"`
		Detail string `json:"detail"`
	}
	msg := truncate(strings.TrimSpace(string(raw)), 300)
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		msg = e.Error
		if e.Detail != "" {
			msg += ": " + e.Detail
		}
	}
	return &Error{Method: method, URL: u, Status: status, Code: e.Error, Detail: msg}
}

// OpenEvents opens the event stream of the instance at base (GET
// /admin/events; with replay, the events the instance kept come first,
// then the line stock.ReplayedComment). The caller closes the body.
func (c *Client) OpenEvents(ctx context.Context, base string, replay bool) (io.ReadCloser, error) {
	path := "/admin/events"
	if replay {
		path += "?replay=true"
	}
	u := strings.TrimRight(base, "/") + path
	req, err := c.request(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Stream.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("events of %s: instance %s is %w: %v", base, base, ErrUnreachable, RootCause(err))
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, answerError(http.MethodGet, base, path, u, resp.StatusCode, raw)
	}
	return resp.Body, nil
}

// Item is one thing read from an event stream: an event, the end of the
// replay (Replayed), or the error that ended the stream (Err; the last
// item, ErrStreamEnded when the server closed it).
type Item struct {
	Event    stock.Event
	Replayed bool
	Err      error
}

// ReadEvents reads the stream r until it ends or each returns false, and
// closes it. The last item it gives carries the error that ended it.
func ReadEvents(r io.ReadCloser, each func(Item) bool) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == stock.ReplayedComment {
			if !each(Item{Replayed: true}) {
				return
			}
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev stock.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			each(Item{Err: fmt.Errorf("decode event %q: %w", data, err)})
			return
		}
		if !each(Item{Event: ev}) {
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = ErrStreamEnded
	}
	each(Item{Err: err})
}

// Events follows the live lock events of the instance at base until ctx
// is done or the stream ends; the channel is then closed.
func (c *Client) Events(ctx context.Context, base string) (<-chan stock.Event, error) {
	body, err := c.OpenEvents(ctx, base, false)
	if err != nil {
		return nil, err
	}
	out := make(chan stock.Event, 1024)
	go func() {
		defer close(out)
		ReadEvents(body, func(it Item) bool {
			if it.Err != nil || it.Replayed {
				return it.Err == nil
			}
			select {
			case out <- it.Event:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return out, nil
}

// RootCause strips url.Error and friends for a one-line message.
func RootCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
