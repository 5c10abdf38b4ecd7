package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/seckill-lab/seckill/stock"
)

// queue answers GET /admin/queue?goods_id=: the order queue of
// redis-stream (stock.QueueStatus).
func (h *handler) queue(c *gin.Context) {
	h.goodsReport(c, func(ctx context.Context, id int64) (any, error) { return h.Service.QueueStatus(ctx, id) })
}

// orderStatus answers GET /api/v1/orders/:request_id[?goods_id=]: whether
// the order of that request is written to MySQL ("written", with its
// order), accepted and still queued ("accepted", redis-stream: give
// goods_id), or unknown (404 order_not_found).
func (h *handler) orderStatus(c *gin.Context) {
	rid := c.Param("request_id")
	var goods int64
	if v := c.Query("goods_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			fail(c, http.StatusBadRequest, "invalid_field", "goods_id must be a positive integer")
			return
		}
		goods = id
	}
	status, o, err := h.Service.OrderStatus(c.Request.Context(), goods, rid)
	if err != nil {
		h.writeErr(c, stock.OutcomeOf(err), err)
		return
	}
	switch status {
	case "written":
		c.JSON(http.StatusOK, gin.H{"request_id": rid, "status": status, "order_id": o.ID, "goods_id": o.GoodsID, "qty": o.Qty,
			"instance": o.Instance, "strategy": o.Strategy})
	case "accepted":
		c.JSON(http.StatusOK, gin.H{"request_id": rid, "status": status})
	default:
		fail(c, http.StatusNotFound, "order_not_found", "no order for this request id (give goods_id to look in the queue of redis-stream)")
	}
}
