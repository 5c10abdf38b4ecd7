package bench

import (
	"context"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/stock"
)

// SubscribeEvents follows the lock events of the instance at base
// (GET /admin/events, server-sent events) until ctx is done. The channel is
// closed when the stream ends.
func SubscribeEvents(ctx context.Context, base, token string) (<-chan stock.Event, error) {
	return adminclient.New(token).Events(ctx, base)
}
