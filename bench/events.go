package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/seckill-lab/seckill/stock"
)

// SubscribeEvents follows the lock events of the instance at base
// (GET /admin/events, server-sent events) until ctx is done. The channel is
// closed when the stream ends.
func SubscribeEvents(ctx context.Context, base, token string) (<-chan stock.Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/admin/events", nil)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", base, rootCause(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("events of %s: %w: %s", base, ErrAdminResponse, resp.Status)
	}
	out := make(chan stock.Event, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev stock.Event
			if json.Unmarshal([]byte(data), &ev) != nil {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
