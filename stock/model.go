// Package stock holds the lab's domain: goods and orders, the Store
// contract that keeps them, the purchase outcomes and lock events, the
// strategies, and the Service that runs one purchase under the deduction
// strategy an instance is currently set to. It sees lockimpl's contract
// only: package lockwire opens the lock backends, sqlstore is the
// database, orderstream the Redis stock and order queue, counterstore the
// lock-alone counter.
//
// The unit of work every strategy protects is Chapter 1's reductStock: read
// the stock, check it covers qty, do the (simulated) business work, write
// stock-qty and insert the order. "Oversold" means more units were sold
// than the initial stock; "lost updates" means the stock dropped by less
// than the units sold.
//
// The files, in the order a purchase meets them:
//   - service.go: Service.Purchase, top to bottom: validate, idempotency,
//     protect and deduct, record (and the replay of a key already sold);
//   - setting.go: the current strategy setting and the Lockers it shares;
//   - protect.go: the read-modify-write unprotected or under a lock
//     (acquire, local queue, release), batch.go the same in batches;
//   - store.go: Store and Database, what the Service needs of the keepers
//     of goods, the Deduction it passes, and the pick of a goods' store;
//   - mirror.go, stream.go: redis-atomic's and redis-stream's purchases
//     (Mirror, Queue); events.go: the lock events; reset.go: reset, audit
//     and the order list; queue.go: the local queue;
//   - registry.go, strategy.go: the strategies and their settings.
package stock

import "time"

// Goods is one row of the goods table.
type Goods struct {
	ID           int64  `gorm:"primaryKey;autoIncrement:false"`
	Name         string `gorm:"size:128;not null;default:''"`
	Stock        int64  `gorm:"not null"`
	InitialStock int64  `gorm:"not null;default:0"`
	Version      int64  `gorm:"not null;default:0"`
	Fence        uint64 `gorm:"not null;default:0"`
}

// TableName pins the table name.
func (Goods) TableName() string { return "goods" }

// Order is one row of the orders table: one accepted purchase. Text is
// utf8mb4 with a binary collation: request ids (idempotency keys) and user
// ids compare byte for byte, so "idem-a" and "IDEM-A", or "order-e" and
// "order-é", are different keys. The row is also the request's fingerprint:
// a reused key must come with the same goods, qty and user.
type Order struct {
	ID         int64     `gorm:"primaryKey"`
	GoodsID    int64     `gorm:"not null;index"`
	Qty        int64     `gorm:"not null"`
	UserID     string    `gorm:"type:varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;not null"`
	RequestID  string    `gorm:"type:varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;not null;uniqueIndex"`
	Instance   string    `gorm:"size:64;not null"`
	Strategy   string    `gorm:"size:32;not null"`
	FenceToken uint64    `gorm:"not null;default:0"`
	CreatedAt  time.Time `gorm:"precision:6"`
	// Rule is the per-user rule the order is sold under (peruser.go); it
	// is not stored.
	Rule UserRule `gorm:"-"`
}

// TableName pins the table name.
func (Order) TableName() string { return "orders" }

// Audit is the safety summary of one goods.
type Audit struct {
	GoodsID      int64            `json:"goods_id"`
	InitialStock int64            `json:"initial_stock"`
	Stock        int64            `json:"stock"`
	Orders       int64            `json:"orders"`
	SoldQty      int64            `json:"sold_qty"`
	Oversold     int64            `json:"oversold"`
	LostUpdates  int64            `json:"lost_updates"`
	PerInstance  map[string]int64 `json:"per_instance"`
}

// NewAudit derives Oversold and LostUpdates from the raw counts:
// oversold = max(0, sold - initial), lost = sold - (initial - stock).
func NewAudit(goodsID, initial, stock, orders, sold int64, perInstance map[string]int64) Audit {
	a := Audit{GoodsID: goodsID, InitialStock: initial, Stock: stock, Orders: orders, SoldQty: sold, PerInstance: perInstance}
	if sold > initial {
		a.Oversold = sold - initial
	}
	a.LostUpdates = sold - (initial - stock)
	if a.PerInstance == nil {
		a.PerInstance = map[string]int64{}
	}
	return a
}
